//! The `[traces]` table: where OpenTelemetry spans are sent (off unless it is present).

use super::super::TracesSection;
use crate::traces::TracesConfig;

/// `[traces]`, checked: an `http://` or `https://` URL with a host and, if any, a port from 1 to
/// 65535, and no user or password in it (credentials go in `OTEL_EXPORTER_OTLP_HEADERS`); a
/// service name of 1 to 256 bytes without control characters.
pub(super) fn traces(
    section: Option<TracesSection>,
    problem: &mut dyn FnMut(&str, String),
) -> Option<TracesConfig> {
    let section = section?;
    let Some(endpoint) = section.otlp_endpoint else {
        problem(
            "traces.otlp_endpoint",
            "is required in [traces]: the OTLP/HTTP traces endpoint, e.g. \"http://127.0.0.1:4318/v1/traces\"".to_owned(),
        );
        return None;
    };
    if let Err(why) = endpoint_problem(&endpoint) {
        problem("traces.otlp_endpoint", why);
        return None;
    }
    let service_name = section
        .service_name
        .unwrap_or_else(|| "toolgate-mcp-gateway".to_owned());
    if service_name.is_empty()
        || service_name.len() > 256
        || service_name.chars().any(char::is_control)
    {
        problem(
            "traces.service_name",
            "must be 1 to 256 bytes without control characters".to_owned(),
        );
        return None;
    }
    Some(TracesConfig {
        endpoint,
        service_name,
    })
}

/// Why `endpoint` is not a URL the exporter can send to; its text is not repeated (it could hold
/// a password).
fn endpoint_problem(endpoint: &str) -> Result<(), String> {
    let url: http::Uri = endpoint
        .parse()
        .map_err(|error| format!("is not a URL ({error})"))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) {
        return Err("must be an http:// or https:// URL".to_owned());
    }
    let Some(authority) = url.authority() else {
        return Err("names no host".to_owned());
    };
    if authority.as_str().contains('@') {
        return Err(
            "holds a user or password: put credentials in OTEL_EXPORTER_OTLP_HEADERS".to_owned(),
        );
    }
    if authority.host().is_empty() {
        return Err("names no host".to_owned());
    }
    let port = authority.as_str().rsplit_once(':').map(|(_, port)| port);
    let bracketed_host_only = authority.as_str().ends_with(']');
    match (port, bracketed_host_only) {
        (Some(port), false) if port.parse::<u16>().map_or(true, |port| port == 0) => {
            Err("names a port that is not 1 to 65535".to_owned())
        }
        _ => Ok(()),
    }
}
