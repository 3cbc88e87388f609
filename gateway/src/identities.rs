//! Who a bearer credential names: an API key of `[[clients]]` (by the SHA-256 of the key), else
//! an access token of an `[oauth]` issuer, else a token `[jwt]` verifies — and never a token
//! naming the principal of an API-key client (one principal, one source of identity).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};
use toolgate::Principal;

use crate::config::ApiClient;
use crate::jwt::JwtConfig;
use crate::oauth::OAuth;

/// Who may call: clients by the SHA-256 of their key, and tokens if configured.
#[derive(Debug)]
pub struct Keys {
    clients: HashMap<[u8; 32], Arc<Principal>>,
    /// Every `[[clients]]` id (also of clients that may not sign in here): no token may name one.
    client_ids: HashSet<String>,
    jwt: Option<JwtConfig>,
    oauth: Option<Arc<OAuth>>,
    /// The `[oauth]` issuers' `id_prefix`es: no `[jwt]` token may name an id starting with one
    /// (its ids are bare `sub`s, and `corp:alice` would be the issuer's `alice`).
    oauth_prefixes: Vec<String>,
    /// The resource `[oauth]` tokens must be for here, when not the configured one (a tool
    /// set's endpoint).
    resource: Option<String>,
}

/// A credential's principal and when the credential ends (a token's `exp`; `None` for an API key,
/// which has no end of its own).
type SignedIn = (Arc<Principal>, Option<SystemTime>);

impl Keys {
    /// The identities of a config: its `[[clients]]`, its `[jwt]` and its `[oauth]` issuers.
    pub fn new(clients: &[ApiClient], jwt: Option<JwtConfig>, oauth: Option<Arc<OAuth>>) -> Self {
        Self {
            clients: clients
                .iter()
                .map(|client| (client.key_sha256, Arc::new(client.principal.clone())))
                .collect(),
            client_ids: clients
                .iter()
                .map(|client| client.principal.id.clone())
                .collect(),
            jwt,
            oauth_prefixes: oauth
                .iter()
                .flat_map(|oauth| &oauth.settings.issuers)
                .map(|issuer| issuer.claims.id_prefix.clone())
                .filter(|prefix| !prefix.is_empty())
                .collect(),
            oauth,
            resource: None,
        }
    }

    /// The same identities at an endpoint whose resource is `resource` (a tool set's; `None`:
    /// the configured one): an `[oauth]` token must have been issued for it.
    #[must_use]
    pub fn at_resource(mut self, resource: Option<String>) -> Self {
        self.resource = resource;
        self
    }

    /// The identities that sign a person in to the approval page: the clients not marked
    /// `page_sign_in = false`, and tokens.
    pub fn for_the_page(
        clients: &[ApiClient],
        jwt: Option<JwtConfig>,
        oauth: Option<Arc<OAuth>>,
    ) -> Self {
        let mut keys = Self::new(clients, jwt, oauth);
        keys.clients.retain(|hash, _| {
            clients
                .iter()
                .any(|client| client.page_sign_in && client.key_sha256 == *hash)
        });
        keys
    }

    /// The principal `credential` names and when it ends, checking a token against the keys
    /// held now (an `[oauth]` token naming a key not held yet is refused).
    pub fn principal_until(&self, credential: &str) -> Option<SignedIn> {
        self.by_key(credential).or_else(|| {
            let oauth = self
                .oauth
                .as_ref()
                .map(|oauth| oauth.verify_held_at(credential, self.resource.as_deref()));
            self.by_token(credential, oauth)
        })
    }

    /// The principal `credential` names and when it ends; an `[oauth]` token naming a key its
    /// issuer is not known to publish (or an issuer whose keys are stale) has the keys fetched
    /// again first, at most once per `keys_refetch_min_s`.
    pub async fn principal_fetching(&self, credential: &str) -> Option<SignedIn> {
        if let Some(signed_in) = self.by_key(credential) {
            return Some(signed_in);
        }
        let oauth = match &self.oauth {
            Some(oauth) => Some(oauth.verify_at(credential, self.resource.as_deref()).await),
            None => None,
        };
        self.by_token(credential, oauth)
    }

    fn by_key(&self, credential: &str) -> Option<SignedIn> {
        let hash = <[u8; 32]>::from(Sha256::digest(credential.as_bytes()));
        self.clients
            .get(&hash)
            .map(|principal| (Arc::clone(principal), None))
    }

    /// A token: what `[oauth]` said of it (`oauth`), else what `[jwt]` says.
    fn by_token(
        &self,
        credential: &str,
        oauth: Option<Result<(Principal, SystemTime), String>>,
    ) -> Option<SignedIn> {
        let mut refusals = Vec::new();
        // `[jwt]` is asked only if `[oauth]` did not accept the token.
        let jwt = std::iter::once_with(|| {
            self.jwt
                .as_ref()
                .map(|jwt| ("[jwt]", jwt.verify(credential)))
        })
        .flatten();
        let verified = oauth.map(|oauth| ("[oauth]", oauth)).into_iter().chain(jwt);
        for (source, verified) in verified {
            match verified {
                // One principal, one source: a token may not speak for an API-key client.
                Ok((principal, _)) if self.client_ids.contains(&principal.id) => {
                    refusals.push(format!(
                        "{source}: the token names {:?}, the id of a [[clients]] entry (give the issuer an id_prefix)",
                        principal.id
                    ));
                }
                // Nor may a `[jwt]` token speak for an `[oauth]` issuer's principal (an
                // independent attack: `sub: "corp:alice"` joined her sessions and approved as her).
                Ok((principal, _))
                    if source == "[jwt]"
                        && let Some(prefix) = self
                            .oauth_prefixes
                            .iter()
                            .find(|prefix| principal.id.starts_with(prefix.as_str())) =>
                {
                    refusals.push(format!(
                        "{source}: the token names {:?}, which starts with the id_prefix {prefix:?} of an [oauth] issuer",
                        principal.id
                    ));
                }
                Ok((principal, expires)) => return Some((Arc::new(principal), Some(expires))),
                Err(why) => refusals.push(format!("{source}: {why}")),
            }
        }
        if !refusals.is_empty() {
            // Escaped: a reason may quote the token's own header (an unknown `alg`) or issuer,
            // and a line break there would forge a log line.
            let why = refusals.join("; ");
            tracing::info!("a bearer token was refused: {}", why.escape_debug());
        }
        None
    }
}

#[cfg(test)]
mod tests;
