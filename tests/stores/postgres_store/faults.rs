//! The PostgreSQL stores when something goes wrong, against a real server: lost connections
//! reconnected, other errors failing at once, schemas of another version refused or migrated,
//! tampered rows not run; and audit entries longer than a read buffer, and change feeds read as
//! blocking iterators.

use super::*;

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
