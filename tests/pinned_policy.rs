//! Policy behaviour found unpinned by the mutation run (./mutation-report): a static reason may
//! start with whitespace, and one that is only whitespace is refused; a shadow candidate's
//! difference is recorded with a reason naming both decisions, and a candidate never hides a tool.

#[path = "support/common.rs"]
mod common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use toolgate::audit::{AuditKind, MemoryAuditSink};
use toolgate::*;

fn shadowed(sink: &Arc<MemoryAuditSink>) -> ToolController {
    // The enforced policy allows the calculator; the candidate on trial would deny everything.
    let shadow = Shadow::new(policy(&["calculator"], &[]), policy(&[], &[]))
        .with_audit_sink(Arc::clone(sink));
    ToolController::new(registry([calculator()]), shadow)
}

#[test]
fn shadow_difference_event_names_both_decisions() {
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = shadowed(&sink);
    let Outcome::Completed(result) =
        controller.handle(ToolCall::new("c", "calculator", json!({"a": 1, "b": 2})))
    else {
        panic!("the enforced policy allows it");
    };
    assert_eq!(result, ToolResult::ok("c", "3"));
    let events = sink.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].kind, AuditKind::ShadowDifference);
    assert_eq!(events[0].call_id, "c");
    assert_eq!(
        events[0].reason.as_deref(),
        Some("the candidate policy would deny this call where the enforced one decided allow")
    );
}

#[test]
fn shadow_candidate_that_denies_a_tool_does_not_hide_it() {
    let controller = shadowed(&Arc::new(MemoryAuditSink::new()));
    let listed: Vec<String> = controller
        .listed_specs()
        .into_iter()
        .map(|spec| spec.name)
        .collect();
    assert_eq!(listed, ["calculator"]);
}

#[test]
fn static_reason_with_leading_whitespace_is_kept_as_written() {
    let reason = Reason::from_static(" \t read-only");
    assert_eq!(reason.as_str(), " \t read-only");
    assert_eq!(reason.to_string(), " \t read-only");
}

#[test]
#[should_panic(expected = "a reason must not be empty")]
fn static_reason_of_only_whitespace_is_refused() {
    let _ = Reason::from_static(" \t\n ");
}

#[test]
fn shadow_hides_what_the_enforced_policy_denies_outright() {
    // The enforced policy denies every calculator call; the candidate would allow them.
    let shadow = Shadow::new(policy(&[], &[]), policy(&["calculator"], &[]));
    let controller = ToolController::new(registry([calculator()]), shadow);
    assert!(controller.listed_specs().is_empty());
    assert_eq!(controller.specs().len(), 1);
}
