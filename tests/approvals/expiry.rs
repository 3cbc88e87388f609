//! Approval expiry, by an injected clock and by real time: the boundary (answerable at TTL − 1 ms,
//! expired at exactly TTL), listing and the cap ignoring expired requests, a clock stepped back
//! not reviving a request once it was taken, a real 100 ms time to live, and the same through the
//! controller. Each store-level check runs against the memory store and the SQLite ledger; the
//! PostgreSQL store judges expiry by the server's clock, which the injected clock does not move.

use std::time::Duration;

use serde_json::json;
use toolgate::approvals::{
    Answered, ApprovalError, ApprovalLimits, ApprovalState, ApprovalStore, ExecutionOutcome,
    MemoryApprovalStore, PendingApprovals,
};
use toolgate::clock::ManualClock;
use toolgate::*;

const T0: u64 = 1_700_000_000_000;
const TTL_MS: u64 = 1_000;

fn runtime() -> ToolRuntime {
    ToolRuntime::new(ToolRegistry::new([crate::common::calculator()]).unwrap())
}

fn prepared(runtime: &ToolRuntime, id: &str) -> PreparedToolCall {
    runtime
        .prepare(ToolCall::new(id, "calculator", json!({"a": 1, "b": 2})))
        .unwrap()
}

fn reason() -> Reason {
    Reason::new("adds numbers").unwrap()
}

/// Requests in `store`, with a time to live of `TTL_MS` and the clock at `T0`.
fn pending_in(
    store: impl ApprovalStore + 'static,
    limits: ApprovalLimits,
) -> (PendingApprovals, ManualClock) {
    let clock = ManualClock::new(T0);
    (
        PendingApprovals::with_store(store, limits).with_clock(clock.clone()),
        clock,
    )
}

fn ttl() -> ApprovalLimits {
    ApprovalLimits::default().with_time_to_live(Some(Duration::from_millis(TTL_MS)))
}

fn ids(pending: &PendingApprovals) -> Vec<String> {
    pending.list().into_iter().map(|r| r.call.call_id).collect()
}

fn boundary_is_ttl_minus_one_answerable_ttl_expired(store: impl ApprovalStore + 'static) {
    let runtime = runtime();
    let (pending, clock) = pending_in(store, ttl());
    let early = pending
        .request(prepared(&runtime, "early"), reason())
        .unwrap();
    let late = pending
        .request(prepared(&runtime, "late"), reason())
        .unwrap();

    clock.set(T0 + TTL_MS - 1);
    // Made in the same millisecond: listed in either order ("oldest first" is by the clock).
    let mut listed = ids(&pending);
    listed.sort();
    assert_eq!(listed, ["early", "late"]);
    assert_eq!(pending.len(), 2);
    assert!(!pending.is_empty());
    assert_eq!(
        pending.state(early.approval_id).unwrap(),
        Some(ApprovalState::Pending)
    );
    let Answered::Approved(approval) = pending
        .answer(ApprovalResponse::approve(early.approval_id))
        .unwrap()
    else {
        panic!("one millisecond before its time to live a request is answerable");
    };
    assert_eq!(approval.request().approval_id, early.approval_id);
    assert_eq!(
        pending.state(early.approval_id).unwrap(),
        Some(ApprovalState::Approved { outcome: None })
    );

    clock.set(T0 + TTL_MS);
    assert!(pending.list().is_empty(), "expired requests are not listed");
    assert_eq!(pending.len(), 0);
    assert!(pending.is_empty());
    assert!(matches!(
        pending.answer(ApprovalResponse::approve(late.approval_id)),
        Ok(Answered::Expired(request)) if request.approval_id == late.approval_id
    ));
    assert_eq!(
        pending.state(late.approval_id).unwrap(),
        Some(ApprovalState::Expired)
    );
    // Taken as expired: the approval cannot be tried again.
    assert_eq!(
        pending
            .answer(ApprovalResponse::approve(late.approval_id))
            .unwrap_err(),
        ApprovalError::NotPending {
            approval_id: late.approval_id
        }
    );
}

fn listing_excludes_each_request_from_its_own_expiry(store: impl ApprovalStore + 'static) {
    let runtime = runtime();
    let (pending, clock) = pending_in(store, ttl());
    pending
        .request(prepared(&runtime, "first"), reason())
        .unwrap();
    clock.advance(Duration::from_millis(500));
    pending
        .request(prepared(&runtime, "second"), reason())
        .unwrap();

    clock.set(T0 + TTL_MS - 1);
    assert_eq!(ids(&pending), ["first", "second"], "oldest first");
    clock.set(T0 + TTL_MS);
    assert_eq!(ids(&pending), ["second"]);
    clock.set(T0 + 500 + TTL_MS - 1);
    assert_eq!(ids(&pending), ["second"]);
    clock.set(T0 + 500 + TTL_MS);
    assert!(ids(&pending).is_empty());
}

