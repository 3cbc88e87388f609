//! Approvers sign in to the approval page at the issuer (`[oauth.page]`): the authorization code
//! flow with PKCE (RFC 7636, S256) on the admin listener. The page links to
//! `/approvals/oauth/start`, which sends the browser to the issuer with a fresh `state` (also set
//! in a cookie of this browser) and code challenge; the issuer sends it back to
//! `/approvals/oauth/callback`, where the code is exchanged (with the verifier, and the client's
//! secret if configured) for an access token for the gateway's resource. That token is checked
//! exactly as an MCP client's is — issuer, key, audience, expiry, claims — and names the
//! approver; the page session ends when the token does.
//!
//! # Guarantees
//!
//! - A callback is taken once, only within 10 minutes of its start, only with a `state` this
//!   gateway issued (a keyed digest of its own), and only in the browser that started it (the
//!   `state` in its cookie): a code an attacker obtained cannot sign a victim in as the attacker
//!   (login CSRF), and a replayed callback opens nothing.
//! - Nothing is kept on the server for a sign-in under way: the PKCE verifier is a keyed digest
//!   of the `state` (a secret of this process), so no flood of started sign-ins crowds out a
//!   person's.
//! - An `iss` the issuer sends back must be its own, and is required when the issuer says it
//!   sends one (RFC 9207: no mix-up with another issuer).
//! - The signed-in principal is the access token's, checked as an MCP client's, and never one of
//!   a `[[clients]]` entry (one principal, one source).
//! - Neither the code, the verifier, the secret nor the token is logged or shown.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use sha2::{Digest as _, Sha256};
use toolgate::approval_page::PageSessions;

use super::OAuth;
use super::settings::PageSignInSettings;

/// Where the page's sign-in link leads.
pub const START_PATH: &str = "/approvals/oauth/start";
/// Where the issuer sends the person back (`oauth.page.redirect_url` ends in it).
pub const CALLBACK_PATH: &str = "/approvals/oauth/callback";
/// How long a started sign-in may take.
const PENDING_FOR: Duration = Duration::from_secs(600);
/// Callbacks remembered as used (within `PENDING_FOR`); past it the oldest is forgotten — the
/// issuer takes each code once all the same (OAuth 2.1 §4.1.3).
const MAX_USED: usize = 4096;

/// The sign-in's settings, its issuer, the page's sessions and the sign-ins under way.
pub struct PageSignIn {
    oauth: Arc<OAuth>,
    settings: PageSignInSettings,
    secret: Option<String>,
    sessions: PageSessions,
    secure_cookies: bool,
    /// Keys the `state`s this process issues and the PKCE verifiers derived from them.
    key: [u8; 32],
    /// The `state`s whose callback was taken, and when.
    used: Mutex<HashMap<String, Instant>>,
    /// Every `[[clients]]` id: no one signs in here as an API-key client's principal.
    client_ids: HashSet<String>,
}

impl PageSignIn {
    /// The sign-in `settings` describe; the client's secret read from its variable.
    ///
    /// # Errors
    ///
    /// The secret's variable is named but not set.
    pub fn new(
        oauth: Arc<OAuth>,
        settings: PageSignInSettings,
        sessions: PageSessions,
        secure_cookies: bool,
        client_ids: HashSet<String>,
    ) -> Result<Self, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)
            .map_err(|error| format!("oauth.page: no randomness from the OS: {error}"))?;
        let secret = match &settings.client_secret_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                format!(
                    "oauth.page.client_secret_env: the variable {var} is not set (or not UTF-8)"
                )
            })?),
            None => None,
        };
        Ok(Self {
            oauth,
            settings,
            secret,
            sessions,
            secure_cookies,
            key,
            used: Mutex::default(),
            client_ids,
        })
    }

    /// The two routes.
    pub fn routes(self: Arc<Self>) -> Router {
        Router::new()
            .route(START_PATH, axum::routing::get(start))
            .route(CALLBACK_PATH, axum::routing::get(callback))
            .with_state(self)
    }

    fn state_cookie_name(&self) -> &'static str {
        if self.secure_cookies {
            "__Host-toolgate_oauth_state"
        } else {
            "toolgate_oauth_state"
        }
    }

    /// The cookie tying a started sign-in to this browser (`Lax`: the issuer's redirect back is
    /// a top-level navigation from another site, which `Strict` would not send it with).
    fn state_cookie(&self, state: &str, max_age_s: u64) -> String {
        let name = self.state_cookie_name();
        if self.secure_cookies {
            format!("{name}={state}; HttpOnly; SameSite=Lax; Secure; Path=/; Max-Age={max_age_s}")
        } else {
            format!(
                "{name}={state}; HttpOnly; SameSite=Lax; Path=/approvals/oauth; Max-Age={max_age_s}"
            )
        }
    }

    /// A keyed digest of `parts`, base64url (43 characters).
    fn keyed(&self, parts: &[&str]) -> String {
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        for part in parts {
            mac.update(part.as_bytes());
            mac.update(b"\n");
        }
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// A new `state`: when it was issued, a random part, and a keyed digest of both.
    fn new_state(&self) -> Option<String> {
        let issued = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_secs()
            .to_string();
        let nonce = random()?;
        let tag = self.keyed(&["state", &issued, &nonce]);
        Some(format!("{issued}.{nonce}.{tag}"))
    }

    /// The PKCE verifier of `state` (RFC 7636: 43 characters of the unreserved set).
    fn verifier(&self, state: &str) -> String {
        self.keyed(&["pkce", state])
    }

    /// Whether `state` is one this process issued less than `PENDING_FOR` ago.
    fn issued_here(&self, state: &str) -> bool {
        let mut parts = state.splitn(3, '.');
        let (Some(issued), Some(nonce), Some(tag)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let Ok(at) = issued.parse::<u64>() else {
            return false;
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        same(tag, &self.keyed(&["state", issued, nonce]))
            && at <= now + 60
            && now.saturating_sub(at) < PENDING_FOR.as_secs()
    }

    /// Marks `state`'s callback taken; `false` if it was already.
    fn take(&self, state: &str) -> bool {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.retain(|_, at| at.elapsed() < PENDING_FOR);
        if used.contains_key(state) {
            return false;
        }
        if used.len() >= MAX_USED
            && let Some(oldest) = used
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(state, _)| state.clone())
        {
            used.remove(&oldest);
        }
        used.insert(state.to_owned(), Instant::now());
        true
    }
}

/// 32 bytes of OS randomness, base64url without padding (43 characters).
fn random() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// A plain-text answer: what happened and what to do (never markup, never a secret).
fn told(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{message}\n"),
    )
        .into_response()
}

