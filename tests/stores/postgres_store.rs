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

#[test]
fn an_audit_append_that_fails_for_another_reason_than_a_lost_connection_fails_at_once() {
    // Only a lost connection is retried (for up to 10 s): a table gone from under the sink is
    // reported at once, and nothing is appended.
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "audit_fails");
    let sink = db.sink("writer");
    sink.record(&audit_event(0)).unwrap();
    db.admin()
        .batch_execute("DROP TABLE toolgate_audit_queue")
        .unwrap();
    let started = Instant::now();
    let error = sink.record(&audit_event(1)).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "retried for {:?}: {error}",
        started.elapsed()
    );
    assert!(error.to_string().contains("cannot append"), "{error}");
}

#[test]
fn audit_entries_longer_than_a_read_buffer_verify() {
    // `verify` reads the table as the file format's lines through an 8 KiB buffer: an entry of
    // 40 KB is read in pieces and must come out whole.
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "audit_long");
    let sink = db.sink("writer");
    sink.record(&audit_event(0)).unwrap();
    let mut long = audit_event(1);
    long.reason = Some("r".repeat(40_000));
    sink.record(&long).unwrap();
    sink.record(&audit_event(2)).unwrap();
    let tip = sink.verify().unwrap();
    assert_eq!(tip.entries, 3);
}

#[test]
fn a_change_feed_is_also_a_blocking_iterator() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "feed_iter");
    let mut changes = db.store("watcher").subscribe().unwrap();
    let asking = node(&db, "asking", Duration::ZERO);
    let id = ask(&asking, "i1");
    let change = changes.next().expect("a change").expect("the feed is live");
    assert_eq!(
        (change.approval_id, change.state),
        (id, ApprovalState::Pending)
    );
    asking.resolve(ApprovalResponse::reject(id)).unwrap();
    let change = changes.next().expect("a change").expect("the feed is live");
    assert_eq!(
        (change.approval_id, change.state),
        (id, ApprovalState::Rejected)
    );
}

#[test]
fn a_full_pool_whose_connections_were_all_lost_reconnects_at_once() {
    // Two connections at most, both open and idle, both terminated: the next operation finds them
    // dead, drops them from the count and opens a new one, instead of waiting for a slot that
    // the lost connections still seemed to hold.
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "pool_loss");
    let config: postgres::Config = db.url("pool_loss_app").parse().unwrap();
    let store = Arc::new(PostgresApprovalStore::connect_with(config, 2).unwrap());
    let backends = |admin: &mut postgres::Client| -> i64 {
        admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pool_loss_app'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let mut admin = db.admin();
    // Two threads reading at once until both connections exist.
    let deadline = Instant::now() + Duration::from_secs(20);
    while backends(&mut admin) < 2 {
        assert!(
            Instant::now() < deadline,
            "the pool never opened two connections"
        );
        let barrier = Arc::new(Barrier::new(2));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..50 {
                        store.pending(0).unwrap();
                    }
                })
            })
            .collect();
        readers.into_iter().for_each(|r| r.join().unwrap());
    }
    // Four threads at once never get a third connection.
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for _ in 0..100 {
                    store.pending(0).unwrap();
                }
            })
        })
        .collect();
    readers.into_iter().for_each(|r| r.join().unwrap());
    let open = backends(&mut admin);
    assert!(
        open <= 2,
        "the pool opened {open} connections, more than its limit"
    );
    // Three rounds: every lost connection must leave the count, or the pool fills with ghosts.
    for round in 0..3 {
        admin
            .batch_execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = 'pool_loss_app'",
            )
            .unwrap();
        while backends(&mut admin) > 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let started = Instant::now();
        store.pending(0).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "round {round}: waited {:?} for a slot",
            started.elapsed()
        );
    }
}

#[test]
fn an_audit_append_whose_connection_was_terminated_before_it_retries_on_a_new_one() {
    // The sink's idle connection is terminated between two appends: the second finds it gone
    // before anything could commit, reconnects and appends, once.
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "audit_terminated");
    let sink = db.sink("audit_terminated_writer");
    sink.record(&audit_event(0)).unwrap();
    let mut admin = db.admin();
    let terminated: i64 = admin
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = 'audit_terminated_writer') AS t",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(terminated, 1);
    sink.record(&audit_event(1)).unwrap();
    assert_eq!(sink.verify().unwrap().entries, 2);
}

