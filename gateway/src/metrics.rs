//! What the gateway counts, served as Prometheus text on the admin listener.
//!
//! Prometheus text rather than OpenTelemetry export: a scrape endpoint needs no collector, no
//! push configuration and no extra runtime, and every OpenTelemetry collector can scrape it.
//! Labels are bounded: a tool label is a served tool's name or `(unknown)`, never a name a model
//! made up.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use toolgate::audit::{AuditError, AuditEvent, AuditKind, AuditSink};
use toolgate::{PolicyAction, ToolController};

use crate::upstream::Link;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    decision: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    upstream: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

/// The gateway's counters and histograms.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    executions: Family<ToolLabels, Counter>,
    approvals: Family<OutcomeLabels, Counter>,
    upstream_latency: Family<UpstreamLabels, Histogram>,
    upstream_up: Family<UpstreamLabels, Gauge>,
    tools_held_back: Family<UpstreamLabels, Gauge>,
    pending: Gauge,
    sessions_open: Gauge,
    sessions_refused: Family<OutcomeLabels, Counter>,
    sign_ins_refused: Family<OutcomeLabels, Counter>,
    served: std::sync::RwLock<HashSet<String>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Latency buckets from 100 µs to 30 s.
fn latency_buckets() -> Histogram {
    Histogram::new([
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
        5.0, 10.0, 30.0,
    ])
}

