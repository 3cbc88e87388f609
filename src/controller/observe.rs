//! Spans for `handle`, `resolve` and each audit write (feature `tracing`): ids, names, the
//! decision and what came of the call, each bounded in length — never argument values. An
//! exporter (OpenTelemetry, through `tracing-opentelemetry`) turns the fields into attributes.

use tracing::Span;
use tracing::field::Empty;

use crate::approvals::{Answered, ApprovalResponse};
use crate::audit::AuditKind;
use crate::contract::{ToolCall, ToolResult, quote_bounded};
use crate::decision::{PolicyAction, PolicyDecision};

use super::Outcome;

pub(super) fn handle_span(call: &ToolCall) -> Span {
    let span = tracing::info_span!(
        "toolgate.handle",
        call_id = %quote_bounded(&call.call_id),
        tool = %quote_bounded(&call.tool_name),
        principal = Empty,
        // Filled in by a handler that sends the call on (a gateway's upstream).
        upstream = Empty,
        decision = Empty,
        rule_id = Empty,
        layer = Empty,
        approval_id = Empty,
        outcome = Empty,
    );
    if let Some(principal) = &call.principal {
        span.record(
            "principal",
            tracing::field::display(quote_bounded(&principal.id)),
        );
    }
    span
}

pub(super) fn resolve_span(response: &ApprovalResponse) -> Span {
    tracing::info_span!(
        "toolgate.resolve",
        approval_id = %response.approval_id,
        verdict = ?response.verdict,
        call_id = Empty,
        tool = Empty,
        principal = Empty,
        approver = response.approver.as_ref().map(|approver| quote_bounded(&approver.id)),
        upstream = Empty,
        decision = Empty,
        rule_id = Empty,
        layer = Empty,
        outcome = Empty,
    )
}

/// A child span for one audit write, named by the event's kind.
pub(super) fn audit_span(kind: AuditKind) -> Span {
    tracing::info_span!("toolgate.audit", kind = ?kind)
}

/// Fills in the call's id and tool once the answered request is known.
pub(super) fn record_answered(span: &Span, answered: &Answered) {
    let request = match answered {
        Answered::Approved(approval) => approval.request(),
        Answered::Rejected(request) | Answered::Expired(request) => request,
    };
    span.record(
        "call_id",
        tracing::field::display(quote_bounded(&request.call.call_id)),
    );
    span.record(
        "tool",
        tracing::field::display(quote_bounded(&request.call.tool_name)),
    );
    if let Some(principal) = &request.call.principal {
        span.record(
            "principal",
            tracing::field::display(quote_bounded(&principal.id)),
        );
    }
}

/// The decision taken for the call in the current span: its action, and the rule and layer that
/// took it when a rule did.
pub(super) fn record_decision(decision: &PolicyDecision) {
    // Where nothing records these spans, the interest cached at the call site says so at once;
    // `Span::current` would look the span stack up on every call.
    if !tracing::span_enabled!(tracing::Level::INFO) {
        return;
    }
    let span = Span::current();
    span.record("decision", action_name(decision.action));
    if let Some(rule_id) = &decision.rule_id {
        span.record("rule_id", tracing::field::display(quote_bounded(rule_id)));
    }
    if let Some(layer) = &decision.layer {
        span.record("layer", tracing::field::display(quote_bounded(layer)));
    }
}

/// An allow the gate took from its table of names, with no rule.
pub(super) fn record_allowed_by_name() {
    if !tracing::span_enabled!(tracing::Level::INFO) {
        return;
    }
    Span::current().record("decision", action_name(PolicyAction::Allow));
}

/// What came of a handled call: it ran (`ok` or `error`) or waits for a person (`held`, with the
/// approval's id).
pub(super) fn record_outcome(span: &Span, outcome: &Outcome) {
    match outcome {
        Outcome::Completed(result) => record_result(span, result),
        Outcome::PendingApproval(request) => {
            span.record("outcome", "held");
            span.record("approval_id", tracing::field::display(request.approval_id));
        }
    }
}

/// What came of a call: `ok`, or `error` (denied, invalid, failed, withdrawn).
pub(super) fn record_result(span: &Span, result: &ToolResult) {
    span.record("outcome", if result.is_error { "error" } else { "ok" });
}

fn action_name(action: PolicyAction) -> &'static str {
    match action {
        PolicyAction::Allow => "allow",
        PolicyAction::Ask => "ask",
        PolicyAction::Deny => "deny",
    }
}
