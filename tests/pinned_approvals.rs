//! Approval behaviour found unpinned by the mutation run (./mutation-report): a request altered in
//! its store is denied whether or not an audit sink is set (the two paths check the digest
//! differently), and a store error names what failed.

#[path = "support/common.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use serde_json::json;
use toolgate::approvals::{ApprovalError, StoreError};
use toolgate::audit::{AuditKind, MemoryAuditSink};
use toolgate::*;

fn approve_tampered(audit: Option<Arc<MemoryAuditSink>>) -> (ToolResult, usize) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    )
    // Requests come back with other arguments than were stored.
    .with_approval_store(AlteringStore::new(Alter::OnTake, |request| {
        request.call.arguments = json!({"patch": "rm -rf /"});
    }));
    if let Some(sink) = audit {
        controller = controller.with_audit_sink(sink);
    }
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c", "apply_patch", json!({"patch": "+ok"})))
    else {
        panic!("apply_patch asks");
    };
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    (result, runs.load(Ordering::SeqCst))
}

#[test]
fn tampered_request_is_denied_without_an_audit_sink() {
    let (result, runs) = approve_tampered(None);
    assert!(result.is_error);
    assert!(
        result.content.contains("does not match the digest"),
        "{result:?}"
    );
    assert_eq!(runs, 0);
}

#[test]
fn tampered_request_is_denied_with_an_audit_sink_and_recorded_as_stale() {
    let sink = Arc::new(MemoryAuditSink::new());
    let (result, runs) = approve_tampered(Some(sink.clone()));
    assert!(result.is_error);
    assert!(
        result.content.contains("does not match the digest"),
        "{result:?}"
    );
    assert_eq!(runs, 0);
    let events = sink.events();
    let stale = events.last().unwrap();
    assert_eq!(stale.kind, AuditKind::ApprovalStale);
    assert_eq!(stale.is_error, Some(true));
    assert!(
        stale
            .reason
            .as_deref()
            .is_some_and(|reason| reason.contains("digest")),
        "{stale:?}"
    );
    assert!(
        !events
            .iter()
            .any(|event| event.kind == AuditKind::ExecutionOutcome)
    );
}

#[test]
fn store_error_message_names_what_failed() {
    let error = ApprovalError::Store(StoreError::new("the ledger is corrupt"));
    assert_eq!(error.to_string(), "approval store: the ledger is corrupt");
}