impl Metrics {
    /// Metrics with no tool served yet.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("toolgate");
        let calls = Family::<CallLabels, Counter>::default();
        let executions = Family::<ToolLabels, Counter>::default();
        let approvals = Family::<OutcomeLabels, Counter>::default();
        let upstream_latency = Family::<UpstreamLabels, Histogram>::new_with_constructor(
            latency_buckets as fn() -> Histogram,
        );
        let upstream_up = Family::<UpstreamLabels, Gauge>::default();
        let tools_held_back = Family::<UpstreamLabels, Gauge>::default();
        let pending = Gauge::default();
        let sessions_open = Gauge::default();
        let sessions_refused = Family::<OutcomeLabels, Counter>::default();
        let sign_ins_refused = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "calls",
            "Tool calls by tool and decision (allow, ask, deny; rejected: unknown tool or invalid arguments)",
            calls.clone(),
        );
        registry.register(
            "executions",
            "Calls that ran, by tool and result (ok, error)",
            executions.clone(),
        );
        registry.register(
            "approvals",
            "Answered approvals by outcome (approved, rejected, expired, revoked, stale)",
            approvals.clone(),
        );
        registry.register(
            "upstream_call_seconds",
            "Time an upstream took to answer a forwarded call",
            upstream_latency.clone(),
        );
        registry.register(
            "upstream_up",
            "1 while the upstream's session is open, 0 while it is down",
            upstream_up.clone(),
        );
        registry.register(
            "tools_held_back",
            "The upstream's tools held back: changed or gone since pinned while the policy names them (a call runs nothing)",
            tools_held_back.clone(),
        );
        registry.register(
            "pending_approvals",
            "Calls held for a person's answer",
            pending.clone(),
        );
        registry.register(
            "mcp_sessions_open",
            "Streamable HTTP sessions open (2025-11-25 revision)",
            sessions_open.clone(),
        );
        registry.register(
            "mcp_sessions_refused",
            "Requests refused by session bookkeeping, by outcome (cap, foreign: a session another principal opened)",
            sessions_refused.clone(),
        );
        registry.register(
            "sign_ins_refused",
            "Requests refused for their credential, by outcome (missing, unknown: a key no client holds or a token refused)",
            sign_ins_refused.clone(),
        );
        Self {
            registry,
            calls,
            executions,
            approvals,
            upstream_latency,
            upstream_up,
            tools_held_back,
            pending,
            sessions_open,
            sessions_refused,
            sign_ins_refused,
            served: std::sync::RwLock::default(),
        }
    }

    /// The tool names calls are counted under; any other is `(unknown)`.
    pub fn serve_tools(&self, names: impl IntoIterator<Item = String>) {
        *self
            .served
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = names.into_iter().collect();
    }

    /// Records how long `upstream` took for one call.
    pub fn observe_upstream(&self, upstream: &str, took: Duration) {
        self.upstream_latency
            .get_or_create(&UpstreamLabels {
                upstream: upstream.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// Open Streamable HTTP sessions changed by `by` at one endpoint (the gauge is the sum).
    pub fn sessions_open_changed(&self, by: i64) {
        self.sessions_open.inc_by(by);
    }

    /// A request refused by session bookkeeping: `cap` or `foreign`.
    pub fn session_refused(&self, outcome: &'static str) {
        self.sessions_refused
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    /// A request refused for its credential: `missing` or `unknown`.
    pub fn sign_in_refused(&self, outcome: &'static str) {
        self.sign_ins_refused
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    /// The text a scrape gets: the counters, and gauges read now from `controller` and `links`.
    pub fn render(&self, controller: &ToolController, links: &[Arc<Link>]) -> String {
        self.pending
            .set(i64::try_from(controller.pending().len()).unwrap_or(i64::MAX));
        for link in links {
            self.upstream_up
                .get_or_create(&UpstreamLabels {
                    upstream: link.name().to_owned(),
                })
                .set(i64::from(link.is_up()));
            self.tools_held_back
                .get_or_create(&UpstreamLabels {
                    upstream: link.name().to_owned(),
                })
                .set(i64::try_from(link.withheld().len()).unwrap_or(i64::MAX));
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String does not fail");
        text
    }

    fn tool_label(&self, name: &str) -> String {
        // Audit events carry a name as sent when it is short and plain, else escaped and cut:
        // such a name is no served tool's.
        let served = self
            .served
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if served.contains(name) {
            name.to_owned()
        } else {
            "(unknown)".to_owned()
        }
    }

    fn count(&self, event: &AuditEvent) {
        let tool = || self.tool_label(&event.tool);
        let decision = match (event.kind, event.action) {
            (AuditKind::Decision, Some(PolicyAction::Allow)) => Some("allow"),
            (AuditKind::Decision, Some(PolicyAction::Ask)) => Some("ask"),
            (AuditKind::Decision, Some(_)) => Some("deny"),
            (AuditKind::RejectedAtPreparation, _) => Some("rejected"),
            _ => None,
        };
        if let Some(decision) = decision {
            self.calls
                .get_or_create(&CallLabels {
                    tool: tool(),
                    decision: decision.to_owned(),
                })
                .inc();
        }
        let outcome = match event.kind {
            AuditKind::ApprovalApproved | AuditKind::ApprovalEdited => Some("approved"),
            AuditKind::ApprovalRejected => Some("rejected"),
            AuditKind::ApprovalExpired => Some("expired"),
            AuditKind::ApprovalRevoked => Some("revoked"),
            AuditKind::ApprovalStale => Some("stale"),
            _ => None,
        };
        if let Some(outcome) = outcome {
            self.approvals
                .get_or_create(&OutcomeLabels {
                    outcome: outcome.to_owned(),
                })
                .inc();
        }
        if event.kind == AuditKind::ExecutionOutcome {
            let result = if event.is_error == Some(true) {
                "error"
            } else {
                "ok"
            };
            self.executions
                .get_or_create(&ToolLabels {
                    tool: tool(),
                    result: result.to_owned(),
                })
                .inc();
        }
    }
}

/// An audit sink that counts each event once the sink it wraps (if any) has stored it.
pub struct CountingSink {
    pub metrics: Arc<Metrics>,
    pub inner: Option<Box<dyn AuditSink>>,
}

impl AuditSink for CountingSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        if let Some(inner) = &self.inner {
            inner.record(event)?;
        }
        self.metrics.count(event);
        Ok(())
    }

    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        if let Some(inner) = &self.inner {
            inner.record_deferred(event)?;
        }
        self.metrics.count(event);
        Ok(())
    }

    fn sync(&self) -> Result<(), AuditError> {
        self.inner.as_ref().map_or(Ok(()), |inner| inner.sync())
    }

    /// Counting needs no arguments: without an audit log, nothing of them is hashed per call.
    fn keeps_arguments(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|inner| inner.keeps_arguments())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, tool: &str, extra: serde_json::Value) -> AuditEvent {
        let mut event = serde_json::json!({
            "time_ms": 0, "kind": kind, "call_id": "c", "tool": tool, "argument_digest": "sha256:0",
        });
        event
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(event).expect("an audit event")
    }

    #[test]
    fn calls_are_counted_by_decision_and_a_name_not_served_is_one_label() {
        let metrics = Metrics::new();
        metrics.serve_tools(["h__echo".to_owned()]);
        let allow = serde_json::json!({"action": "allow"});
        metrics.count(&event("decision", "h__echo", allow.clone()));
        metrics.count(&event(
            "decision",
            "h__echo",
            serde_json::json!({"action": "deny"}),
        ));
        // Names a model made up never become labels of their own.
        for made_up in ["x1", "x2", "\"quoted\\u0000\""] {
            metrics.count(&event(
                "rejected_at_preparation",
                made_up,
                serde_json::json!({}),
            ));
        }
        metrics.count(&event(
            "execution_outcome",
            "h__echo",
            serde_json::json!({"is_error": true}),
        ));
        metrics.count(&event(
            "approval_approved",
            "h__echo",
            serde_json::json!({}),
        ));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &metrics.registry).unwrap();
        for expected in [
            "toolgate_calls_total{tool=\"h__echo\",decision=\"allow\"} 1",
            "toolgate_calls_total{tool=\"h__echo\",decision=\"deny\"} 1",
            "toolgate_calls_total{tool=\"(unknown)\",decision=\"rejected\"} 3",
            "toolgate_executions_total{tool=\"h__echo\",result=\"error\"} 1",
            "toolgate_approvals_total{outcome=\"approved\"} 1",
        ] {
            assert!(text.contains(expected), "{expected} not in:\n{text}");
        }
        assert!(!text.contains("x1") && !text.contains("quoted"), "{text}");
    }
}

