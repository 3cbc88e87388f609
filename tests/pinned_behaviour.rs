//! Behaviour that mutation testing found unpinned (`../shared/findings/`): each test asserts what
//! a user relies on — real expiry, what the memory store remembers, limits applied, the text of
//! actions and reasons, the specs a controller shows.

#[path = "support/common.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use common::*;
use serde_json::json;
use toolgate::approvals::{
    Answered, ApprovalLimits, ApprovalState, ApprovalStore, ExecutionOutcome, MemoryApprovalStore,
    PendingApprovals,
};
use toolgate::*;

fn prepared(runtime: &ToolRuntime, call_id: &str) -> PreparedToolCall {
    runtime
        .prepare(ToolCall::new(call_id, "t", json!({})))
        .expect("valid call")
}

fn runtime(runs: &Arc<AtomicUsize>) -> ToolRuntime {
    ToolRuntime::new(registry([counted("t", json!({"type": "object"}), runs)]))
}

#[test]
fn actions_and_reasons_print_as_their_words() {
    assert_eq!(PolicyAction::Allow.to_string(), "allow");
    assert_eq!(PolicyAction::Ask.to_string(), "ask");
    assert_eq!(PolicyAction::Deny.to_string(), "deny");
    assert_eq!(Reason::from_static("read-only").to_string(), "read-only");
    assert_eq!(
        Reason::new("shared text").unwrap().to_string(),
        "shared text"
    );
    let runs = Arc::default();
    let runtime = runtime(&runs);
    let prepared = prepared(&runtime, "c9");
    let policy = policy(&["t"], &[]);
    let PolicyOutcome::Allowed { authorized, .. } = Authorized::by_policy(&policy, prepared) else {
        panic!("allowed");
    };
    let printed = format!("{authorized:?}");
    assert!(
        printed.starts_with("Authorized(") && printed.contains("c9"),
        "{printed}"
    );
}

#[test]
fn a_controller_shows_the_specs_of_its_current_tools_in_order() {
    let runs = Arc::default();
    let controller = ToolController::new(
        registry([
            counted("b", json!({"type": "object"}), &runs),
            counted("a", json!({"type": "object"}), &runs),
        ]),
        policy(&["a"], &[]),
    );
    let names: Vec<String> = controller.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["b", "a"]);
    controller
        .replace_registry(registry([counted("c", json!({"type": "object"}), &runs)]))
        .unwrap();
    let names: Vec<String> = controller.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["c"]);
}

#[test]
fn listed_specs_hide_only_what_the_policy_denies_whatever_the_arguments() {
    let runs = Arc::default();
    let tools = || {
        registry([
            counted("a", json!({"type": "object"}), &runs),
            counted("b", json!({"type": "object"}), &runs),
        ])
    };
    let names = |controller: &ToolController| -> Vec<String> {
        controller
            .listed_specs()
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    // A closure cannot say what it denies: every tool stays listed (it may allow some calls).
    let closure = ToolController::new(tools(), |_: &PreparedToolCall| {
        PolicyDecision::deny(Reason::from_static("no"))
    });
    assert_eq!(names(&closure), ["a", "b"]);
    // A name policy shared through an Arc says it, and the Arc forwards it.
    let shared = ToolController::new(tools(), Arc::new(policy(&["a"], &[])));
    assert_eq!(names(&shared), ["a"]);
    let layered = ToolController::new(
        tools(),
        Layers::new().layer("only", policy(&["a"], &[])).unwrap(),
    );
    // A stack hides a tool every layer denies whatever its arguments (here its only layer).
    assert_eq!(
        names(&layered),
        ["a"],
        "a stack hides what every layer denies"
    );
}

#[test]
fn a_controller_over_a_misfit_lists_no_tool() {
    let runs = Arc::default();
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let old = registry([counted("read", schema, &runs)]);
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "r", "tool": "read", "action": "allow", "reason": "r",
            "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}}]}"#,
        &old,
    )
    .unwrap();
    let renamed = registry([counted(
        "read",
        json!({"type": "object", "properties": {"file": {"type": "string"}}}),
        &runs,
    )]);
    let controller = ToolController::new(renamed, policy);
    assert!(
        controller.listed_specs().is_empty(),
        "every call is denied, so nothing is shown"
    );
    assert_eq!(controller.specs().len(), 1);
}
