//! Faults with real processes against a real PostgreSQL server (feature `postgres`): three
//! processes answering the same requests, a node killed inside a handler, a backend terminated by
//! the server during an answer, and the server restarted mid-run. After each, the shared audit
//! chain verifies. Child processes run this test binary again in the role named by
//! `TOOLGATE_CHILD_ROLE` (see `child_process_role`).
//!
//! Without `TOOLGATE_PG_URL` each test prints a note and passes; the restart test also needs
//! `TOOLGATE_PG_RESTART` (both set by `.ci/postgres`). The tests of this file share one server
//! that one of them restarts, so they run one at a time.
#![cfg(all(feature = "postgres", unix))]

#[path = "support/postgres.rs"]
mod postgres_support;

use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use toolgate::approvals::ApprovalError;
use toolgate::approvals::ApprovalId;

use postgres_support::*;
use toolgate::approvals::{ApprovalState, ExecutionOutcome};
use toolgate::*;

/// One test at a time: the restart test takes the server away from everyone.
static SERIAL: Mutex<()> = Mutex::new(());

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// Entry point for child processes; with no role set it is not a child and does nothing.
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var("TOOLGATE_CHILD_ROLE") else {
        return;
    };
    let url = std::env::var("TOOLGATE_NODE_URL").unwrap();
    if role == "audit_unintegrated" {
        return audit_unintegrated(&url);
    }
    let runs = PathBuf::from(std::env::var("TOOLGATE_RUNS").unwrap());
    let pause = Duration::from_millis(
        std::env::var("TOOLGATE_PAUSE_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .unwrap_or(0),
    );
    let node = Arc::new(
        ToolController::new(
            ToolRegistry::new([logging_tool(runs, pause)]).unwrap(),
            ToolPolicy::new(Vec::<String>::new(), ["apply_patch"]).unwrap(),
        )
        .with_approval_store(toolgate::approvals::PostgresApprovalStore::connect(&url).unwrap())
        .with_audit_sink(toolgate::audit::PostgresAuditSink::connect(&url).unwrap()),
    );
    let ids: Vec<ApprovalId> = std::env::var("TOOLGATE_APPROVALS")
        .unwrap()
        .split(',')
        .map(|id| id.parse().unwrap())
        .collect();
    // Every process starts answering at the same moment.
    let start: u128 = std::env::var("TOOLGATE_START_AT_MS")
        .unwrap()
        .parse()
        .unwrap();
    while now_ms() < start {
        std::thread::sleep(Duration::from_millis(1));
    }
    match role.as_str() {
        "answer_all" => answer_all(&node, &ids),
        other => panic!("unknown child role {other}"),
    }
}

/// Several threads answer every id, each starting at another place in the list; an answer that
/// fails on the store (the server restarting) is tried again until a deadline.
fn answer_all(node: &Arc<ToolController>, ids: &[ApprovalId]) {
    let threads: usize = std::env::var("TOOLGATE_THREADS").unwrap().parse().unwrap();
    let process: usize = std::env::var("TOOLGATE_PROCESS").unwrap().parse().unwrap();
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let (node, ids) = (Arc::clone(node), ids.to_vec());
            std::thread::spawn(move || {
                let mut counts = [0usize; 4]; // ran, not pending, refused result, store errors
                let offset = (process * threads + thread) * 17;
                for k in 0..ids.len() {
                    let id = ids[(offset + k) % ids.len()];
                    let deadline = Instant::now() + Duration::from_secs(60);
                    loop {
                        match node.resolve(ApprovalResponse::approve(id)) {
                            Ok(result) if !result.is_error => counts[0] += 1,
                            Ok(_) => counts[2] += 1,
                            Err(ApprovalError::NotPending { .. }) => counts[1] += 1,
                            Err(_) if Instant::now() < deadline => {
                                counts[3] += 1;
                                std::thread::sleep(Duration::from_millis(50));
                                continue;
                            }
                            Err(other) => panic!("store unavailable for 60s: {other}"),
                        }
                        break;
                    }
                }
                counts
            })
        })
        .collect();
    let mut total = [0usize; 4];
    for handle in handles {
        for (sum, count) in total.iter_mut().zip(handle.join().unwrap()) {
            *sum += count;
        }
    }
    println!(
        "CHILD RESULT {} {} {} {} {}",
        total[0],
        total[1],
        total[2],
        total[3],
        started.elapsed().as_micros()
    );
}

/// What one child process reports.
#[derive(Debug, Default)]
struct Report {
    ran: usize,
    not_pending: usize,
    refused: usize,
    store_errors: usize,
    micros: u128,
}

