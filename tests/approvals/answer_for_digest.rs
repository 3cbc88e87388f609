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

    let answer = ApprovalResponse::approve(request.approval_id).for_digest(&request.digest);
    let (result, answered) = block_on(controller.resolve_request_async(answer)).unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(answered.approval_id, request.approval_id);
    assert_eq!(answered.digest, request.digest);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(matches!(
        store.state(request.approval_id).unwrap(),
        Some(ApprovalState::Approved { .. })
    ));
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