async fn start(State(sign_in): State<Arc<PageSignIn>>) -> Response {
    let keyring = sign_in.oauth.keyring(sign_in.settings.issuer);
    if keyring.endpoints().is_none() {
        keyring.refetch().await;
    }
    let Some(authorization) = keyring
        .endpoints()
        .and_then(|endpoints| endpoints.authorization)
    else {
        return told(
            StatusCode::SERVICE_UNAVAILABLE,
            "the identity provider's metadata (its authorization endpoint) could not be read: the gateway's log says why; try again shortly",
        );
    };
    let Some(state) = sign_in.new_state() else {
        return told(
            StatusCode::SERVICE_UNAVAILABLE,
            "the operating system's random generator is unavailable",
        );
    };
    let verifier = sign_in.verifier(&state);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let settings = &sign_in.settings;
    let mut url = authorization;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &settings.client_id)
        .append_pair("redirect_uri", &settings.redirect_url)
        .append_pair("scope", &settings.scopes.join(" "))
        .append_pair("state", &state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        // RFC 8707: a token for this gateway, checked as an MCP client's is.
        .append_pair("resource", &sign_in.oauth.settings.resource);
    let cookie = sign_in.state_cookie(&state, PENDING_FOR.as_secs());
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let (Ok(location), Ok(cookie)) = (
        HeaderValue::from_str(url.as_str()),
        HeaderValue::from_str(&cookie),
    ) {
        headers.insert(header::LOCATION, location);
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}

/// What the issuer sends back.
#[derive(Default)]
struct Returned {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
}

impl Returned {
    /// The parameters of the callback's query; a parameter given twice is refused (which one
    /// counts would be a guess).
    fn of(uri: &http::Uri) -> Result<Self, String> {
        let mut returned = Self::default();
        let query = uri.query().unwrap_or("");
        let url = reqwest::Url::parse(&format!("http://callback.invalid/?{query}"))
            .map_err(|error| error.to_string())?;
        for (name, value) in url.query_pairs() {
            let slot = match name.as_ref() {
                "code" => &mut returned.code,
                "state" => &mut returned.state,
                "iss" => &mut returned.iss,
                "error" => &mut returned.error,
                _ => continue,
            };
            if slot.replace(value.into_owned()).is_some() {
                return Err(format!("the parameter {name} came twice"));
            }
        }
        Ok(returned)
    }
}

async fn callback(
    State(sign_in): State<Arc<PageSignIn>>,
    uri: http::Uri,
    headers: HeaderMap,
) -> Response {
    let returned = match Returned::of(&uri) {
        Ok(returned) => returned,
        Err(why) => return told(StatusCode::BAD_REQUEST, &why),
    };
    match signed_in(&sign_in, returned, &headers).await {
        Ok(cookie) => {
            let mut response = StatusCode::SEE_OTHER.into_response();
            let headers = response.headers_mut();
            headers.insert(header::LOCATION, HeaderValue::from_static("/approvals"));
            if let Ok(cookie) = HeaderValue::from_str(&cookie) {
                headers.append(header::SET_COOKIE, cookie);
            }
            if let Ok(cleared) = HeaderValue::from_str(&sign_in.state_cookie("", 0)) {
                headers.append(header::SET_COOKIE, cleared);
            }
            response
        }
        Err((status, why)) => {
            tracing::warn!(
                "a sign-in to the approval page through the identity provider was refused: {}",
                why.escape_debug()
            );
            told(
                status,
                &format!("{why}. Start again from the approval page."),
            )
        }
    }
}

/// The page session's cookie for whoever the issuer signed in, or why not.
async fn signed_in(
    sign_in: &PageSignIn,
    returned: Returned,
    headers: &HeaderMap,
) -> Result<String, (StatusCode, String)> {
    let state = callback_for_this_browser(sign_in, &returned, headers)?;
    // Taken only now: an answer refused above (a stripped `iss`) does not use the sign-in up.
    if !sign_in.take(&state) {
        return Err(refused("this sign-in was used already"));
    }
    if let Some(error) = returned.error {
        return Err((
            StatusCode::UNAUTHORIZED,
            format!(
                "the identity provider did not sign you in ({})",
                error.escape_debug()
            ),
        ));
    }
    let code = returned
        .code
        .ok_or_else(|| refused("the identity provider sent no code"))?;
    let token = exchange_code(sign_in, &state, &code).await?;
    let (principal, ends) = sign_in.oauth.verify(&token).await.map_err(|why| {
        (
            StatusCode::UNAUTHORIZED,
            format!("the token the identity provider issued is not accepted here: {why}"),
        )
    })?;
    if sign_in.client_ids.contains(&principal.id) {
        return Err((
            StatusCode::UNAUTHORIZED,
            format!(
                "the provider's account names {:?}, the id of a [[clients]] entry: give the issuer an id_prefix",
                principal.id
            ),
        ));
    }
    let id = principal.id.clone();
    let cookie = sign_in
        .sessions
        .open(principal, Some(ends))
        .ok_or_else(|| {
            (
                StatusCode::UNAUTHORIZED,
                "the token has already expired".to_owned(),
            )
        })?;
    let left = ends
        .duration_since(SystemTime::now())
        .unwrap_or_default()
        .as_secs();
    let issuer = &sign_in.oauth.settings.issuers[sign_in.settings.issuer].issuer;
    tracing::info!(approver = %id.escape_debug(), issuer = %issuer, "signed in to the approval page through the identity provider; the session ends with the token in {left} s");
    Ok(cookie)
}

fn refused(why: &str) -> (StatusCode, String) {
    (StatusCode::BAD_REQUEST, why.to_owned())
}

/// The state of a callback that answers a sign-in this process started, in this browser, from
/// the issuer it was sent to (RFC 9207); the sign-in is not used up.
fn callback_for_this_browser(
    sign_in: &PageSignIn,
    returned: &Returned,
    headers: &HeaderMap,
) -> Result<String, (StatusCode, String)> {
    let state = returned
        .state
        .clone()
        .ok_or_else(|| refused("the identity provider sent no state"))?;
    let name = sign_in.state_cookie_name();
    let cookies: Vec<&str> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key.trim() == name).then_some(value.trim())
        })
        .collect();
    // Exactly one state cookie, and the one this callback names.
    if cookies.len() != 1 || !same(cookies[0], &state) {
        return Err(refused("this sign-in was not started in this browser"));
    }
    if !sign_in.issued_here(&state) {
        return Err(refused(
            "this sign-in was not started here or is older than 10 minutes",
        ));
    }
    let issuer = &sign_in.oauth.settings.issuers[sign_in.settings.issuer].issuer;
    let iss_promised = sign_in
        .oauth
        .keyring(sign_in.settings.issuer)
        .endpoints()
        .is_some_and(|endpoints| endpoints.iss_parameter);
    match &returned.iss {
        Some(iss) if iss != issuer => Err(refused(
            "the answer names another issuer than the one asked (RFC 9207)",
        )),
        None if iss_promised => Err(refused(
            "the answer names no issuer, though this issuer says it always does (RFC 9207)",
        )),
        _ => Ok(state),
    }
}

