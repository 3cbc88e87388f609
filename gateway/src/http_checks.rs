//! Header checks of the two listeners, before anything else reads a request: the `Host` of the
//! admin listener (DNS rebinding: a page on a name that resolves to loopback must not read
//! `/metrics` or drive the approval page), a browser's `Origin` on `/mcp` (the Streamable HTTP
//! transport says a server MUST refuse an invalid one with 403), and the bearer credential of an
//! `Authorization` header (the scheme name is case-insensitive, RFC 9110 §11.1).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};

/// The `Host` values the admin listener answers (`listen.allowed_hosts`).
#[derive(Debug, Clone)]
pub struct AllowedHosts(pub Arc<Vec<String>>);

/// 403 unless the request's `Host` is one of the allowed hosts (with or without its port).
pub async fn admin_host(
    State(allowed): State<AllowedHosts>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if allowed
        .0
        .iter()
        .any(|allowed| toolgate::approval_page::host_is(host, allowed))
    {
        return next.run(request).await;
    }
    (
        StatusCode::FORBIDDEN,
        "403: this Host is not one the gateway serves (listen.allowed_hosts)\n",
    )
        .into_response()
}

/// Every refusal (a 4xx answer) says the connection ends with it (`Connection: close`). Most
/// answer before the request's body is read (a 401, a 403 for an origin, a 404 for a path, a 413
/// read in part), which ends the connection anyway, unsaid: a client sending its next request at
/// once on it meets it closing ("server disconnected without sending a response" — the Python
/// SDK's OAuth client, sending its discovery right after a 401, on a loaded machine). Said for
/// every refusal, whichever layer answers it, rather than by each: a refusal is rare, and a
/// new connection for the next request costs a handshake.
pub async fn refusals_close(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    if response.status().is_client_error() {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// With no `listen.allowed_origins`, no browser page may call `/mcp`: a request carrying an
/// `Origin` gets 403 (clients that are not browsers send none). With a list, the SDK checks the
/// origin against it, and this passes everything on.
pub async fn no_browser_origin(request: Request, next: Next) -> Response {
    if request.headers().contains_key(header::ORIGIN) {
        return (
            StatusCode::FORBIDDEN,
            "403: requests from a browser page are refused: list its origin in listen.allowed_origins to let it call\n",
        )
            .into_response();
    }
    next.run(request).await
}

/// The credential of `Authorization: Bearer CREDENTIAL`, the scheme in any case and the
/// credential after one or more spaces; `None` for any other scheme or a header given twice.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        // Two credentials: which one counts is not for a parser to guess.
        return None;
    }
    let value = value.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let credential = credential.trim_matches(' ');
    (!credential.is_empty()).then_some(credential)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn the_bearer_scheme_is_read_in_any_case_and_nothing_else_is_a_bearer() {
        let read = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            }
            bearer(&headers).map(str::to_owned)
        };
        for spelled in [
            "Bearer k",
            "bearer k",
            "BEARER k",
            "bEaReR k",
            "Bearer   k",
            "Bearer k ",
        ] {
            assert_eq!(read(&[spelled]).as_deref(), Some("k"), "{spelled:?}");
        }
        for refused in [
            "Basic k",
            "Bearerk",
            "Bearer",
            "Bearer ",
            "Token k",
            "Bearer\tk",
            " Bearer k",
            "Bear k",
        ] {
            assert_eq!(read(&[refused]), None, "{refused:?}");
        }
        assert_eq!(read(&[]), None);
        assert_eq!(read(&["Bearer a", "Bearer b"]), None, "two credentials");
    }
}
