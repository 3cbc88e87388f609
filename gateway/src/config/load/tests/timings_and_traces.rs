//! Durations named by their own keys, and `[traces]`.

use std::path::Path;

use super::super::parse;
use super::{MINIMAL, problems};

#[test]
fn a_zero_duration_is_named_by_its_own_key() {
    let found = problems(&format!(
        "{MINIMAL}\n[gateway]\npolicy_poll_ms = 0\n[limits]\ncall_timeout_ms = 0\n"
    ));
    assert!(
        found
            .iter()
            .any(|problem| problem.contains("gateway.policy_poll_ms")
                && problem.contains("must be above 0")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|problem| problem.contains("limits.call_timeout_ms")),
        "{found:?}"
    );
    assert!(
        !found
            .iter()
            .any(|problem| problem.contains("limits.policy_poll_ms")),
        "{found:?}"
    );
}

#[test]
fn traces_are_off_unless_configured_and_their_endpoint_is_checked() {
    let config = parse(Path::new("/etc/gw/gateway.toml"), MINIMAL).expect("loads");
    assert!(config.traces.is_none());
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}\n[traces]\notlp_endpoint = \"http://127.0.0.1:4318/v1/traces\"\n"),
    )
    .expect("loads");
    let traces = config.traces.expect("configured");
    assert_eq!(traces.endpoint, "http://127.0.0.1:4318/v1/traces");
    assert_eq!(traces.service_name, "toolgate-mcp-gateway");
    for (table, key) in [
        ("[traces]\n", "traces.otlp_endpoint"),
        (
            "[traces]\notlp_endpoint = \"127.0.0.1:4318\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"http:///v1/traces\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"http://a b/\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"http://user:SECRETPW@otel.example/v1/traces\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"http://h:99999/v1/traces\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"http://h:0/v1/traces\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"http://:80/v1/traces\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"http://[::1/v1/traces\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"ftp://otel.example/\"\n",
            "traces.otlp_endpoint",
        ),
        (
            "[traces]\notlp_endpoint = \"https://otel.example\"\nservice_name = \"\"\n",
            "traces.service_name",
        ),
    ] {
        let found = problems(&format!("{MINIMAL}\n{table}"));
        assert!(
            found.iter().any(|problem| problem.contains(key)),
            "{table}: {found:?}"
        );
    }
    // The endpoint's text is not repeated: it could hold a password.
    let found = problems(&format!(
        "{MINIMAL}\n[traces]\notlp_endpoint = \"http://user:SECRETPW@otel.example/\"\n"
    ));
    assert!(
        !found.iter().any(|problem| problem.contains("SECRETPW")),
        "{found:?}"
    );
    for fine in [
        "http://[::1]:4318/v1/traces",
        "https://otel.example/v1/traces",
        "http://otel.example:4318",
    ] {
        let config = parse(
            Path::new("/etc/gw/gateway.toml"),
            &format!("{MINIMAL}\n[traces]\notlp_endpoint = \"{fine}\"\n"),
        );
        assert!(config.is_ok(), "{fine}: {:?}", config.err());
    }
    let found = problems(&format!("{MINIMAL}\n[traces]\nendpoint = \"http://x\"\n"));
    assert!(
        found.iter().any(|problem| problem.contains("traces")),
        "{found:?}"
    );
}
