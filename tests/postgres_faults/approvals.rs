//! Approvals under faults: three processes answering the same requests settle each once, a node
//! killed inside a handler never reruns its call, and a backend terminated during an answer
//! approves nothing uncommitted.

use super::*;

#[test]
fn three_processes_answering_the_same_200_requests_settle_each_once() {
    let Some(url) = server_url() else { return };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "three");
    let (ids, names) = ask_many(&db, 200);
    let reports: Vec<Report> = spawn_children(&db, &ids, 3, 4, 0)
        .into_iter()
        .map(report)
        .collect();

    let ran: usize = reports.iter().map(|r| r.ran).sum();
    assert_eq!(ran, 200, "each request approved once: {reports:?}");
    assert_eq!(
        reports.iter().map(|r| r.not_pending).sum::<usize>(),
        200 * 12 - 200,
        "every other answer found it taken: {reports:?}"
    );
    assert!(
        reports
            .iter()
            .all(|r| r.refused == 0 && r.store_errors == 0),
        "{reports:?}"
    );
    let counts = run_counts(&db);
    assert_eq!(counts.len(), 200, "every call ran");
    assert!(counts.values().all(|&n| n == 1), "no call ran twice");
    assert_eq!(counts.keys().cloned().collect::<Vec<_>>(), names);
    for state in states(&db, &ids) {
        assert_eq!(
            state,
            Some(ApprovalState::Approved {
                outcome: Some(ExecutionOutcome::Ok)
            })
        );
    }
    let tip = db.sink("verifier").verify().unwrap();
    // Per request: received, decision, requested; approved, decision, outcome.
    assert_eq!(tip.entries, 200 * 6);
    let slowest = reports.iter().map(|r| r.micros).max().unwrap();
    println!(
        "three processes x four threads: 200 approvals settled in {:.1} ms, {:.0} answers/s \
         (approve + run + outcome; {} answers in all)",
        slowest as f64 / 1000.0,
        200.0 / (slowest as f64 / 1e6),
        200 * 12
    );
}

#[test]
fn a_node_killed_inside_a_handler_leaves_the_call_consumed_and_never_reruns_it() {
    let Some(url) = server_url() else { return };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "kill");
    let (ids, _) = ask_many(&db, 1);
    let mut children = spawn_children(&db, &ids, 1, 1, 120_000);
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.run_lines().is_empty() {
        assert!(Instant::now() < deadline, "the handler never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut child = children.pop().unwrap();
    child.kill().expect("SIGKILL"); // std sends SIGKILL on Unix
    let _ = child.wait();

    let survivor = node(&db, "survivor", Duration::ZERO);
    assert_eq!(
        survivor.approval_state(ids[0]).unwrap(),
        Some(ApprovalState::Approved { outcome: None }),
        "consumed, outcome unknown"
    );
    assert!(survivor.pending().is_empty());
    assert_eq!(
        survivor.resolve(ApprovalResponse::approve(ids[0])),
        Err(ApprovalError::NotPending {
            approval_id: ids[0]
        })
    );
    assert_eq!(db.run_lines(), ["call000"], "never run again");
    // received, decision, requested; approved, decision — and no outcome.
    assert_eq!(db.sink("verifier").verify().unwrap().entries, 5);
}

/// Waits until the node's answer waits on the lock again from a backend other than `killed`.
fn terminate_when_waiting_is_retried(admin: &mut postgres::Client, killed: i32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while admin
        .query_opt(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'answering' \
             AND wait_event = 'transactionid' AND pid <> $1",
            &[&killed],
        )
        .unwrap()
        .is_none()
    {
        assert!(Instant::now() < deadline, "the node did not try again");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until a backend of `application` other than `except` is in the wait named `event`, and
/// terminates it.
fn terminate_when_waiting(
    admin: &mut postgres::Client,
    application: &str,
    event: &str,
    except: i32,
) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let row = admin
            .query_opt(
                "SELECT pid FROM pg_stat_activity \
                 WHERE application_name = $1 AND wait_event = $2 AND pid <> $3",
                &[&application, &event, &except],
            )
            .unwrap();
        if let Some(row) = row {
            let pid: i32 = row.get(0);
            // `false`: it ended between the two queries; look again.
            let done: bool = admin
                .query_one("SELECT pg_terminate_backend($1)", &[&pid])
                .unwrap()
                .get(0);
            if done {
                return pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no backend of {application} waited on {event}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_backend_terminated_during_an_answer_approves_nothing_uncommitted_and_the_node_recovers() {
    let Some(url) = server_url() else { return };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "terminate");
    let answering = Arc::new(node(&db, "answering", Duration::ZERO));
    let mut admin = db.admin();
    let mut holder = db.admin();

    // 1. Terminated three times while its update waits on a row lock: nothing committed each
    //    time (the request stays pending), the node reconnects, and once the lock is released
    //    the answer goes through — once.
    let first = ask(&answering, "first");
    let mut lock = holder.transaction().unwrap();
    lock.execute(
        "SELECT 1 FROM toolgate_approvals WHERE id = $1 FOR UPDATE",
        &[&first.to_string()],
    )
    .unwrap();
    let answer = {
        let answering = Arc::clone(&answering);
        std::thread::spawn(move || answering.resolve(ApprovalResponse::approve(first)))
    };
    let mut killed = 0;
    for _ in 0..3 {
        killed = terminate_when_waiting(&mut admin, "answering", "transactionid", killed);
        let state: String = admin
            .query_one(
                "SELECT state FROM toolgate_approvals WHERE id = $1",
                &[&first.to_string()],
            )
            .unwrap()
            .get(0);
        assert_eq!(
            state, "pending",
            "no approval without a committed consumption"
        );
        assert!(db.run_lines().is_empty());
    }
    // The node tries again from a new backend; let it through.
    terminate_when_waiting_is_retried(&mut admin, killed);
    lock.commit().unwrap();
    assert_eq!(
        answer.join().unwrap(),
        Ok(ToolResult::ok("first", "applied first"))
    );
    let second = ask(&answering, "second");

    // 3. Terminated during the commit itself (a deferred trigger holds the commit open): the node
    //    cannot know whether it committed, so it does not retry and runs nothing.
    admin
        .batch_execute(
            "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN PERFORM pg_sleep(30); RETURN NULL; END $$;
             CREATE CONSTRAINT TRIGGER slow_commit AFTER UPDATE ON toolgate_approvals
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();",
        )
        .unwrap();
    let answer = {
        let answering = Arc::clone(&answering);
        std::thread::spawn(move || answering.resolve(ApprovalResponse::approve(second)))
    };
    terminate_when_waiting(&mut admin, "answering", "PgSleep", 0);
    let error = answer.join().unwrap().unwrap_err();
    assert!(
        error.to_string().contains("commit was not confirmed"),
        "{error}"
    );
    let chain: Vec<&dyn std::error::Error> =
        std::iter::successors(std::error::Error::source(&error), |e| e.source()).collect();
    assert!(chain.iter().any(|cause| cause.is::<postgres::Error>()));
    admin
        .batch_execute("DROP TRIGGER slow_commit ON toolgate_approvals")
        .unwrap();
    assert_eq!(
        answering.approval_state(second).unwrap(),
        Some(ApprovalState::Pending),
        "the terminated commit did not consume it"
    );

    // The node recovers: the same request is answered and runs once.
    assert_eq!(
        answering.resolve(ApprovalResponse::approve(second)),
        Ok(ToolResult::ok("second", "applied second"))
    );
    assert_eq!(db.run_lines(), ["first", "second"]);
    db.sink("verifier").verify().unwrap();
}