#[test]
fn a_store_operation_that_fails_for_another_reason_than_a_lost_connection_fails_at_once() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "store_fails");
    let store = db.store("reader");
    use toolgate::approvals::ApprovalStore as _;
    store.pending(0).unwrap();
    db.admin()
        .batch_execute("DROP TABLE toolgate_approvals CASCADE")
        .unwrap();
    let started = Instant::now();
    let error = store.pending(0).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "retried for {:?}: {error}",
        started.elapsed()
    );
}

#[test]
fn a_store_names_the_schema_it_works_in() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "named");
    assert_eq!(db.store("first").schema(), db.schema);
}

#[test]
fn a_schema_from_a_newer_version_is_refused() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "newer");
    drop(db.store("first"));
    drop(db.sink("first"));
    db.admin()
        .batch_execute("UPDATE toolgate_meta SET value = 99")
        .unwrap();
    match PostgresApprovalStore::connect(&db.url("again")) {
        Err(ApprovalError::Store(error)) => {
            assert!(error.message().contains("schema version 99"), "{error}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let error = PostgresAuditSink::connect(&db.url("again")).unwrap_err();
    assert!(error.message.contains("schema version 99"), "{error}");
}

#[test]
fn an_audit_chain_of_schema_version_1_is_migrated_and_continued() {
    // Version 1 appended under the tip's lock, without a queue, keys or salts. Its entries stay
    // as they are (same places, same hashes) and the chain goes on after them.
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "audit_v1");
    let sink = db.sink("old");
    for n in 0..3 {
        sink.record(&audit_event(n)).unwrap();
    }
    let head = sink.tree_head().unwrap();
    drop(sink);
    // Back to version 1's layout.
    db.admin()
        .batch_execute(
            "DROP TABLE toolgate_audit_queue; DROP TABLE toolgate_audit_salts;
             ALTER TABLE toolgate_audit DROP COLUMN entry_key;
             UPDATE toolgate_meta SET value = 1 WHERE key = 'audit_schema_version'",
        )
        .unwrap();
    let sink = db.sink("new");
    assert_eq!(sink.verify().unwrap().entries, 3);
    sink.record(&audit_event(3)).unwrap();
    assert_eq!(sink.verify().unwrap().entries, 4);
    assert_eq!(sink.verify_extends(&head).unwrap().size, 4);
    let version: i64 = db
        .admin()
        .query_one(
            "SELECT value FROM toolgate_meta WHERE key = 'audit_schema_version'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(version, 2);
}

#[test]
fn store_errors_keep_the_postgres_error_as_their_source() {
    let Some(_) = server_url() else { return };
    let error = PostgresApprovalStore::connect(
        "postgresql://toolgate@%2Fnonexistent-toolgate-dir/postgres",
    )
    .unwrap_err();
    let chain: Vec<&dyn std::error::Error> =
        std::iter::successors(std::error::Error::source(&error), |e| e.source()).collect();
    assert!(
        chain.iter().any(|cause| cause.is::<postgres::Error>()),
        "no postgres::Error in the chain of {error}"
    );
    let error = PostgresAuditSink::connect("postgresql://toolgate@%2Fnonexistent-toolgate-dir/x")
        .unwrap_err();
    assert!(
        std::error::Error::source(&error).is_some_and(|cause| cause.is::<postgres::Error>()),
        "{error}"
    );
}

#[test]
fn a_tampered_stored_request_is_not_run() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "tampered");
    let node = node(&db, "n", Duration::ZERO);
    let id = ask(&node, "ok");
    // Someone with write access to the table swaps the arguments but cannot redo the digest.
    db.admin()
        .execute(
            "UPDATE toolgate_approvals SET request = replace(request, '\"patch\":\"ok\"', '\"patch\":\"rm -rf /\"') WHERE id = $1",
            &[&id.to_string()],
        )
        .unwrap();
    let result = node.resolve(ApprovalResponse::approve(id)).unwrap();
    assert!(
        result.content.contains("does not match the digest"),
        "{result:?}"
    );
    assert!(db.run_lines().is_empty());

    // An unreadable row is refused and left as it was.
    let broken = ask(&node, "broken");
    db.admin()
        .execute(
            "UPDATE toolgate_approvals SET request = '{' WHERE id = $1",
            &[&broken.to_string()],
        )
        .unwrap();
    assert!(matches!(
        node.resolve(ApprovalResponse::approve(broken)),
        Err(ApprovalError::Store(_))
    ));
    assert_eq!(
        node.approval_state(broken).unwrap(),
        Some(ApprovalState::Pending)
    );
}

