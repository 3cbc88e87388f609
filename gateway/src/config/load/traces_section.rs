//! The `[traces]` table: where OpenTelemetry spans are sent (off unless it is present).

use super::super::TracesSection;
use crate::traces::TracesConfig;

/// `[traces]`, checked: an `http://` or `https://` endpoint with a host, and a service name of
/// 1 to 256 printable characters.
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
    let host = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
        .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or(""));
    if host.is_none_or(str::is_empty) || endpoint.chars().any(char::is_whitespace) {
        problem(
            "traces.otlp_endpoint",
            format!("{endpoint:?} is not an http:// or https:// URL with a host"),
        );
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