fn a_clock_stepped_back_revives_no_taken_request(store: impl ApprovalStore + 'static) {
    let runtime = runtime();
    let (pending, clock) = pending_in(store, ttl());
    let approved = pending.request(prepared(&runtime, "a"), reason()).unwrap();
    let revoked = pending.request(prepared(&runtime, "r"), reason()).unwrap();
    clock.advance(Duration::from_millis(TTL_MS));
    assert!(matches!(
        pending.answer(ApprovalResponse::approve(approved.approval_id)),
        Ok(Answered::Expired(_))
    ));
    // Revoking an expired request takes it out too; it is recorded as expired, not revoked.
    assert_eq!(
        pending.revoke(revoked.approval_id).unwrap().approval_id,
        revoked.approval_id
    );

    clock.set(T0);
    assert!(
        pending.list().is_empty(),
        "NTP stepping back revives nothing"
    );
    for id in [approved.approval_id, revoked.approval_id] {
        assert_eq!(
            pending.answer(ApprovalResponse::approve(id)).unwrap_err(),
            ApprovalError::NotPending { approval_id: id }
        );
        assert_eq!(pending.state(id).unwrap(), Some(ApprovalState::Expired));
    }
}

fn expired_requests_do_not_count_against_the_cap(store: impl ApprovalStore + 'static) {
    let runtime = runtime();
    let (pending, clock) = pending_in(store, ttl().with_max_pending(1));
    pending
        .request(prepared(&runtime, "old"), reason())
        .unwrap();
    clock.set(T0 + TTL_MS - 1);
    assert_eq!(
        pending
            .request(prepared(&runtime, "refused"), reason())
            .unwrap_err(),
        ApprovalError::TooManyPending { limit: 1 }
    );
    clock.set(T0 + TTL_MS);
    let fresh = pending
        .request(prepared(&runtime, "new"), reason())
        .unwrap();
    assert_eq!(ids(&pending), ["new"]);
    assert!(matches!(
        pending.answer(ApprovalResponse::approve(fresh.approval_id)),
        Ok(Answered::Approved(_))
    ));
}

fn without_a_time_to_live_nothing_expires(store: impl ApprovalStore + 'static) {
    let runtime = runtime();
    let (pending, clock) = pending_in(store, ApprovalLimits::default().with_time_to_live(None));
    let request = pending.request(prepared(&runtime, "c"), reason()).unwrap();
    clock.set(u64::MAX);
    assert_eq!(ids(&pending), ["c"]);
    assert!(matches!(
        pending.answer(ApprovalResponse::reject(request.approval_id)),
        Ok(Answered::Rejected(_))
    ));
    assert_eq!(
        pending.state(request.approval_id).unwrap(),
        Some(ApprovalState::Rejected)
    );
}

fn a_real_time_to_live_expires_after_it_passes(store: impl ApprovalStore + 'static) {
    // The system clock (no clock injected): a short time to live, slept past.
    let runtime = runtime();
    let short = PendingApprovals::with_store(
        store,
        ApprovalLimits::default().with_time_to_live(Some(Duration::from_millis(100))),
    );
    let request = short.request(prepared(&runtime, "c"), reason()).unwrap();
    assert_eq!(short.len(), 1);
    std::thread::sleep(Duration::from_millis(250));
    assert!(short.is_empty());
    assert!(matches!(
        short.answer(ApprovalResponse::approve(request.approval_id)),
        Ok(Answered::Expired(_))
    ));
}

/// Well before a real time to live (10 s here, so a loaded machine cannot make it flaky) a
/// request is still answerable: the system clock advances by milliseconds, not by the TTL.
fn a_real_time_to_live_leaves_the_request_answerable_before_it(
    store: impl ApprovalStore + 'static,
) {
    let runtime = runtime();
    let pending = PendingApprovals::with_store(
        store,
        ApprovalLimits::default().with_time_to_live(Some(Duration::from_secs(10))),
    );
    let request = pending.request(prepared(&runtime, "c"), reason()).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(ids(&pending), ["c"]);
    assert!(matches!(
        pending.answer(ApprovalResponse::approve(request.approval_id)),
        Ok(Answered::Approved(_))
    ));
}

#[test]
fn memory_store_boundary_is_ttl_minus_one_answerable_ttl_expired() {
    boundary_is_ttl_minus_one_answerable_ttl_expired(MemoryApprovalStore::new());
}

