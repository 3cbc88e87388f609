//! An answer for the call the person read: its digest is checked inside the store's take, in the
//! same step that moves the request out of `Pending` — in memory, in SQLite and in PostgreSQL. A
//! request that holds another call by then (replaced whole in its store, digest and all) is not
//! taken, keeps waiting, and nothing runs; the same answer without a digest would have run it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
#[cfg(feature = "sqlite")]
use toolgate::approvals::SqliteApprovalStore;
use toolgate::approvals::{ApprovalError, ApprovalState, ApprovalStore, MemoryApprovalStore};
use toolgate::*;

use crate::common::*;

/// A controller asking about `apply_patch` over `store`, with its run counter.
fn asking(store: Arc<dyn ApprovalStore>) -> (ToolController, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    )
    .with_approval_store(store);
    (controller, runs)
}

fn held(controller: &ToolController, patch: &str) -> ApprovalRequest {
    let call = ToolCall::new("c", "apply_patch", json!({ "patch": patch }));
    match controller.handle(call) {
        Outcome::PendingApproval(request) => request,
        other => panic!("apply_patch asks: {other:?}"),
    }
}

/// A fresh scratch directory for one test's ledgers.
#[cfg(feature = "sqlite")]
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-digest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// In every store: an answer naming another digest takes nothing and the request keeps waiting;
/// the answer naming the digest the person read runs the call once.
fn answers_only_the_call_read(store: Arc<dyn ApprovalStore>) {
    let (controller, runs) = asking(Arc::clone(&store));
    let request = held(&controller, "+ok");
    let other = format!("sha256:{}", "0".repeat(64));
    for digest in [other.as_str(), "", &request.digest.to_uppercase()] {
        let answer = ApprovalResponse::approve(request.approval_id).for_digest(digest);
        match controller.resolve(answer) {
            Err(ApprovalError::NotTheCallRead { approval_id }) => {
                assert_eq!(approval_id, request.approval_id);
            }
            other => panic!("digest {digest:?}: {other:?}"),
        }
        assert_eq!(
            store.state(request.approval_id).unwrap(),
            Some(ApprovalState::Pending),
            "a refused answer leaves the request waiting"
        );
    }
    // Rejecting for another digest is refused the same way: the answer is for the call read.
    let reject = ApprovalResponse::reject(request.approval_id).for_digest(other);
    assert!(matches!(
        controller.resolve(reject),
        Err(ApprovalError::NotTheCallRead { .. })
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let now = toolgate::clock::Clock::now_ms(&toolgate::clock::SystemClock);
    let waiting = store.waiting(request.approval_id, now).unwrap();
    assert_eq!(
        waiting.map(|waiting| waiting.digest),
        Some(request.digest.clone())
    );
    // Read alone, an expired request is not waiting (by the store's clock or the node's).
    let later = now + 2 * 3_600_000;
    if !store_decides_expiry_by_its_own_clock(&store) {
        assert!(store.waiting(request.approval_id, later).unwrap().is_none());
    }

    let answer = ApprovalResponse::approve(request.approval_id).for_digest(&request.digest);
    let resolved = block_on(controller.resolve_request_async(answer)).unwrap();
    assert!(!resolved.result.is_error, "{:?}", resolved.result);
    assert!(!resolved.expired);
    assert_eq!(resolved.request.approval_id, request.approval_id);
    assert_eq!(resolved.request.digest, request.digest);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(matches!(
        store.state(request.approval_id).unwrap(),
        Some(ApprovalState::Approved { .. })
    ));
}

/// PostgreSQL reads expiry from the server's clock, never the node's `now_ms`.
fn store_decides_expiry_by_its_own_clock(store: &Arc<dyn ApprovalStore>) -> bool {
    format!("{store:?}").starts_with("PostgresApprovalStore")
}

#[test]
fn an_answer_for_another_digest_takes_nothing_in_memory() {
    answers_only_the_call_read(Arc::new(MemoryApprovalStore::new()));
}

#[cfg(feature = "sqlite")]
#[test]
fn an_answer_for_another_digest_takes_nothing_in_sqlite() {
    let store = SqliteApprovalStore::open(scratch("each").join("ledger.db")).unwrap();
    answers_only_the_call_read(Arc::new(store));
}

#[cfg(feature = "postgres")]
#[test]
fn an_answer_for_another_digest_takes_nothing_in_postgres() {
    use crate::postgres_support::{Db, server_url};
    let Some(base) = server_url() else { return };
    let db = Db::new(&base, "answer_digest");
    let store = toolgate::approvals::PostgresApprovalStore::connect(&db.url("node")).unwrap();
    answers_only_the_call_read(Arc::new(store));
}

/// The page's old steps read the waiting list, compared the digest, then answered by id: a
/// request replaced whole in the ledger between the read and the answer — another call, with
/// its own consistent digest — ran. Checked in the take, the answer for the call read takes
/// nothing; only an answer given without a digest runs what the id holds.
#[cfg(feature = "sqlite")]
#[test]
fn a_request_replaced_whole_after_it_was_read_is_not_answered() {
    let dir = scratch("replaced");
    let path = dir.join("ledger.db");
    let store: Arc<dyn ApprovalStore> = Arc::new(SqliteApprovalStore::open(&path).unwrap());
    let (controller, runs) = asking(Arc::clone(&store));
    let read = held(&controller, "+ok");

    // Another call, held in a ledger of its own, copied over the row the person read.
    let (other_controller, _) = asking(Arc::new(MemoryApprovalStore::new()));
    let mut replacement = held(&other_controller, "rm -rf /");
    assert_ne!(replacement.digest, read.digest);
    replacement.approval_id = read.approval_id;
    let connection = rusqlite::Connection::open(&path).unwrap();
    let changed = connection
        .execute(
            "UPDATE approvals SET request = ?1 WHERE id = ?2",
            rusqlite::params![
                serde_json::to_string(&replacement).unwrap(),
                read.approval_id.to_string()
            ],
        )
        .unwrap();
    assert_eq!(changed, 1);

    let answer = ApprovalResponse::approve(read.approval_id).for_digest(&read.digest);
    assert!(matches!(
        controller.resolve(answer),
        Err(ApprovalError::NotTheCallRead { .. })
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    assert_eq!(
        store.state(read.approval_id).unwrap(),
        Some(ApprovalState::Pending)
    );

    // Without the digest the id's call runs: why the page and the CLI send it.
    let result = controller
        .resolve(ApprovalResponse::approve(read.approval_id))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// An approver the request's approvers refuse is refused inside the take as well: the request
/// keeps waiting for someone who may answer, and its digest check and approver check are one
/// step (a right digest does not let the wrong approver in).
#[test]
fn a_refused_approver_with_the_right_digest_takes_nothing() {
    let registry = registry([counted(
        "apply_patch",
        patch_schema(),
        &Arc::new(AtomicUsize::new(0)),
    )]);
    let rules = rule_policy(
        r#"{"rules": [{"id": "ops-approve", "tool": "apply_patch", "action": "ask", "reason": "patches need ops",
             "approvers": {"groups": ["ops"]}}]}"#,
        &registry,
    );
    let store: Arc<dyn ApprovalStore> = Arc::new(MemoryApprovalStore::new());
    let controller = ToolController::new(registry, rules).with_approval_store(Arc::clone(&store));
    let request = held(&controller, "+ok");
    let outsider = Principal::new("mallory", ["dev"]);
    let answer = ApprovalResponse::approve(request.approval_id)
        .for_digest(&request.digest)
        .by_principal(outsider);
    assert!(matches!(
        controller.resolve(answer),
        Err(ApprovalError::ApproverRefused { .. })
    ));
    assert_eq!(
        store.state(request.approval_id).unwrap(),
        Some(ApprovalState::Pending)
    );
    let ops = Principal::new("olga", ["ops"]);
    let answer = ApprovalResponse::approve(request.approval_id)
        .for_digest(&request.digest)
        .by_principal(ops);
    assert!(!controller.resolve(answer).unwrap().is_error);
}

/// A store of someone's own that skips the `admit` check: the answer for another digest is
/// checked again on what was taken, and nothing runs (the request is spent, not run).
#[test]
fn a_store_that_skips_the_check_runs_nothing_for_another_digest() {
    #[derive(Debug)]
    struct Careless(MemoryApprovalStore);
    impl ApprovalStore for Careless {
        fn insert(
            &self,
            request: &ApprovalRequest,
            expires_ms: Option<u64>,
            max_pending: usize,
            now_ms: u64,
        ) -> Result<(), ApprovalError> {
            self.0.insert(request, expires_ms, max_pending, now_ms)
        }
        fn take(
            &self,
            approval_id: toolgate::approvals::ApprovalId,
            transition: toolgate::approvals::Transition,
            _admit: toolgate::approvals::Admit<'_>,
            now_ms: u64,
        ) -> Result<(ApprovalRequest, bool), ApprovalError> {
            let skip: toolgate::approvals::Admit<'_> = &toolgate::approvals::admit_any;
            self.0.take(approval_id, transition, skip, now_ms)
        }
        fn pending(&self, now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
            self.0.pending(now_ms)
        }
        fn record_outcome(
            &self,
            approval_id: toolgate::approvals::ApprovalId,
            outcome: toolgate::approvals::ExecutionOutcome,
        ) -> Result<(), ApprovalError> {
            self.0.record_outcome(approval_id, outcome)
        }
        fn state(
            &self,
            approval_id: toolgate::approvals::ApprovalId,
        ) -> Result<Option<ApprovalState>, ApprovalError> {
            self.0.state(approval_id)
        }
    }
    let store: Arc<dyn ApprovalStore> = Arc::new(Careless(MemoryApprovalStore::new()));
    let (controller, runs) = asking(Arc::clone(&store));
    let request = held(&controller, "+ok");
    // The trait's own `waiting` (this store does not override it) finds the one request asked.
    let now = toolgate::clock::Clock::now_ms(&toolgate::clock::SystemClock);
    let found = store.waiting(request.approval_id, now).unwrap();
    assert_eq!(
        found.map(|found| found.approval_id),
        Some(request.approval_id)
    );
    let other_id: toolgate::approvals::ApprovalId =
        "00112233445566778899aabbccddeeff".parse().unwrap();
    assert!(store.waiting(other_id, now).unwrap().is_none());
    let other = format!("sha256:{}", "0".repeat(64));
    let answer = ApprovalResponse::approve(request.approval_id).for_digest(other);
    assert!(matches!(
        controller.resolve(answer),
        Err(ApprovalError::NotTheCallRead { .. })
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    assert_eq!(
        store.state(request.approval_id).unwrap(),
        Some(ApprovalState::Approved {
            outcome: Some(toolgate::approvals::ExecutionOutcome::Error)
        }),
        "spent, and marked as not run successfully"
    );
}

/// A check that panics inside a PostgreSQL take gives its connection back (as broken): the
/// store, with a pool of one, still answers afterwards, and the request still waits.
#[cfg(feature = "postgres")]
#[test]
fn a_panicking_check_gives_its_postgres_connection_back() {
    use crate::postgres_support::{Db, server_url};
    let Some(base) = server_url() else { return };
    let db = Db::new(&base, "panicking_admit");
    let config: postgres::Config = db.url("node").parse().unwrap();
    let store =
        Arc::new(toolgate::approvals::PostgresApprovalStore::connect_with(config, 1).unwrap());
    let (controller, _) = asking(store.clone());
    let request = held(&controller, "+ok");
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = store.take(
            request.approval_id,
            toolgate::approvals::Transition::Approve,
            &|_: &ApprovalRequest| panic!("a check that panics"),
            0,
        );
    }));
    assert!(panicked.is_err());
    assert_eq!(
        store.state(request.approval_id).unwrap(),
        Some(ApprovalState::Pending)
    );
    let answer = ApprovalResponse::approve(request.approval_id).for_digest(&request.digest);
    assert!(!controller.resolve(answer).unwrap().is_error);
}
