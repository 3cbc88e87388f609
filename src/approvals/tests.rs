//! Unit tests of ids, the memory store and pending approvals.

use super::*;
use crate::runtime::PreparedToolCall;
use serde_json::json;

fn call() -> PreparedToolCall {
    use crate::{ToolDefinition, ToolError, ToolRegistry, ToolRuntime, ToolSpec};
    let noop = |_: &serde_json::Value| -> Result<String, ToolError> { Ok(String::new()) };
    let spec = ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"}));
    let definition = ToolDefinition::new(spec, noop).unwrap();
    let runtime = ToolRuntime::new(ToolRegistry::new([definition]).unwrap());
    runtime
        .prepare(ToolCall::new("c1", "apply_patch", json!({})))
        .unwrap()
}

fn reason() -> Reason {
    Reason::from_static("needs a person")
}

#[test]
fn ids_are_distinct_and_round_trip() {
    let ids: std::collections::HashSet<ApprovalId> =
        (0..1000).map(|_| ApprovalId::random().unwrap()).collect();
    assert_eq!(ids.len(), 1000);
    let id = *ids.iter().next().unwrap();
    assert_eq!(id.to_string().len(), 32);
    assert_eq!(id.to_string().parse::<ApprovalId>().unwrap(), id);
    let wire = serde_json::to_string(&id).unwrap();
    assert_eq!(serde_json::from_str::<ApprovalId>(&wire).unwrap(), id);
}

#[test]
fn ids_are_distinct_across_threads_and_batches() {
    // Each thread draws several batches' worth; no id repeats within or across threads.
    let per_thread: Vec<Vec<ApprovalId>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| (0..500).map(|_| ApprovalId::random().unwrap()).collect()))
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .collect()
    });
    let all: std::collections::HashSet<ApprovalId> = per_thread.iter().flatten().copied().collect();
    assert_eq!(all.len(), 2000);
    assert!(
        !all.contains(&ApprovalId([0; 16])),
        "a wiped slot was handed out"
    );
}

#[test]
fn ids_use_all_128_bits() {
    // A counter or clock would leave most bits constant across draws; OS randomness flips
    // each bit in about half of them.
    let draws: Vec<[u8; 16]> = (0..256).map(|_| ApprovalId::random().unwrap().0).collect();
    for bit in 0..128 {
        let ones = draws
            .iter()
            .filter(|bytes| bytes[bit / 8] >> (bit % 8) & 1 == 1)
            .count();
        assert!((64..=192).contains(&ones), "bit {bit} set {ones}/256 times");
    }
}

#[test]
fn malformed_ids_are_refused() {
    for text in [
        "",
        "abc",
        &"g".repeat(32),
        &"0".repeat(33),
        "é".repeat(16).as_str(),
    ] {
        assert!(text.parse::<ApprovalId>().is_err(), "{text:?}");
    }
    assert!(serde_json::from_str::<ApprovalId>("\"xyz\"").is_err());
}

#[test]
fn answer_consumes_exactly_once() {
    let pending = PendingApprovals::new();
    let request = pending.request(call(), reason()).unwrap();
    assert_eq!(pending.len(), 1);
    assert!(matches!(
        pending.answer(ApprovalResponse::reject(request.approval_id)),
        Ok(Answered::Rejected(_))
    ));
    assert_eq!(
        pending
            .answer(ApprovalResponse::approve(request.approval_id))
            .unwrap_err(),
        ApprovalError::NotPending {
            approval_id: request.approval_id
        }
    );
    assert!(pending.is_empty());
}

#[test]
fn unknown_id_is_an_error() {
    let pending = PendingApprovals::new();
    let id = ApprovalId::random().unwrap();
    assert!(matches!(
        pending.answer(ApprovalResponse::approve(id)),
        Err(ApprovalError::NotPending { .. })
    ));
}

#[test]
fn list_shows_waiting_requests_with_their_calls() {
    let pending = PendingApprovals::new();
    let first = pending.request(call(), reason()).unwrap();
    let second = pending.request(call(), reason()).unwrap();
    let listed = pending.list();
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&first) && listed.contains(&second));
}
