//! The PostgreSQL approval store and audit sink (feature `postgres`) against a real server: nodes
//! sharing requests, one clock for expiry, the cap across nodes, published changes, refused
//! schemas and rows, and one audit chain under concurrent writers. Without `TOOLGATE_PG_URL` each
//! test prints a note and passes (`.ci/postgres` starts a server and sets it; CI always does).
#![cfg(feature = "postgres")]

use crate::postgres_support;
use toolgate::approvals::ApprovalError;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use postgres_support::*;
use serde_json::json;
use toolgate::approvals::{
    ApprovalLimits, ApprovalState, ApprovalStore, ExecutionOutcome, PostgresApprovalStore,
    Transition,
};
use toolgate::audit::{AuditEntryProblem, AuditSink, PostgresAuditSink, PostgresAuditVerifyError};
use toolgate::*;

#[test]
fn a_request_made_on_one_node_is_listed_and_answered_once_on_another() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "two_nodes");
    let (first, second) = (
        node(&db, "first", Duration::ZERO),
        node(&db, "second", Duration::ZERO),
    );
    let id = ask(&first, "c1");
    let waiting = second.pending();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].approval_id, id);
    assert!(waiting[0].digest_matches());
    let result = second.resolve(ApprovalResponse::approve(id)).unwrap();
    assert_eq!(result, ToolResult::ok("c1", "applied c1"));
    assert_eq!(
        first.resolve(ApprovalResponse::approve(id)),
        Err(ApprovalError::NotPending { approval_id: id })
    );
    assert_eq!(
        first.approval_state(id).unwrap(),
        Some(ApprovalState::Approved {
            outcome: Some(ExecutionOutcome::Ok)
        })
    );
    assert_eq!(db.run_lines(), ["c1"]);
}

#[test]
fn sixteen_threads_on_four_nodes_consume_one_request_once() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "race");
    let nodes: Vec<Arc<ToolController>> = (0..4)
        .map(|n| Arc::new(node(&db, &format!("node{n}"), Duration::ZERO)))
        .collect();
    for round in 0..5 {
        let id = ask(&nodes[0], &format!("r{round}"));
        let barrier = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|t| {
                let (node, barrier) = (Arc::clone(&nodes[t % 4]), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    node.resolve(ApprovalResponse::approve(id))
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let approved = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(approved, 1, "round {round}: {results:?}");
        assert!(
            results
                .iter()
                .all(|r| r.is_ok() || *r == Err(ApprovalError::NotPending { approval_id: id }))
        );
    }
    assert_eq!(db.run_lines().len(), 5, "one run per round");
}

/// A request as `PendingApprovals` makes it, to drive the store directly with chosen clocks.
fn request(name: &str) -> ApprovalRequest {
    let runtime = ToolRuntime::new(
        ToolRegistry::new([logging_tool(
            std::env::temp_dir().join("unused"),
            Duration::ZERO,
        )])
        .unwrap(),
    );
    let prepared = runtime
        .prepare(ToolCall::new(name, "apply_patch", json!({"patch": name})))
        .unwrap();
    let pending = toolgate::approvals::PendingApprovals::new();
    pending
        .request(prepared, Reason::new("asks").unwrap())
        .unwrap()
}

const HOUR_MS: u64 = 3_600_000;

#[test]
fn expiry_is_decided_by_the_database_clock_not_a_skewed_node() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "clock");
    let store = db.store("skewed");
    let real_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;

    // A node whose clock runs an hour fast holds a request for a minute; a node whose clock runs
    // a day fast answers it at once: by the database's clock it has not expired.
    let fast = request("fast");
    let ahead = real_now + HOUR_MS;
    store
        .insert(&fast, Some(ahead + 60_000), 100, ahead)
        .unwrap();
    assert_eq!(store.pending(real_now + 24 * HOUR_MS).unwrap().len(), 1);
    let (_, expired) = store
        .take(
            fast.approval_id,
            Transition::Approve,
            &toolgate::approvals::admit_any,
            real_now + 24 * HOUR_MS,
        )
        .unwrap();
    assert!(!expired, "a fast node clock must not expire a request");

    // A node whose clock is stuck at the epoch holds one for 300 ms; after 600 ms it has expired
    // although that node's clock says no time passed.
    let slow = request("slow");
    store.insert(&slow, Some(300), 100, 0).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        store.pending(0).unwrap().is_empty(),
        "expired by the database clock"
    );
    let (_, expired) = store
        .take(
            slow.approval_id,
            Transition::Approve,
            &toolgate::approvals::admit_any,
            0,
        )
        .unwrap();
    assert!(expired, "a slow node clock must not keep a request alive");
    assert_eq!(
        store.state(slow.approval_id).unwrap(),
        Some(ApprovalState::Expired)
    );
}

