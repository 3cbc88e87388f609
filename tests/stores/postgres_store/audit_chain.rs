//! The PostgreSQL audit sink's shared chain against a real server: one linear chain under
//! concurrent writers on several nodes, edits, deletions and cuts reported at the first bad entry,
//! forged notifications, and arguments disclosed until their salt is forgotten.

use super::*;

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
