//! Whether a request comes from the page's own host: the `Host` and `Origin` checks that keep
//! another site (DNS rebinding, a cross-site form) from driving the page.

use axum::http::{HeaderMap, header};

/// Whether a `Host` header names `allowed`: the whole header (`host:port`), or its host alone
/// (`127.0.0.1`, `::1` for `[::1]:9090`), compared without regard to ASCII case. For a server
/// that serves other routes beside the page and checks their `Host` the same way.
pub fn host_is(header: &str, allowed: &str) -> bool {
    if header.eq_ignore_ascii_case(allowed) {
        return true;
    }
    let host = match header.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => header.rsplit_once(':').map_or(header, |(host, _)| host),
    };
    !host.is_empty() && host.eq_ignore_ascii_case(allowed)
}

/// A request without an `Origin` header (not sent by a browser for this) passes; one with an
/// origin passes only if it is this host's.
pub(super) fn same_origin(headers: &HeaderMap, host: &str) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let origin = origin.to_str().unwrap_or("");
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|rest| rest == host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_host_matches_whole_or_without_its_port_and_nothing_else() {
        assert!(host_is("127.0.0.1:9090", "127.0.0.1"));
        assert!(host_is("127.0.0.1:9090", "127.0.0.1:9090"));
        assert!(host_is("LOCALHOST:1", "localhost"));
        assert!(host_is("[::1]:9090", "::1"));
        assert!(!host_is("127.0.0.1.evil.example:80", "127.0.0.1"));
        assert!(!host_is("evil.example", "127.0.0.1"));
        assert!(!host_is("127.0.0.1:9090", "127.0.0.1:9091"));
        assert!(!host_is("", "127.0.0.1"));
        let mut headers = HeaderMap::new();
        assert!(
            same_origin(&headers, "h:1"),
            "no Origin: not a browser's cross-site request"
        );
        headers.insert(header::ORIGIN, HeaderValue::from_static("http://h:1"));
        assert!(same_origin(&headers, "h:1"));
        assert!(!same_origin(&headers, "h:2"));
        headers.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_origin(&headers, "h:1"));
    }
}