#[test]
fn memory_store_listing_excludes_each_request_from_its_own_expiry() {
    listing_excludes_each_request_from_its_own_expiry(MemoryApprovalStore::new());
}

#[test]
fn memory_store_a_clock_stepped_back_revives_no_taken_request() {
    a_clock_stepped_back_revives_no_taken_request(MemoryApprovalStore::new());
}

#[test]
fn memory_store_expired_requests_do_not_count_against_the_cap() {
    expired_requests_do_not_count_against_the_cap(MemoryApprovalStore::new());
}

#[test]
fn memory_store_records_a_request_dropped_for_room_as_expired() {
    let runtime = runtime();
    let (pending, clock) = pending_in(MemoryApprovalStore::new(), ttl().with_max_pending(1));
    let old = pending
        .request(prepared(&runtime, "old"), reason())
        .unwrap();
    clock.advance(Duration::from_millis(TTL_MS));
    pending
        .request(prepared(&runtime, "new"), reason())
        .unwrap();
    assert_eq!(
        pending.state(old.approval_id).unwrap(),
        Some(ApprovalState::Expired)
    );
}

#[test]
fn memory_store_without_a_time_to_live_nothing_expires() {
    without_a_time_to_live_nothing_expires(MemoryApprovalStore::new());
}

#[test]
fn memory_store_a_real_time_to_live_expires_after_it_passes() {
    a_real_time_to_live_expires_after_it_passes(MemoryApprovalStore::new());
}

#[test]
fn memory_store_a_real_time_to_live_leaves_the_request_answerable_before_it() {
    a_real_time_to_live_leaves_the_request_answerable_before_it(MemoryApprovalStore::new());
}

#[test]
fn memory_store_records_outcomes_of_approved_calls_only() {
    let runtime = runtime();
    let (pending, _clock) = pending_in(MemoryApprovalStore::new(), ttl());
    let approved = pending.request(prepared(&runtime, "a"), reason()).unwrap();
    let rejected = pending.request(prepared(&runtime, "r"), reason()).unwrap();
    let _ = pending
        .answer(ApprovalResponse::approve(approved.approval_id))
        .unwrap();
    let _ = pending
        .answer(ApprovalResponse::reject(rejected.approval_id))
        .unwrap();
    pending
        .record_outcome(approved.approval_id, ExecutionOutcome::Error)
        .unwrap();
    pending
        .record_outcome(rejected.approval_id, ExecutionOutcome::Ok)
        .unwrap();
    assert_eq!(
        pending.state(approved.approval_id).unwrap(),
        Some(ApprovalState::Approved {
            outcome: Some(ExecutionOutcome::Error)
        })
    );
    assert_eq!(
        pending.state(rejected.approval_id).unwrap(),
        Some(ApprovalState::Rejected)
    );
}

#[test]
fn controller_denies_an_answer_at_the_time_to_live_and_runs_nothing() {
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let clock = ManualClock::new(T0);
    let controller = ToolController::new(
        ToolRegistry::new([crate::common::counted(
            "count",
            json!({"type": "object"}),
            &runs,
        )])
        .unwrap(),
        ToolPolicy::new(Vec::<String>::new(), ["count"]).unwrap(),
    )
    .with_clock(clock.clone())
    .with_approval_limits(ttl());
    let ask = |id: &str| match controller.handle(ToolCall::new(id, "count", json!({}))) {
        Outcome::PendingApproval(request) => request,
        _ => panic!("count needs confirmation"),
    };
    let (in_time, too_late) = (ask("in_time"), ask("too_late"));

    clock.set(T0 + TTL_MS - 1);
    let result = controller
        .resolve(ApprovalResponse::approve(in_time.approval_id))
        .unwrap();
    assert_eq!(result, ToolResult::ok("in_time", "run 1"));

    clock.set(T0 + TTL_MS);
    let result = controller
        .resolve(ApprovalResponse::approve(too_late.approval_id))
        .unwrap();
    assert!(result.is_error);
    assert!(result.content.contains("expired"), "{}", result.content);
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(
        controller.approval_state(too_late.approval_id).unwrap(),
        Some(ApprovalState::Expired)
    );
    assert_eq!(
        controller.approval_state(in_time.approval_id).unwrap(),
        Some(ApprovalState::Approved {
            outcome: Some(ExecutionOutcome::Ok)
        })
    );
}

#[test]
fn a_request_expires_after_a_real_time_to_live_and_not_before() {
    let runtime = runtime();
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

#[cfg(feature = "postgres")]
mod postgres_clock;
#[cfg(feature = "sqlite")]
mod sqlite;