// ---- the shared audit chain ----------------------------------------------------------------------

#[test]
fn four_nodes_with_four_threads_each_append_one_linear_chain() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "chain");
    let sinks: Vec<Arc<PostgresAuditSink>> = (0..4)
        .map(|n| Arc::new(db.sink(&format!("sink{n}"))))
        .collect();
    let barrier = Arc::new(Barrier::new(16));
    let handles: Vec<_> = (0..16)
        .map(|t| {
            let (sink, barrier) = (Arc::clone(&sinks[t % 4]), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                for n in 0..25 {
                    sink.record(&audit_event(t * 100 + n)).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let tip = sinks[0].verify().unwrap();
    assert_eq!(tip.entries, 400);
}

#[test]
fn an_edited_deleted_or_cut_audit_entry_is_reported_at_the_first_bad_entry() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "tamper");
    let sink = db.sink("writer");
    for n in 0..10 {
        sink.record(&audit_event(n)).unwrap();
    }
    assert_eq!(sink.verify().unwrap().entries, 10);
    let mut admin = db.admin();

    admin
        .batch_execute(
            "UPDATE toolgate_audit SET event = replace(event, '\"c4\"', '\"c9\"') WHERE seq = 4",
        )
        .unwrap();
    match sink.verify() {
        Err(PostgresAuditVerifyError::Broken { seq: 4, problem }) => {
            assert_eq!(problem, AuditEntryProblem::HashMismatch)
        }
        other => panic!("{other:?}"),
    }
    admin
        .batch_execute(
            "UPDATE toolgate_audit SET event = replace(event, '\"c9\"', '\"c4\"') WHERE seq = 4",
        )
        .unwrap();
    assert!(sink.verify().is_ok(), "restored");

    admin
        .batch_execute("UPDATE toolgate_audit SET event = event || ' ' WHERE seq = 2")
        .unwrap();
    assert!(matches!(
        sink.verify(),
        Err(PostgresAuditVerifyError::Broken {
            seq: 2,
            problem: AuditEntryProblem::NotCanonical
        })
    ));
    admin
        .batch_execute("UPDATE toolgate_audit SET event = rtrim(event) WHERE seq = 2")
        .unwrap();

    // The tip row's hash edited, its count not: still a mismatch.
    admin
        .batch_execute("UPDATE toolgate_audit_tip SET last_hash = 'sha256:' || repeat('0', 64)")
        .unwrap();
    assert!(matches!(
        sink.verify(),
        Err(PostgresAuditVerifyError::TipMismatch {
            entries: 10,
            tip_entries: 10
        })
    ));
    admin
        .batch_execute(
            "UPDATE toolgate_audit_tip SET last_hash = (SELECT hash FROM toolgate_audit WHERE seq = 9)",
        )
        .unwrap();
    sink.verify().unwrap();

    admin
        .batch_execute("DELETE FROM toolgate_audit WHERE seq = 9")
        .unwrap();
    assert!(matches!(
        sink.verify(),
        Err(PostgresAuditVerifyError::TipMismatch {
            entries: 9,
            tip_entries: 10
        })
    ));

    admin
        .batch_execute("DELETE FROM toolgate_audit WHERE seq = 6")
        .unwrap();
    assert!(matches!(
        sink.verify(),
        Err(PostgresAuditVerifyError::Broken {
            seq: 6,
            problem: AuditEntryProblem::Sequence {
                found: 7,
                expected: 6
            }
        })
    ));
}

/// The chain as one Merkle tree for every node: a tree head kept catches the tail cut with the
/// tip row made to agree (which the chain alone cannot), and a receipt proves one entry.
#[test]
fn a_kept_tree_head_catches_a_postgres_chain_cut_with_its_tip_row_mended() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "tree");
    let (first, second) = (db.sink("one"), db.sink("two"));
    for n in 0..6 {
        let sink = if n % 2 == 0 { &first } else { &second };
        sink.record(&audit_event(n)).unwrap();
    }
    let kept = first.tree_head().unwrap();
    assert_eq!(kept.size, 6);
    assert_eq!(
        second.tree_head().unwrap(),
        kept,
        "one tree, whichever node asks"
    );
    for n in 6..9 {
        second.record(&audit_event(n)).unwrap();
    }
    let now = first.verify_extends(&kept).unwrap();
    assert_eq!(now.size, 9);
    let (receipt, head) = first.receipt(3).unwrap().unwrap();
    assert_eq!(head, now);
    let mut admin = db.admin();
    let row = admin
        .query_one(
            "SELECT seq, prev, event, hash FROM toolgate_audit WHERE seq = 3",
            &[],
        )
        .unwrap();
    let (prev, event, hash): (String, String, String) = (row.get(1), row.get(2), row.get(3));
    let line = format!(
        "{{\"seq\":3,\"prev\":{},\"event\":{event},\"hash\":{}}}",
        serde_json::to_string(&prev).unwrap(),
        serde_json::to_string(&hash).unwrap()
    );
    assert!(receipt.verify(&line, &head), "{line}");
    assert!(!receipt.verify(&line.replace("\"seq\":3", "\"seq\":4"), &head));

    // Cut back to 4 entries, the tip row mended: the chain verifies, the head kept does not.
    admin
        .batch_execute(
            "DELETE FROM toolgate_audit WHERE seq >= 4;
             UPDATE toolgate_audit_tip SET entries = 4,
                 last_hash = (SELECT hash FROM toolgate_audit WHERE seq = 3);",
        )
        .unwrap();
    assert_eq!(first.verify().unwrap().entries, 4);
    assert!(matches!(
        first.verify_extends(&kept),
        Err(PostgresAuditVerifyError::NotExtending(
            toolgate::audit::AuditExtendError::CutOff {
                entries: 4,
                head: 6
            }
        ))
    ));
}

