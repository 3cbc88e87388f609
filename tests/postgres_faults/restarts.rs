//! A server restart mid-run: approvals answered through it run nothing twice and lose nothing, and
//! the approval store waits through it.

use super::*;

#[test]
fn a_server_restart_mid_run_runs_nothing_twice_and_loses_nothing() {
    let Some(url) = server_url() else { return };
    let Some(restart) = restart_script() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "restart");
    let (ids, _) = ask_many(&db, 200);
    // Handlers take 10 ms, so the run lasts long enough to be cut in the middle.
    let children = spawn_children(&db, &ids, 3, 2, 10);
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.run_lines().len() < 40 {
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(5));
    }
    let started_at = |url: &str| -> std::time::SystemTime {
        admin(url)
            .query_one("SELECT pg_postmaster_start_time()", &[])
            .unwrap()
            .get(0)
    };
    let before = started_at(&url);
    run_script(std::path::Path::new(&restart));
    assert!(started_at(&url) > before, "the server restarted");
    let ran_before_restart_finished = db.run_lines().len();
    let reports: Vec<Report> = children.into_iter().map(report).collect();
    let store_errors: usize = reports.iter().map(|r| r.store_errors).sum();

    let counts = run_counts(&db);
    assert!(
        counts.values().all(|&n| n == 1),
        "no call ran twice: {counts:?}"
    );
    let states = states(&db, &ids);
    let mut unknown = 0;
    let mut failed = 0;
    let ran: HashSet<&String> = counts.keys().collect();
    for (n, state) in states.iter().enumerate() {
        let name = format!("call{n:03}");
        match state {
            Some(ApprovalState::Approved {
                outcome: Some(ExecutionOutcome::Ok),
            }) => assert!(ran.contains(&name), "{name} recorded ok but never ran"),
            // The commit of an audit record before the run was cut by the restart: consumed,
            // and (fail closed) not run.
            Some(ApprovalState::Approved {
                outcome: Some(ExecutionOutcome::Error),
            }) => {
                assert!(!ran.contains(&name), "{name} ran but is recorded as failed");
                failed += 1;
            }
            Some(ApprovalState::Approved { outcome: None }) => unknown += 1,
            other => panic!("{name} is {other:?} after the run: lost"),
        }
    }
    let tip = db.sink("verifier").verify().unwrap();
    println!(
        "restart after {ran_before_restart_finished} runs: {} of 200 ran once, {failed} consumed \
         but not run (an audit commit the restart cut: fail closed), {unknown} with an unknown outcome; \
         {store_errors} answers retried after store errors; audit chain of {} entries verifies",
        counts.len(),
        tip.entries
    );
    // Every call recorded as run did run; beyond those, only calls whose outcome is unknown may
    // have run (the handler ran, then the restart cut the outcome's record).
    let recorded_ok = 200 - failed - unknown;
    assert!(
        (recorded_ok..=recorded_ok + unknown).contains(&counts.len()),
        "{} ran, {recorded_ok} recorded ok, {unknown} unknown",
        counts.len()
    );
}

#[test]
fn the_approval_store_waits_through_a_server_restart() {
    // Reads made while the server restarts wait for it (reconnecting, up to 10 s) and succeed.
    let Some(url) = server_url() else { return };
    let Some(restart) = restart_script() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "store_restart");
    let store = db.store("reader");
    use toolgate::approvals::ApprovalStore as _;
    store.pending(0).unwrap();
    let restarting = std::thread::spawn(move || run_script(std::path::Path::new(&restart)));
    let mut reads = 0;
    while !restarting.is_finished() {
        store
            .pending(0)
            .unwrap_or_else(|error| panic!("read {reads} during the restart: {error}"));
        reads += 1;
    }
    restarting.join().unwrap();
    store.pending(0).unwrap();
}