#[test]
fn expiry_rejection_and_revocation_are_shared_by_every_node() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "lifecycle");
    let expiring = node(&db, "a", Duration::ZERO)
        .with_approval_limits(ApprovalLimits::default().with_time_to_live(Some(Duration::ZERO)));
    let other = node(&db, "b", Duration::ZERO);
    let expired = ask(&expiring, "e");
    let result = other.resolve(ApprovalResponse::approve(expired)).unwrap();
    assert!(result.content.contains("expired"), "{result:?}");
    assert_eq!(
        expiring.approval_state(expired).unwrap(),
        Some(ApprovalState::Expired)
    );

    let rejected = ask(&other, "r");
    let result = expiring
        .resolve(ApprovalResponse::reject(rejected))
        .unwrap();
    assert!(result.is_error);
    assert_eq!(
        other.approval_state(rejected).unwrap(),
        Some(ApprovalState::Rejected)
    );

    let revoked = ask(&other, "v");
    expiring.revoke(revoked).unwrap();
    assert_eq!(
        other.approval_state(revoked).unwrap(),
        Some(ApprovalState::Revoked)
    );
    assert!(other.resolve(ApprovalResponse::approve(revoked)).is_err());
    assert!(db.run_lines().is_empty());
}

#[test]
fn the_cap_counts_the_requests_of_every_node_even_when_they_ask_at_once() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "cap");
    let limits = ApprovalLimits::default().with_max_pending(3);
    let nodes: Vec<Arc<ToolController>> = (0..4)
        .map(|n| {
            Arc::new(node(&db, &format!("cap{n}"), Duration::ZERO).with_approval_limits(limits))
        })
        .collect();
    let barrier = Arc::new(Barrier::new(12));
    let handles: Vec<_> = (0..12)
        .map(|t| {
            let (node, barrier) = (Arc::clone(&nodes[t % 4]), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                matches!(
                    node.handle(ToolCall::new(
                        format!("c{t}"),
                        "apply_patch",
                        json!({"patch": "+"})
                    )),
                    Outcome::PendingApproval(_)
                )
            })
        })
        .collect();
    let held = handles
        .into_iter()
        .filter_map(|h| h.join().unwrap().then_some(()))
        .count();
    assert_eq!(held, 3, "exactly the cap is held across nodes");
    assert_eq!(nodes[0].pending().len(), 3);
}

