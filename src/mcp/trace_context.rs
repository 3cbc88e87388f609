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

/// A `traceparent` is 55 characters; a longer value is not one and is ignored.
const MAX_TRACE_PARENT_BYTES: usize = 128;

impl McpServer {
    /// The same server, running each `tools/call` inside the span `make` returns for its caller
    /// and `traceparent` (the transport's, [`Caller::trace_parent`], else the request's
    /// `_meta` [`TRACE_PARENT_META`]; a value over 128 bytes or not a string is ignored). Spans
    /// carry ids, names and decisions, never argument values.
    #[must_use]
    pub fn with_call_span(mut self, make: CallSpan) -> Self {
        self.call_span = Some(make);
        self
    }
}

/// The `traceparent` a request carried: the transport's, else its `_meta`'s.
pub(super) fn trace_parent(
    caller: &Caller,
    metas: [Option<&RequestMetaObject>; 2],
) -> Option<String> {
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
        .filter(|value| value.len() <= MAX_TRACE_PARENT_BYTES)
        .map(str::to_owned)
}