fn spawn_children(
    db: &Db,
    ids: &[ApprovalId],
    processes: usize,
    threads: usize,
    pause_ms: u64,
) -> Vec<Child> {
    let list: Vec<String> = ids.iter().map(ToString::to_string).collect();
    let start = now_ms() + 1500;
    (0..processes)
        .map(|process| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "child_process_role",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TOOLGATE_CHILD_ROLE", "answer_all")
                .env("TOOLGATE_NODE_URL", db.url(&format!("child{process}")))
                .env("TOOLGATE_RUNS", db.runs())
                .env("TOOLGATE_PAUSE_MS", pause_ms.to_string())
                .env("TOOLGATE_APPROVALS", list.join(","))
                .env("TOOLGATE_START_AT_MS", start.to_string())
                .env("TOOLGATE_THREADS", threads.to_string())
                .env("TOOLGATE_PROCESS", process.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("child starts")
        })
        .collect()
}

fn report(child: Child) -> Report {
    let output = child.wait_with_output().expect("child ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|line| {
            line.find("CHILD RESULT ")
                .map(|at| line[at + 13..].to_owned())
        })
        .unwrap_or_else(|| {
            panic!(
                "child printed no result: {stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let numbers: Vec<u128> = line.split(' ').map(|n| n.parse().unwrap()).collect();
    Report {
        ran: numbers[0] as usize,
        not_pending: numbers[1] as usize,
        refused: numbers[2] as usize,
        store_errors: numbers[3] as usize,
        micros: numbers[4],
    }
}

/// Each id's final state, read through a store of its own.
fn states(db: &Db, ids: &[ApprovalId]) -> Vec<Option<ApprovalState>> {
    let store = db.store("checker");
    ids.iter()
        .map(|id| toolgate::approvals::ApprovalStore::state(&store, *id).unwrap())
        .collect()
}

/// How often each call ran, by the run log.
fn run_counts(db: &Db) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in db.run_lines() {
        *counts.entry(line).or_insert(0) += 1;
    }
    counts
}

fn ask_many(db: &Db, count: usize) -> (Vec<ApprovalId>, Vec<String>) {
    let asking = node(db, "asking", Duration::ZERO);
    let names: Vec<String> = (0..count).map(|n| format!("call{n:03}")).collect();
    let ids = names.iter().map(|name| ask(&asking, name)).collect();
    (ids, names)
}

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

/// The script that restarts the server (`.ci/postgres` sets it); `None` skips a restart test,
/// which only a run outside CI may do.
fn restart_script() -> Option<std::ffi::OsString> {
    let restart = std::env::var_os("TOOLGATE_PG_RESTART");
    if restart.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the restart tests: .ci/postgres sets TOOLGATE_PG_RESTART"
        );
        let _ = writeln!(
            std::io::stderr(),
            "note: TOOLGATE_PG_RESTART is not set, restart test skipped"
        );
    }
    restart
}

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
fn the_audit_sink_waits_through_a_server_restart_and_loses_no_record() {
    // Records are appended while the server restarts: each append made while it is away waits
    // for it (reconnecting, up to 10 s) instead of failing, and the chain holds every record once.
    let Some(url) = server_url() else { return };
    let Some(restart) = restart_script() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "audit_restart");
    let sink = db.sink("writer");
    use toolgate::audit::AuditSink as _;
    sink.record(&audit_event(0)).unwrap();
    let restarting = std::thread::spawn(move || run_script(std::path::Path::new(&restart)));
    let (mut confirmed, mut unconfirmed) = (1_u64, 0_u64);
    let started = Instant::now();
    // Through the restart and a little past it.
    while !restarting.is_finished() || started.elapsed() < Duration::from_millis(300) {
        match sink.record(&audit_event((confirmed + unconfirmed) as usize)) {
            Ok(()) => confirmed += 1,
            // The one failure allowed: the connection was cut after the commit was sent, so
            // whether it landed is unknown (the caller then fails closed). Anything else — a
            // refused connection while the server was away — is a record lost.
            Err(error) if error.to_string().contains("commit was not confirmed") => {
                unconfirmed += 1
            }
            Err(error) => panic!("a record during the restart failed: {error}"),
        }
    }
    restarting.join().unwrap();
    sink.record(&audit_event(0)).unwrap();
    confirmed += 1;
    let tip = db.sink("verifier").verify().unwrap();
    // An unconfirmed batch stays queued in the sink and is stored with the next commit, once:
    // none lost, none twice.
    assert_eq!(
        tip.entries,
        confirmed + unconfirmed,
        "{} entries for {confirmed} confirmed and {unconfirmed} unconfirmed records",
        tip.entries
    );
}

