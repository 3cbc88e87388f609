//! OpenTelemetry traces (`[traces]`; off unless configured), exported over OTLP/HTTP.
//!
//! What is exported: the library's span for each call (`toolgate.handle`: call id, tool,
//! principal, upstream, decision, rule id, layer, approval id, outcome), a child for each audit
//! write (`toolgate.audit`) and for the upstream call (`toolgate.upstream`), all inside one span
//! per `tools/call` request (`toolgate.mcp.tools_call`). Never an argument value: the spans carry
//! ids, names and decisions only, and log events are not exported.
//!
//! Context: a client's W3C `traceparent` — the HTTP header, or `_meta.traceparent` — is the
//! parent of the request's span; the upstream call's context goes to every upstream, stdio or
//! HTTP, as `_meta.traceparent` on the `tools/call` it is sent (where the OpenTelemetry semantic
//! conventions for MCP carry it).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::FilterFn;

use toolgate::mcp::{CallSpan, Caller};

/// The target of the gateway's own spans (kept out of the log lines, see `logging`).
pub const TARGET: &str = "toolgate_mcp_gateway::traces";
/// The target of the library's call and audit spans.
pub const LIBRARY_TARGET: &str = "toolgate::controller::observe";

/// `[traces]`: where spans go, and the service they name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracesConfig {
    /// The OTLP/HTTP traces endpoint, e.g. `http://127.0.0.1:4318/v1/traces`.
    pub endpoint: String,
    /// `service.name` of every span (default `toolgate-mcp-gateway`).
    pub service_name: String,
}

/// The exporter while the gateway runs; [`shutdown`](Self::shutdown) sends what is left.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

/// The subscriber layer that turns the gateway's and the library's spans into OpenTelemetry
/// spans, and nothing else.
pub type TracesLayer = tracing_subscriber::filter::Filtered<
    tracing_opentelemetry::OpenTelemetryLayer<tracing_subscriber::Registry, SdkTracer>,
    FilterFn<fn(&tracing::Metadata<'_>) -> bool>,
    tracing_subscriber::Registry,
>;

/// The spans exported: the library's and the gateway's own, never an event (a log line).
fn exported(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.is_span() && (metadata.target() == TARGET || metadata.target() == LIBRARY_TARGET)
}

/// How long stopping waits for the last spans to be sent.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// Starts the exporter for `config`, and the layer to install. Call it outside the async runtime
/// (the exporter's HTTP client blocks, on a thread of its own).
///
/// # Errors
///
/// The exporter cannot be built (an endpoint it cannot use).
pub fn start(config: &TracesConfig) -> Result<(Traces, TracesLayer), String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(config.endpoint.clone())
        .build()
        .map_err(|error| format!("traces.otlp_endpoint: cannot export there: {error}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(config.service_name.clone())
        .build();
    // Every call is traced, whatever sampling decision a client's `traceparent` carries: a client
    // does not choose which of its calls the operator sees.
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::AlwaysOn)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("toolgate-mcp-gateway");
    let only_spans: fn(&tracing::Metadata<'_>) -> bool = exported;
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_filter(FilterFn::new(only_spans));
    Ok((Traces { provider }, layer))
}

impl Traces {
    /// Sends the spans not yet sent (waiting at most a second) and stops the exporter.
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown_with_timeout(SHUTDOWN_WAIT) {
            eprintln!("toolgate-mcp-gateway: traces: the last spans were not all sent ({error})");
        }
    }
}

/// The span each `tools/call` request runs in: a child of the client's `traceparent` when it
/// sent a valid one.
pub fn call_span() -> CallSpan {
    Arc::new(|caller: &Caller, traceparent: Option<&str>| {
        let span = tracing::info_span!(
            target: TARGET,
            "toolgate.mcp.tools_call",
            principal = caller
                .principal
                .as_ref()
                .map(|principal| bounded(&principal.id)),
        );
        if let Some(traceparent) = traceparent {
            let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
            let parent = TraceContextPropagator::new().extract(&carrier);
            let _ = span.set_parent(parent);
        }
        span
    })
}

/// The span of one call sent to `upstream`, recording the upstream on the call's span too.
pub fn upstream_span(upstream: &str, tool: &str) -> tracing::Span {
    tracing::Span::current().record("upstream", upstream);
    tracing::info_span!(target: TARGET, "toolgate.upstream", upstream, tool)
}

/// The W3C `traceparent` of `span`, when it is being traced.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
    carrier.remove("traceparent")
}

/// `text` cut to 256 characters, as the library bounds what it records.
fn bounded(text: &str) -> String {
    text.chars().take(256).collect()
}
