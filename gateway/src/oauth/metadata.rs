//! What a client that holds no token is told: the protected-resource metadata (RFC 9728), naming
//! the resource and the authorization servers that issue tokens for it, and the `WWW-Authenticate`
//! challenge of a 401 that points at it (the MCP authorization spec: a client starts from there).

use std::sync::Arc;

use axum::Router;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, header};

use super::settings::OAuthSettings;
pub use super::settings::WELL_KNOWN;

/// The metadata of a tool set's endpoint (`settings` as `OAuthSettings::at` makes them), at its
/// resource's well-known path only (the root one is the main endpoint's).
pub fn route_at(settings: &OAuthSettings) -> Router {
    let body: Arc<str> = document(settings).into();
    Router::new().route(
        &settings.metadata_path,
        axum::routing::get(move || {
            let body = Arc::clone(&body);
            async move { metadata_response(&body) }
        }),
    )
}

/// The metadata document, served with `GET` (no credential needed) at the resource's well-known
/// path and at the root well-known path (clients of earlier revisions of the spec ask there).
pub fn routes(settings: &OAuthSettings) -> Router {
    let body: Arc<str> = document(settings).into();
    let serve = move || {
        let body = Arc::clone(&body);
        async move { metadata_response(&body) }
    };
    let mut router = Router::new().route(WELL_KNOWN, axum::routing::get(serve.clone()));
    if settings.metadata_path != WELL_KNOWN {
        router = router.route(&settings.metadata_path, axum::routing::get(serve));
    }
    router
}

/// RFC 9728 metadata for `settings`' resource.
fn document(settings: &OAuthSettings) -> String {
    let mut document = serde_json::json!({
        "resource": settings.resource,
        "authorization_servers": settings
            .issuers
            .iter()
            .map(|issuer| issuer.issuer.as_str())
            .collect::<Vec<_>>(),
        "bearer_methods_supported": ["header"],
        "resource_name": "toolgate MCP gateway",
    });
    if !settings.scopes.is_empty() {
        document["scopes_supported"] = serde_json::json!(settings.scopes);
    }
    document.to_string()
}

fn metadata_response(body: &str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            // Public, read-only, no credential: a browser-based client may read it from its page.
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        body.to_owned(),
    )
        .into_response()
}

/// The `WWW-Authenticate` value of a 401: `Bearer` with the metadata's URL, the scopes to ask for,
/// and `error="invalid_token"` when a credential was presented and refused (RFC 6750 §3.1).
pub fn challenge(settings: &OAuthSettings, presented: bool) -> HeaderValue {
    let mut value = format!("Bearer resource_metadata=\"{}\"", settings.metadata_url);
    if !settings.scopes.is_empty() {
        value.push_str(&format!(", scope=\"{}\"", settings.scopes.join(" ")));
    }
    if presented {
        value.push_str(", error=\"invalid_token\"");
    }
    // The URL is a serialized URL and the scopes are checked at load: nothing here needs quoting.
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}