#[test]
fn the_audit_sink_gives_up_on_an_absent_server_after_its_reconnect_window() {
    // With a 50 ms window, an append made while the server restarts fails instead of waiting for
    // it; once the server is back, appends succeed again and the chain holds each confirmed one.
    let Some(url) = server_url() else { return };
    let Some(restart) = restart_script() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "audit_window");
    let sink = db
        .sink("writer")
        .with_reconnect_window(Duration::from_millis(50));
    use toolgate::audit::AuditSink as _;
    sink.record(&audit_event(0)).unwrap();
    let restarting = std::thread::spawn(move || run_script(std::path::Path::new(&restart)));
    let (mut confirmed, mut unconfirmed, mut refused) = (1_u64, 0_u64, 0_u64);
    let mut longest = Duration::ZERO;
    while !restarting.is_finished() {
        let started = Instant::now();
        match sink.record(&audit_event(confirmed + unconfirmed + refused)) {
            Ok(()) => confirmed += 1,
            Err(error) if error.to_string().contains("commit was not confirmed") => {
                unconfirmed += 1
            }
            Err(_) => refused += 1,
        }
        longest = longest.max(started.elapsed());
    }
    restarting.join().unwrap();
    assert!(refused > 0, "no append failed while the server was away");
    // 50 ms of waiting, a connect attempt refused at once, and a pause: far below the 10 s default.
    assert!(
        longest < Duration::from_secs(3),
        "an append waited {longest:?}"
    );
    sink.record(&audit_event(u64::MAX)).unwrap();
    confirmed += 1;
    let tip = db.sink("verifier").verify().unwrap();
    // Refused and unconfirmed appends failed their callers (whose steps did not happen) but stay
    // queued in the sink: the next commit stores each of them once.
    assert_eq!(tip.entries, confirmed + unconfirmed + refused);
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

/// Child role: records audit events durably with integration put off for an hour, says how many,
/// then waits to be killed — a crash after the commits and before any integration.
fn audit_unintegrated(url: &str) {
    use toolgate::audit::AuditSink as _;
    let sink = toolgate::audit::PostgresAuditSink::connect(url)
        .unwrap()
        .with_integration_every(Duration::from_secs(3600));
    for n in 0..AUDIT_UNINTEGRATED {
        sink.record(&audit_event(n)).unwrap();
    }
    println!("CHILD RECORDED {AUDIT_UNINTEGRATED}");
    std::io::Write::flush(&mut std::io::stdout()).unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

const AUDIT_UNINTEGRATED: u64 = 40;

#[test]
fn entries_of_a_writer_killed_before_integration_are_integrated_by_the_next_reader() {
    let Some(url) = server_url() else { return };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "audit_killed");
    drop(db.sink("setup"));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_role",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TOOLGATE_CHILD_ROLE", "audit_unintegrated")
        .env("TOOLGATE_NODE_URL", db.url("child"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let said = std::io::BufRead::lines(stdout)
        .map_while(Result::ok)
        .find(|line| line.contains("CHILD RECORDED"))
        .expect("the child recorded");
    assert!(said.ends_with(&AUDIT_UNINTEGRATED.to_string()), "{said}");
    child.kill().unwrap();
    child.wait().unwrap();
    let mut admin = db.admin();
    let count = |admin: &mut postgres::Client, table: &str| -> i64 {
        admin
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0)
    };
    // Committed, not integrated: every entry waits in the queue, none is in the chain.
    assert_eq!(
        count(&mut admin, "toolgate_audit_queue"),
        AUDIT_UNINTEGRATED as i64
    );
    assert_eq!(count(&mut admin, "toolgate_audit"), 0);
    // A reader on another node integrates them before it reads: all there, once, in order.
    let tip = db.sink("reader").verify().unwrap();
    assert_eq!(tip.entries, AUDIT_UNINTEGRATED);
    assert_eq!(count(&mut admin, "toolgate_audit_queue"), 0);
    let distinct: i64 = admin
        .query_one("SELECT count(DISTINCT event) FROM toolgate_audit", &[])
        .unwrap()
        .get(0);
    assert_eq!(distinct, AUDIT_UNINTEGRATED as i64);
}

#[test]
fn four_writers_through_a_server_restart_store_every_event_once() {
    // Group commit puts several threads' events in one batch; a restart cuts batches off before,
    // at and after their commits. Every event recorded — confirmed or not — is stored exactly
    // once: the unconfirmed are retried by key, never stored twice.
    let Some(url) = server_url() else { return };
    let Some(restart) = restart_script() else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let db = Db::new(&url, "audit_restart_threads");
    let sink = Arc::new(db.sink("writer"));
    use toolgate::audit::AuditSink as _;
    sink.record(&audit_event(0)).unwrap();
    let next = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let restarting = std::thread::spawn(move || run_script(std::path::Path::new(&restart)));
    let restarted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (sink, next, restarted) =
                (Arc::clone(&sink), Arc::clone(&next), Arc::clone(&restarted));
            std::thread::spawn(move || {
                let mut failed = 0_u64;
                while !restarted.load(std::sync::atomic::Ordering::Relaxed) {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if sink.record(&audit_event(n)).is_err() {
                        failed += 1;
                    }
                }
                failed
            })
        })
        .collect();
    restarting.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    restarted.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    sink.sync().unwrap();
    let recorded = next.load(std::sync::atomic::Ordering::Relaxed);
    let tip = db.sink("verifier").verify().unwrap();
    assert_eq!(tip.entries, recorded, "every recorded event stored");
    let distinct: i64 = db
        .admin()
        .query_one("SELECT count(DISTINCT event) FROM toolgate_audit", &[])
        .unwrap()
        .get(0);
    assert_eq!(distinct as u64, recorded, "none stored twice");
}
