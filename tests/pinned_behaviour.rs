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
fn a_request_expires_after_a_real_time_to_live_and_not_before() {
    let runs = Arc::default();
    let runtime = runtime(&runs);
    // Long enough that an answer given at once is never late, even on a loaded machine.
    let ttl = Duration::from_millis(1500);
    let pending =
        PendingApprovals::with_limits(ApprovalLimits::default().with_time_to_live(Some(ttl)));
    let early = pending
        .request(prepared(&runtime, "early"), Reason::from_static("r"))
        .unwrap();
    // Answered well within its time to live: approved.
    assert!(matches!(
        pending
            .answer(ApprovalResponse::approve(early.approval_id))
            .unwrap(),
        Answered::Approved(_)
    ));
    let late = pending
        .request(prepared(&runtime, "late"), Reason::from_static("r"))
        .unwrap();
    assert_eq!(pending.list().len(), 1, "a fresh request is listed");
    std::thread::sleep(ttl + Duration::from_millis(300));
    assert!(
        pending.list().is_empty(),
        "an expired request is not listed"
    );
    assert!(matches!(
        pending
            .answer(ApprovalResponse::approve(late.approval_id))
            .unwrap(),
        Answered::Expired(_)
    ));
    assert_eq!(
        pending.state(late.approval_id).unwrap(),
        Some(ApprovalState::Expired)
    );
}

#[test]
fn the_memory_store_remembers_states_and_outcomes() {
    let runs = Arc::default();
    let runtime = runtime(&runs);
    let pending = PendingApprovals::new();
    let ids: Vec<ApprovalId> = (0..4)
        .map(|i| {
            pending
                .request(
                    prepared(&runtime, &format!("c{i}")),
                    Reason::from_static("r"),
                )
                .unwrap()
                .approval_id
        })
        .collect();
    assert_eq!(pending.len(), 4);
    assert!(!pending.is_empty());
    assert_eq!(pending.state(ids[0]).unwrap(), Some(ApprovalState::Pending));
    let _ = pending.answer(ApprovalResponse::approve(ids[0])).unwrap();
    assert_eq!(
        pending.state(ids[0]).unwrap(),
        Some(ApprovalState::Approved { outcome: None })
    );
    pending
        .record_outcome(ids[0], ExecutionOutcome::Ok)
        .unwrap();
    assert_eq!(
        pending.state(ids[0]).unwrap(),
        Some(ApprovalState::Approved {
            outcome: Some(ExecutionOutcome::Ok)
        })
    );
    let _ = pending.answer(ApprovalResponse::approve(ids[1])).unwrap();
    pending
        .record_outcome(ids[1], ExecutionOutcome::Error)
        .unwrap();
    assert_eq!(
        pending.state(ids[1]).unwrap(),
        Some(ApprovalState::Approved {
            outcome: Some(ExecutionOutcome::Error)
        })
    );
    let _ = pending.answer(ApprovalResponse::reject(ids[2])).unwrap();
    assert_eq!(
        pending.state(ids[2]).unwrap(),
        Some(ApprovalState::Rejected)
    );
    pending.revoke(ids[3]).unwrap();
    assert_eq!(pending.state(ids[3]).unwrap(), Some(ApprovalState::Revoked));
    assert!(pending.is_empty());
    assert_eq!(pending.len(), 0);
    let unknown: ApprovalId = "0123456789abcdef0123456789abcdef".parse().unwrap();
    assert_eq!(pending.state(unknown).unwrap(), None);
}

#[test]
fn the_memory_store_answers_through_its_trait_like_through_pending_approvals() {
    let runs = Arc::default();
    let runtime = runtime(&runs);
    let store = MemoryApprovalStore::new();
    let pending = PendingApprovals::new();
    let request = pending
        .request(prepared(&runtime, "c"), Reason::from_static("r"))
        .unwrap();
    store.insert(&request, None, 8, 0).unwrap();
    assert_eq!(store.pending(0).unwrap().len(), 1);
    assert_eq!(
        store.state(request.approval_id).unwrap(),
        Some(ApprovalState::Pending)
    );
}

#[test]
fn limits_given_to_pending_approvals_are_the_limits_applied() {
    let runs = Arc::default();
    let runtime = runtime(&runs);
    let limits = ApprovalLimits::default().with_max_pending(2);
    let pending = PendingApprovals::with_limits(limits);
    assert_eq!(pending.limits(), limits);
    for i in 0..2 {
        pending
            .request(
                prepared(&runtime, &format!("c{i}")),
                Reason::from_static("r"),
            )
            .unwrap();
    }
    let refused = pending.request(prepared(&runtime, "c2"), Reason::from_static("r"));
    assert!(
        matches!(refused, Err(ApprovalError::TooManyPending { limit: 2 })),
        "{refused:?}"
    );
    // Through the controller too.
    let controller = ToolController::new(
        registry([counted("t", json!({"type": "object"}), &runs)]),
        policy(&[], &["t"]),
    )
    .with_approval_limits(ApprovalLimits::default().with_max_pending(1));
    assert!(matches!(
        controller.handle(ToolCall::new("a", "t", json!({}))),
        Outcome::PendingApproval(_)
    ));
    let Outcome::Completed(result) = controller.handle(ToolCall::new("b", "t", json!({}))) else {
        panic!("a second ask past the cap is not held");
    };
    assert!(
        result.content.contains("too many calls are waiting"),
        "{result:?}"
    );
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