#[test]
fn changes_are_published_to_every_node_and_a_node_waits_for_an_answer() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "notify");
    let watcher = db.store("watcher");
    let mut changes = watcher.subscribe().unwrap();
    let asking = node(&db, "asking", Duration::ZERO);
    let id = ask(&asking, "n1");
    let first = changes
        .next_within(Duration::from_secs(5))
        .unwrap()
        .unwrap();
    assert_eq!(
        (first.approval_id, first.state),
        (id, ApprovalState::Pending)
    );

    // A node waits for the answer another node gives 300 ms later.
    let answering = Arc::new(node(&db, "answering", Duration::ZERO));
    let answerer = {
        let answering = Arc::clone(&answering);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            answering.resolve(ApprovalResponse::approve(id)).unwrap()
        })
    };
    let started = Instant::now();
    let state = watcher
        .wait_for_answer(id, Duration::from_secs(20))
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(answerer.join().unwrap(), ToolResult::ok("n1", "applied n1"));
    assert!(
        matches!(state, Some(ApprovalState::Approved { .. })),
        "{state:?}"
    );
    assert!(
        waited < Duration::from_secs(10),
        "woken by the change, not the timeout"
    );

    // The feed saw the answer and then the recorded outcome.
    let mut seen = Vec::new();
    while let Some(change) = changes.next_within(Duration::from_millis(500)).unwrap() {
        seen.push(change.state);
    }
    assert_eq!(
        seen,
        [
            ApprovalState::Approved { outcome: None },
            ApprovalState::Approved {
                outcome: Some(ExecutionOutcome::Ok)
            }
        ]
    );

    // Nobody answers: the wait ends at its timeout with the request still pending.
    let unanswered = ask(&asking, "n2");
    let started = Instant::now();
    assert_eq!(
        watcher
            .wait_for_answer(unanswered, Duration::from_millis(300))
            .unwrap(),
        Some(ApprovalState::Pending)
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn a_wait_for_one_request_ignores_the_changes_of_others() {
    // While a node waits for request A, request B is made and answered: the wait neither returns
    // B's state nor ends early; it ends at its timeout with A still pending.
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "wait_one");
    let watcher = db.store("watcher");
    let asking = Arc::new(node(&db, "asking", Duration::ZERO));
    let waited_for = ask(&asking, "a");
    let other = {
        let asking = Arc::clone(&asking);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let b = ask(&asking, "b");
            std::thread::sleep(Duration::from_millis(100));
            asking.resolve(ApprovalResponse::approve(b)).unwrap()
        })
    };
    let started = Instant::now();
    let state = watcher
        .wait_for_answer(waited_for, Duration::from_millis(1_500))
        .unwrap();
    assert_eq!(state, Some(ApprovalState::Pending));
    assert!(started.elapsed() >= Duration::from_millis(1_500));
    assert_eq!(other.join().unwrap(), ToolResult::ok("b", "applied b"));
}

mod audit_chain;
mod faults;

/// The approval and audit tables of a schema are claimed for one deployment: its instances (one
/// name) share them, another deployment is refused, and a name's successor (a rotated key) takes
/// them over. Two deployments on one schema each answered and ran the other's held calls.
#[test]
fn a_schemas_tables_belong_to_one_deployment() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "owners");
    let (store, sink) = (db.store("first"), db.sink("first"));
    let names = |names: &[&str]| {
        names
            .iter()
            .map(|name| (*name).to_owned())
            .collect::<Vec<_>>()
    };
    // Nothing is claimed for no name.
    store.claim(&[]).unwrap();
    store.claim(&names(&["a"])).unwrap();
    sink.claim(&names(&["a"])).unwrap();
    // Another instance of the deployment, and the same again.
    db.store("second").claim(&names(&["a"])).unwrap();
    db.sink("second").claim(&names(&["a"])).unwrap();
    // Another deployment: refused, naming the schema, for each kind of table.
    let refused = store.claim(&names(&["b"])).unwrap_err().to_string();
    assert!(
        refused.contains(&format!(
            "the approval tables in schema `{}` belong to another deployment",
            db.schema
        )),
        "{refused}"
    );
    let refused = sink.claim(&names(&["b"])).unwrap_err().to_string();
    assert!(refused.contains("the audit tables"), "{refused}");
    // The message gives the statement that hands the tables over (a key changed otherwise than
    // by one rotation), and it does.
    let statement = format!(
        "DELETE FROM \"{}\".toolgate_owners WHERE store = 'approval'",
        db.schema
    );
    let refused = store.claim(&names(&["z"])).unwrap_err().to_string();
    assert!(refused.contains(&statement), "{refused}");
    db.admin().batch_execute(&statement).unwrap();
    store.claim(&names(&["z"])).unwrap();
    store.claim(&names(&["a", "z"])).unwrap();
    // A rotated key: the new name first, the old one accepted and replaced.
    store.claim(&names(&["c", "a"])).unwrap();
    assert!(store.claim(&names(&["a"])).is_err());
    store.claim(&names(&["c"])).unwrap();
    // The audit tables keep their own owner.
    sink.claim(&names(&["a"])).unwrap();
}
