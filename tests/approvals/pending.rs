//! Pending approvals and the memory store: every state and outcome is remembered, the store
//! answers through its trait as `PendingApprovals` does, the limits given are the limits applied
//! (here and through the controller), and a store error names what failed.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use toolgate::approvals::ApprovalId;

use crate::common::*;
use serde_json::json;
use toolgate::approvals::{
    ApprovalError, ApprovalLimits, ApprovalState, ApprovalStore, ExecutionOutcome,
    MemoryApprovalStore, PendingApprovals, StoreError,
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
fn store_error_message_names_what_failed() {
    let error = ApprovalError::Store(StoreError::new("the ledger is corrupt"));
    assert_eq!(error.to_string(), "approval store: the ledger is corrupt");
}