/// The classic Prometheus text format (0.0.4) of `openmetrics` text: a counter family's `HELP`
/// and `TYPE` name its samples' `_total` name (OpenMetrics names the family without it), and
/// the OpenMetrics-only lines (`# UNIT`, `# EOF`) are left out. Samples are unchanged.
pub fn classic_text(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut classic = String::with_capacity(openmetrics.len() + 16 * counters.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|prefix| line.strip_prefix(prefix).map(|rest| (prefix, rest)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                classic.push_str(prefix);
                classic.push_str(name);
                if counters.contains(name) && !name.ends_with("_total") {
                    classic.push_str("_total");
                }
                classic.push(' ');
                classic.push_str(tail);
            }
            None => classic.push_str(line),
        }
        classic.push('\n');
    }
    classic
}

#[cfg(test)]
mod classic_tests {
    use super::*;

    #[test]
    fn classic_text_types_counters_under_their_sample_names() {
        let metrics = Metrics::new();
        metrics.sign_in_refused("missing");
        metrics.sessions_open_changed(3);
        metrics.observe_upstream("h", Duration::from_millis(2));
        let mut openmetrics = String::new();
        prometheus_client::encoding::text::encode(&mut openmetrics, &metrics.registry).unwrap();
        let classic = classic_text(&openmetrics);
        assert!(
            classic.contains("# TYPE toolgate_sign_ins_refused_total counter\n"),
            "{classic}"
        );
        assert!(
            classic.contains("# HELP toolgate_sign_ins_refused_total Requests refused"),
            "{classic}"
        );
        assert!(classic.contains("toolgate_sign_ins_refused_total{outcome=\"missing\"} 1\n"));
        assert!(
            classic.contains(
                "# TYPE toolgate_mcp_sessions_open gauge\ntoolgate_mcp_sessions_open 3\n"
            )
        );
        assert!(classic.contains("# TYPE toolgate_upstream_call_seconds histogram\n"));
        assert!(!classic.contains("# EOF") && !classic.contains("# UNIT"));
        // Every sample line follows a TYPE line of its own family, as classic parsers need.
        let mut family = String::new();
        for line in classic.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                family = rest.split(' ').next().unwrap().to_owned();
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| name.strip_suffix(suffix))
                    .unwrap_or(name);
                assert!(name == family || base == family, "{line} under {family}");
            }
        }
    }
}
