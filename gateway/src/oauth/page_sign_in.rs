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
//! - A callback is taken once, only within 10 minutes of its start, and only in the browser that
//!   started it (the `state` in its cookie): a code an attacker obtained cannot sign a victim in as
//!   the attacker (login CSRF), and a replayed callback opens nothing.
//! - An `iss` the issuer sends back must be its own (RFC 9207: no mix-up with another issuer).
//! - Neither the code, the verifier, the secret nor the token is logged or shown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
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
/// Started sign-ins kept at most; past it the oldest is dropped.
const MAX_PENDING: usize = 256;

/// The sign-in's settings, its issuer, the page's sessions and the sign-ins under way.
pub struct PageSignIn {
    oauth: Arc<OAuth>,
    settings: PageSignInSettings,
    secret: Option<String>,
    sessions: PageSessions,
    secure_cookies: bool,
    /// By `state`: the PKCE verifier and when the sign-in started.
    pending: Mutex<HashMap<String, (String, Instant)>>,
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
    ) -> Result<Self, String> {
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
            pending: Mutex::default(),
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

    /// Keeps a started sign-in, dropping the expired and, past the cap, the oldest.
    fn remember(&self, state: String, verifier: String) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.retain(|_, (_, started)| started.elapsed() < PENDING_FOR);
        if pending.len() >= MAX_PENDING
            && let Some(oldest) = pending
                .iter()
                .min_by_key(|(_, (_, started))| *started)
                .map(|(state, _)| state.clone())
        {
            pending.remove(&oldest);
        }
        pending.insert(state, (verifier, Instant::now()));
    }

    /// The verifier of the sign-in `state` started, taken (once), if it is under way.
    fn take(&self, state: &str) -> Option<String> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending
            .remove(state)
            .filter(|(_, started)| started.elapsed() < PENDING_FOR)
            .map(|(verifier, _)| verifier)
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
    let (Some(state), Some(verifier)) = (random(), random()) else {
        return told(
            StatusCode::SERVICE_UNAVAILABLE,
            "the operating system's random generator is unavailable",
        );
    };
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
    sign_in.remember(state, verifier);
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
    let refused = |why: &str| (StatusCode::BAD_REQUEST, why.to_owned());
    let state = returned
        .state
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
    let verifier = sign_in
        .take(&state)
        .ok_or_else(|| refused("this sign-in is unknown, used already or older than 10 minutes"))?;
    let issuer = &sign_in.oauth.settings.issuers[sign_in.settings.issuer].issuer;
    if let Some(error) = returned.error {
        return Err((
            StatusCode::UNAUTHORIZED,
            format!(
                "the identity provider did not sign you in ({})",
                error.escape_debug()
            ),
        ));
    }
    if returned.iss.as_ref().is_some_and(|iss| iss != issuer) {
        return Err(refused(
            "the answer names another issuer than the one asked (RFC 9207)",
        ));
    }
    let code = returned
        .code
        .ok_or_else(|| refused("the identity provider sent no code"))?;
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
        ("code", code.as_str()),
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
    let token = answer
        .get("access_token")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| {
            (
                StatusCode::BAD_GATEWAY,
                "the identity provider's answer holds no access token".to_owned(),
            )
        })?;
    let (principal, ends) = sign_in.oauth.verify(token).await.map_err(|why| {
        (
            StatusCode::UNAUTHORIZED,
            format!("the token the identity provider issued is not accepted here: {why}"),
        )
    })?;
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
    tracing::info!(approver = %id.escape_debug(), issuer = %issuer, "signed in to the approval page through the identity provider; the session ends with the token in {left} s");
    Ok(cookie)
}

/// Whether two strings are equal, in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |differ, (x, y)| differ | (x ^ y))
            == 0
}