/// Issue 21, item 2: a notification is not an answer. Any connection may `NOTIFY` on the
/// channel; what a waiter or the change feed reports comes from the request's row.
#[test]
fn forged_notifications_are_not_answers() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "forged_notify");
    let watcher = db.store("watcher");
    let asking = node(&db, "asking", Duration::ZERO);
    let id = ask(&asking, "f1");
    let schema = db.schema.clone();
    // Every state a forger could claim, for the request's id, spelled as the trigger spells it.
    let forgeries: Vec<String> = ["approved", "rejected", "expired", "revoked"]
        .iter()
        .map(|state| {
            json!({"schema": schema, "id": id.to_string(), "state": state, "outcome": "ok"})
                .to_string()
        })
        .collect();
    let forger = {
        let url = db.url("forger");
        std::thread::spawn(move || {
            let mut client = admin(&url);
            std::thread::sleep(Duration::from_millis(100));
            for payload in forgeries {
                client
                    .execute("SELECT pg_notify('toolgate_approvals', $1)", &[&payload])
                    .unwrap();
            }
        })
    };
    let mut changes = watcher.subscribe().unwrap();
    let started = Instant::now();
    let state = watcher
        .wait_for_answer(id, Duration::from_millis(800))
        .unwrap();
    forger.join().unwrap();
    assert_eq!(
        state,
        Some(ApprovalState::Pending),
        "the row still says pending"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "no forgery ended the wait"
    );
    // The feed reports the row's state for each forged wake-up, never the claimed one.
    let mut seen = Vec::new();
    while let Some(change) = changes.next_within(Duration::from_millis(300)).unwrap() {
        seen.push(change.state);
    }
    assert_eq!(seen, [ApprovalState::Pending; 4]);
    // A forged id with no row, and a payload naming a request in no table, report nothing.
    let mut client = db.admin();
    let unknown = json!({"schema": db.schema, "id": "0".repeat(32), "state": "approved"});
    client
        .execute(
            "SELECT pg_notify('toolgate_approvals', $1)",
            &[&unknown.to_string()],
        )
        .unwrap();
    assert_eq!(
        changes.next_within(Duration::from_millis(300)).unwrap(),
        None
    );
    // The request is still answerable once, and a real answer still wakes the waiter.
    assert_eq!(
        asking.resolve(ApprovalResponse::approve(id)).unwrap(),
        ToolResult::ok("f1", "applied f1")
    );
    assert!(matches!(
        watcher.wait_for_answer(id, Duration::from_secs(5)).unwrap(),
        Some(ApprovalState::Approved { .. })
    ));
    // Drain the real changes; then a forged `pending` or `rejected` for the answered request is
    // reported as the row says: approved, with its outcome.
    while changes
        .next_within(Duration::from_millis(300))
        .unwrap()
        .is_some()
    {}
    for state in ["pending", "rejected"] {
        let forged = json!({"schema": db.schema, "id": id.to_string(), "state": state});
        client
            .execute(
                "SELECT pg_notify('toolgate_approvals', $1)",
                &[&forged.to_string()],
            )
            .unwrap();
        let change = changes
            .next_within(Duration::from_secs(5))
            .unwrap()
            .expect("the wake-up is reported");
        assert_eq!(
            change.state,
            ApprovalState::Approved {
                outcome: Some(ExecutionOutcome::Ok)
            },
            "forged {state}"
        );
    }
}

