//! The gateway's log: on stderr, at the level `TOOLGATE_LOG` names (`info` by default), coloured
//! only on a terminal, as JSON lines with `TOOLGATE_LOG_FORMAT=json`.
//!
//! The libraries under the gateway log what they carry at their debug and trace levels — the MCP
//! SDK every message whole, arguments and results included. Their targets stay at `warn` whatever
//! level `TOOLGATE_LOG` gives, unless it names them (`TOOLGATE_LOG=debug,rmcp=debug`): a level
//! meant for the gateway's own lines never writes a call's arguments. A span filter naming no
//! target (`[serve_inner]=debug`) applies to the gateway's own lines.

use std::io::IsTerminal as _;

/// The targets kept at `warn` unless `TOOLGATE_LOG` names them.
const QUIET_TARGETS: &[&str] = &[
    "rmcp",
    "hyper",
    "hyper_util",
    "h2",
    "reqwest",
    "tower",
    "tower_http",
    "axum",
    "postgres",
    "tokio_postgres",
    "rusqlite",
    "jsonwebtoken",
    "rustls",
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry_otlp",
];

/// The filter directives for `requested` (the value of `TOOLGATE_LOG`, if set).
fn directives(requested: Option<&str>) -> String {
    let requested = requested
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .unwrap_or("info");
    let named = |target: &str| {
        requested.split(',').any(|directive| {
            let name = directive.split(['=', '[']).next().unwrap_or("").trim();
            name == target || name.starts_with(&format!("{target}::"))
        })
    };
    let mut directives: Vec<String> = QUIET_TARGETS
        .iter()
        .filter(|target| !named(target))
        .map(|target| format!("{target}=warn"))
        .collect();
    // The SDK warns of every error answer with the answer whole, and an answer to
    // `resources/read` or `prompts/get` carries the upstream's reason, which may quote what was
    // asked: the gateway says what it refused in its own lines.
    if !named("rmcp") && !named("rmcp::service") {
        directives.push("rmcp::service=error".to_owned());
    }
    // The spans the traces exporter reads are not log lines (a log line would carry their names
    // and ids before every message of the call).
    for target in [crate::traces::LIBRARY_TARGET, crate::traces::TARGET] {
        if !named(target) {
            directives.push(format!("{target}=off"));
        }
    }
    // A span filter naming no target (`[serve_inner]=debug`) enables every event inside the
    // span, whatever its target — the SDK's, which writes messages whole, among them (an
    // independent attack): it applies to the gateway's own lines, and a library's lines in a
    // span are asked for by naming the library (`rmcp[serve_inner]=debug`).
    directives.extend(requested.split(',').map(|directive| {
        if directive.trim_start().starts_with('[') {
            format!("{OWN_TARGET}{}", directive.trim_start())
        } else {
            directive.to_owned()
        }
    }));
    directives.join(",")
}

/// The gateway's own lines' target.
const OWN_TARGET: &str = "toolgate_mcp_gateway";

/// Installs the log for this process, and the traces exporter's layer when one was started.
pub fn init(traces: Option<crate::traces::TracesLayer>) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let requested = std::env::var("TOOLGATE_LOG").ok();
    let filter = tracing_subscriber::EnvFilter::try_new(directives(requested.as_deref()))
        .unwrap_or_else(|error| {
            eprintln!(
                "toolgate-mcp-gateway: TOOLGATE_LOG is not a filter ({error}); logging at info"
            );
            tracing_subscriber::EnvFilter::new(directives(None))
        });
    let json = std::env::var("TOOLGATE_LOG_FORMAT").is_ok_and(|format| format == "json");
    // Without an exporter there is no traces layer at all: an absent (`None`) layer declares an
    // interest in every callsite, so every span and every debug event of the SDK beneath would
    // be built and filtered on each call, for nothing.
    match traces {
        Some(traces) => tracing_subscriber::registry()
            .with(traces)
            .with(lines(json, filter))
            .init(),
        None => tracing_subscriber::registry()
            .with(lines(json, filter))
            .init(),
    }
}

/// The log's lines on stderr, as `filter` lets through: JSON when `json`, else text (coloured
/// on a terminal).
fn lines<S>(
    json: bool,
    filter: tracing_subscriber::EnvFilter,
) -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false);
    if json {
        lines.json().with_ansi(false).with_filter(filter).boxed()
    } else {
        lines
            .with_ansi(std::io::stderr().is_terminal())
            .with_filter(filter)
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::directives;

    #[test]
    fn library_targets_stay_at_warn_unless_named() {
        let all = directives(Some("debug"));
        assert!(all.starts_with("rmcp=warn,hyper=warn,"), "{all}");
        assert!(all.ends_with(",debug"), "{all}");
        assert!(directives(None).ends_with(",info"));
        assert!(directives(Some("  ")).ends_with(",info"));
        for spelled in [
            "debug,rmcp=debug",
            "rmcp=trace",
            "rmcp::transport=debug",
            "rmcp[span]=debug",
        ] {
            let named = directives(Some(spelled));
            assert!(!named.contains("rmcp=warn"), "{spelled}: {named}");
            assert!(named.contains("hyper=warn"), "{spelled}: {named}");
        }
        // A span filter naming no target is the gateway's own: the SDK's lines in the span stay
        // at `warn`.
        let spanned = directives(Some("info,[serve_inner]=debug"));
        assert!(spanned.contains("rmcp=warn"), "{spanned}");
        assert!(
            spanned.ends_with(",info,toolgate_mcp_gateway[serve_inner]=debug"),
            "{spanned}"
        );
        assert!(directives(Some(" [{id}]=trace")).ends_with(",toolgate_mcp_gateway[{id}]=trace"));
        // A target that only starts with a quiet one's name is not that target.
        assert!(directives(Some("rmcpx=debug")).contains("rmcp=warn"));
        // The SDK's error answers are not logged unless its targets are named.
        assert!(directives(None).contains("rmcp::service=error"));
        for spelled in ["rmcp=debug", "rmcp::service=warn"] {
            assert!(
                !directives(Some(spelled)).contains("rmcp::service=error"),
                "{spelled}"
            );
        }
    }
}
