//! The span a `tools/call` runs in, when the code serving the server makes one (feature
//! `tracing`): made from the caller and the W3C `traceparent` the request carried, so a tracer
//! continues the client's trace. The controller's spans — the call's, each audit write's — are
//! its children, and so is whatever the tool's handler opens (a gateway's upstream call).

use std::sync::Arc;

use rmcp::model::RequestMetaObject;

use super::{Caller, McpServer};

/// Makes the span one `tools/call` runs in, from its caller and the `traceparent` it carried.
pub type CallSpan = Arc<dyn Fn(&Caller, Option<&str>) -> tracing::Span + Send + Sync>;

/// The `_meta` key of a request holding its W3C trace context (as the OpenTelemetry semantic
/// conventions for MCP carry it), read where the transport carried none (stdio).
pub const TRACE_PARENT_META: &str = "traceparent";

impl McpServer {
    /// The same server, running each `tools/call` inside the span `make` returns for its caller
    /// and `traceparent` (the transport's, [`Caller::trace_parent`], else the request's
    /// `_meta` [`TRACE_PARENT_META`]; anything but a version-00 W3C `traceparent` is ignored).
    /// The whole request runs in it: a call, a held call asked about in band and run, a retry
    /// answering one. Spans carry ids, names and decisions, never argument values.
    #[must_use]
    pub fn with_call_span(mut self, make: CallSpan) -> Self {
        self.call_span = Some(make);
        self
    }
}

impl McpServer {
    /// The span a `tools/call` from `caller` runs in: the hook's, or none.
    pub(super) fn call_span_for(
        &self,
        caller: &Caller,
        metas: [Option<&RequestMetaObject>; 2],
    ) -> tracing::Span {
        match &self.call_span {
            Some(make) => make(caller, trace_parent(caller, metas)),
            None => tracing::Span::none(),
        }
    }
}

/// The `traceparent` a request carried — the transport's, else its `_meta`'s — if it is one: the
/// W3C form `00-` 32 lowercase hex digits `-` 16 `-` 2, neither id all zeros.
fn trace_parent<'a>(
    caller: &'a Caller,
    metas: [Option<&'a RequestMetaObject>; 2],
) -> Option<&'a str> {
    caller
        .trace_parent
        .as_deref()
        .or_else(|| {
            metas
                .into_iter()
                .flatten()
                .find_map(|meta| meta.0.0.get(TRACE_PARENT_META))
                .and_then(serde_json::Value::as_str)
        })
        .filter(|value| is_trace_parent(value))
}

/// Whether `value` is a version-00 W3C `traceparent`.
fn is_trace_parent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |part: &str| {
        part.bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
    };
    let nonzero = |part: &str| part.bytes().any(|byte| byte != b'0');
    matches!(parts.as_slice(), [version, trace, span, flags]
        if *version == "00"
            && trace.len() == 32 && hex(trace) && nonzero(trace)
            && span.len() == 16 && hex(span) && nonzero(span)
            && flags.len() == 2 && hex(flags))
}

#[cfg(test)]
mod tests {
    use super::is_trace_parent;

    #[test]
    fn only_a_version_00_traceparent_is_read() {
        assert!(is_trace_parent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        assert!(is_trace_parent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        ));
        for not_one in [
            "",
            "00-1-2-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nX: y",
        ] {
            assert!(!is_trace_parent(not_one), "{not_one:?}");
        }
    }
}
