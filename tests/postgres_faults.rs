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

#[path = "postgres_faults/approvals.rs"]
mod approvals;
#[path = "postgres_faults/audit_chain.rs"]
mod audit_chain;
#[path = "postgres_faults/restarts.rs"]
mod restarts;
