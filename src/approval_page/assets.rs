//! The page itself: static HTML, script and style, compiled into the crate. It holds no data:
//! everything it shows arrives as JSON and is set as text.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// Nothing but the page's own script, style and API; no inline script or style, no framing, no
/// form posting anywhere, no base URL.
pub(super) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

const PAGE: &str = include_str!("assets/page.html");
const SCRIPT: &str = include_str!("assets/page.js");
const STYLE: &str = include_str!("assets/page.css");

pub(super) async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE).into_response()
}

pub(super) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

pub(super) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}