/// The access token the provider's token endpoint gives for `code`, with the PKCE verifier
/// derived from `state` and the resource (RFC 8707).
async fn exchange_code(
    sign_in: &PageSignIn,
    state: &str,
    code: &str,
) -> Result<String, (StatusCode, String)> {
    let verifier = sign_in.verifier(state);
    let keyring = sign_in.oauth.keyring(sign_in.settings.issuer);
    let token_endpoint = keyring
        .endpoints()
        .and_then(|endpoints| endpoints.token)
        .ok_or_else(|| {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the identity provider's token endpoint is unknown".to_owned(),
            )
        })?;
    let settings = &sign_in.settings;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", settings.redirect_url.as_str()),
        ("code_verifier", verifier.as_str()),
        ("client_id", settings.client_id.as_str()),
        ("resource", sign_in.oauth.settings.resource.as_str()),
    ];
    let basic = sign_in
        .secret
        .as_deref()
        .map(|secret| (settings.client_id.as_str(), secret));
    let answer = keyring
        .post_form(&token_endpoint, &form, basic)
        .await
        .map_err(|why| {
            (
                StatusCode::BAD_GATEWAY,
                format!("the identity provider did not exchange the code: {why}"),
            )
        })?;
    answer
        .get("access_token")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            (
                StatusCode::BAD_GATEWAY,
                "the identity provider's answer holds no access token".to_owned(),
            )
        })
}

/// Whether two strings are equal, in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |differ, (x, y)| differ | (x ^ y))
            == 0
}
