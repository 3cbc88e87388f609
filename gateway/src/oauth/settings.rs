//! What `[oauth]` configures, checked (see `config/load/oauth_section.rs`).

use std::time::Duration;

use crate::jwt::ClaimMap;

/// The root well-known path of the protected-resource metadata; RFC 9728 §3.1 puts the
/// resource's own path after it.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The gateway as an OAuth 2.1 resource server.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    /// The URL clients reach the MCP endpoint at (`oauth.resource`): the `resource` of the
    /// protected-resource metadata and, unless an issuer names another, the audience tokens must
    /// be issued for (RFC 8707).
    pub resource: String,
    /// Where the metadata is served on the MCP listener: `/.well-known/oauth-protected-resource`
    /// followed by the resource's path (RFC 9728 §3.1).
    pub metadata_path: String,
    /// The metadata's full URL, as `WWW-Authenticate` names it.
    pub metadata_url: String,
    /// The scopes clients are told to ask for (`oauth.scopes`); empty: none named.
    pub scopes: Vec<String>,
    /// The authorization servers whose tokens are accepted.
    pub issuers: Vec<IssuerSettings>,
    /// Approvers sign in to the approval page at one of them (`[oauth.page]`), if configured.
    pub page: Option<PageSignInSettings>,
}

/// `[oauth.page]`: the approval page signs people in at an issuer (authorization code with
/// PKCE), as the client `client_id`.
#[derive(Debug, Clone)]
pub struct PageSignInSettings {
    /// Which of `issuers` (its index).
    pub issuer: usize,
    pub client_id: String,
    /// The variable holding the client's secret; `None`: a public client (PKCE alone).
    pub client_secret_env: Option<String>,
    /// Where the issuer sends the person back: the admin listener's
    /// `/approvals/oauth/callback`, as the browser reaches it.
    pub redirect_url: String,
    /// The scopes asked for.
    pub scopes: Vec<String>,
    /// What the page's sign-in link says.
    pub label: String,
    /// Whether the page still takes a typed API key or token.
    pub credential_sign_in: bool,
}

impl OAuthSettings {
    /// The same settings for the MCP endpoint at `path` (a tool set's `/sets/NAME/mcp`): its
    /// resource is `resource` with its final `/mcp` replaced by `path`, with the metadata at that
    /// resource's well-known place.
    pub fn at(&self, path: &str) -> Self {
        let trimmed = self.resource.trim_end_matches('/');
        let stem = trimmed.strip_suffix("/mcp").unwrap_or(trimmed);
        let resource = format!("{stem}{path}");
        let (metadata_path, metadata_url) = match reqwest::Url::parse(&resource) {
            Ok(url) => {
                let path = format!("{WELL_KNOWN}{}", url.path());
                let full = format!("{}{path}", url.origin().ascii_serialization());
                (path, full)
            }
            Err(_) => (self.metadata_path.clone(), self.metadata_url.clone()),
        };
        Self {
            resource,
            metadata_path,
            metadata_url,
            ..self.clone()
        }
    }
}

/// One `[[oauth.issuers]]`.
#[derive(Debug, Clone)]
pub struct IssuerSettings {
    /// The issuer identifier, exactly as its tokens' `iss` and its discovery document say it.
    pub issuer: String,
    /// The `aud` its tokens must hold.
    pub audience: String,
    /// Whether `audience` is the resource (not configured): then a tool set's path takes its
    /// own resource as the audience, so a token for one path works at no other.
    pub audience_from_resource: bool,
    /// Which claims name the principal.
    pub claims: ClaimMap,
    /// Seconds of clock skew allowed on `exp` and `nbf`.
    pub leeway_s: u64,
    /// How often its keys are fetched again.
    pub refresh: Duration,
    /// Keys not fetched again within this long are not used: its tokens are refused until a
    /// fetch succeeds.
    pub max_age: Duration,
    /// The least time between two fetches a token with an unknown `kid` may cause.
    pub refetch_min: Duration,
}