#[test]
fn arguments_are_disclosed_against_a_postgres_entry_until_its_salt_is_forgotten() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "audit_salts");
    let sink = Arc::new(db.sink("writer"));
    let tool = ToolDefinition::new(
        ToolSpec::new("pay", "Pay.", json!({"type": "object"})),
        |_: &serde_json::Value| -> Result<String, ToolError> { Ok("paid".into()) },
    )
    .unwrap();
    let controller = ToolController::new(
        ToolRegistry::new([tool]).unwrap(),
        ToolPolicy::new(["pay"], Vec::<String>::new()).unwrap(),
    )
    .with_audit_sink(Arc::clone(&sink));
    let _ = controller.handle(ToolCall::new("c", "pay", json!({"pin": "1234"})));
    let head = sink.tree_head().unwrap();
    assert_eq!(head.size, 3);
    use toolgate::audit::Disclosure;
    assert_eq!(
        sink.disclose(1, &json!({"pin": "1234"})).unwrap(),
        Some(Disclosure::Matches)
    );
    assert_eq!(
        sink.disclose(1, &json!({"pin": "1235"})).unwrap(),
        Some(Disclosure::DoesNotMatch)
    );
    assert_eq!(sink.disclose(3, &json!({})).unwrap(), None);
    // No salt in the chain's rows.
    let salts: Vec<String> = db
        .admin()
        .query("SELECT salt FROM toolgate_audit_salts", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(salts.len(), 3);
    let events: Vec<String> = db
        .admin()
        .query("SELECT event FROM toolgate_audit", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(
        salts
            .iter()
            .all(|salt| events.iter().all(|e| !e.contains(salt.as_str())))
    );
    assert!(sink.forget_salt(1).unwrap());
    assert!(!sink.forget_salt(1).unwrap());
    assert_eq!(
        sink.disclose(1, &json!({"pin": "1234"})).unwrap(),
        Some(Disclosure::SaltErased)
    );
    // The chain and every proof over it are unchanged.
    assert_eq!(sink.verify_extends(&head).unwrap(), head);
    assert_eq!(
        sink.disclose(0, &json!({"pin": "1234"})).unwrap(),
        Some(Disclosure::Matches)
    );
}
