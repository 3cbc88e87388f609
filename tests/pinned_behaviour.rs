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
