//! The SQLite approval ledger (feature `sqlite`): restarts, two processes answering one request,
//! a process killed between consumption and the handler's end, and files that must be refused.
//! The process tests run this test binary again as a child, in the role named by an environment
//! variable (see `child_process_role`).
#![cfg(all(feature = "sqlite", unix))]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use toolgate::approvals::ApprovalError;
use toolgate::approvals::ApprovalId;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::approvals::{ApprovalLimits, ApprovalState, ExecutionOutcome, SqliteApprovalStore};
use toolgate::*;

/// A directory holding one test's files (a ledger and run log, counters), removed afterwards.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("toolgate-ledger-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
    fn ledger(&self) -> PathBuf {
        self.0.join("approvals.db")
    }
    fn runs(&self) -> PathBuf {
        self.0.join("runs.log")
    }
    fn run_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.runs())
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tool every process registers: appends "started" to the run log, optionally hangs, then
/// appends "finished".
fn logging_tool(runs: PathBuf, hang: bool) -> ToolDefinition {
    ToolDefinition::new(
        ToolSpec::new("apply_patch", "Apply a patch.", patch_schema()),
        move |args: &Value| -> Result<String, ToolError> {
            let append = |line: &str| {
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&runs)
                    .unwrap();
                writeln!(file, "{line}").unwrap();
                file.sync_all().unwrap();
            };
            append("started");
            if hang {
                std::thread::sleep(Duration::from_secs(120));
            }
            append("finished");
            Ok(format!("applied {}", args["patch"]))
        },
    )
    .unwrap()
}

fn controller(ledger: &Path, runs: PathBuf, hang: bool) -> ToolController {
    ToolController::new(
        registry([logging_tool(runs, hang)]),
        policy(&[], &["apply_patch"]),
    )
    .with_approval_store(SqliteApprovalStore::open(ledger).expect("ledger opens"))
}

/// Entry point for child processes; with no role set it is not a child and does nothing.
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var("TOOLGATE_CHILD_ROLE") else {
        return;
    };
    let ledger = PathBuf::from(std::env::var("TOOLGATE_LEDGER").unwrap());
    let runs = PathBuf::from(std::env::var("TOOLGATE_RUNS").unwrap());
    if let Some(store) = role.strip_prefix("open_") {
        wait_for_start();
        let opened = match store {
            "ledger" => SqliteApprovalStore::open(&ledger)
                .map(drop)
                .map_err(|e| e.to_string()),
            _ => toolgate::limits::SqliteRateCounters::open(&ledger, "s")
                .map(drop)
                .map_err(|e| e.to_string()),
        };
        match opened {
            Ok(()) => println!("CHILD OPENED"),
            Err(error) => println!("CHILD FAILED {error}"),
        }
        return;
    }
    let controller = controller(&ledger, runs, role == "approve_and_hang");
    match role.as_str() {
        "ask" => {
            match controller.handle(ToolCall::new("c1", "apply_patch", json!({"patch": "+x"}))) {
                Outcome::PendingApproval(request) => {
                    println!("CHILD APPROVAL {}", request.approval_id)
                }
                other => println!("CHILD UNEXPECTED {other:?}"),
            }
        }
        "approve" | "approve_and_hang" => {
            let id: ApprovalId = std::env::var("TOOLGATE_APPROVAL").unwrap().parse().unwrap();
            wait_for_start();
            match controller.resolve(ApprovalResponse::approve(id)) {
                Ok(result) if !result.is_error => println!("CHILD RESULT ok {}", result.content),
                Ok(result) => println!("CHILD RESULT error {}", result.content),
                Err(ApprovalError::NotPending { .. }) => println!("CHILD RESULT not_pending"),
                Err(other) => println!("CHILD RESULT failed {other}"),
            }
        }
        other => panic!("unknown child role {other}"),
    }
}

/// Racers start together when the parent says so (`TOOLGATE_START_AT_MS`, wall-clock ms).
fn wait_for_start() {
    if let Ok(go) = std::env::var("TOOLGATE_START_AT_MS") {
        let go: u128 = go.parse().unwrap();
        while std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            < go
        {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// A wall-clock time `ahead` from now, in ms, for `TOOLGATE_START_AT_MS`.
fn start_at(ahead: Duration) -> String {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        + ahead)
        .as_millis()
        .to_string()
}

/// Issue 21, item 8: several processes opening one new file at once all open it — the schema is
/// created in a transaction that waits for the others like every write — for the approval
/// ledger and for the rate counters, round after round on a fresh file.
#[test]
fn several_processes_opening_one_new_file_all_open_it() {
    const PROCESSES: usize = 6;
    const ROUNDS: usize = 8;
    for store in ["open_ledger", "open_counters"] {
        let mut failures = Vec::new();
        for round in 0..ROUNDS {
            let scratch = Scratch::new(&format!("{store}-{round}"));
            let go = start_at(Duration::from_millis(400));
            let children: Vec<Child> = (0..PROCESSES)
                .map(|_| spawn_child(&scratch, store, &[("TOOLGATE_START_AT_MS", go.clone())]))
                .collect();
            for child in children {
                let line = child_line(child);
                if line != "OPENED" {
                    failures.push(format!("round {round}: {line}"));
                }
            }
        }
        assert!(failures.is_empty(), "{store}: {failures:#?}");
    }
}

fn spawn_child(scratch: &Scratch, role: &str, extra: &[(&str, String)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "sqlite_ledger::child_process_role",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TOOLGATE_CHILD_ROLE", role)
        .env("TOOLGATE_LEDGER", scratch.ledger())
        .env("TOOLGATE_RUNS", scratch.runs())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (key, value) in extra {
        command.env(key, value);
    }
    command.spawn().expect("child starts")
}

fn child_line(child: Child) -> String {
    let output = child.wait_with_output().expect("child ends");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        // The test harness prints its own words on the same line before ours.
        .find_map(|line| {
            line.find("CHILD ")
                .map(|at| line[at + "CHILD ".len()..].to_owned())
        })
        .unwrap_or_else(|| panic!("child printed no result: {output:?}"))
}

fn ask_in_a_child(scratch: &Scratch) -> ApprovalId {
    let line = child_line(spawn_child(scratch, "ask", &[]));
    line.strip_prefix("APPROVAL ")
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap()
}

#[test]
fn a_request_made_before_a_restart_is_answered_after_it() {
    let scratch = Scratch::new("restart");
    let id = ask_in_a_child(&scratch); // that process has exited: a restart
    let controller = controller(&scratch.ledger(), scratch.runs(), false);
    let waiting = controller.pending();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].approval_id, id);
    assert!(waiting[0].digest_matches());
    let result = controller.resolve(ApprovalResponse::approve(id)).unwrap();
    assert_eq!(result, ToolResult::ok("c1", "applied \"+x\""));
    assert_eq!(scratch.run_lines(), ["started", "finished"]);
    assert_eq!(
        controller.approval_state(id).unwrap(),
        Some(ApprovalState::Approved {
            outcome: Some(ExecutionOutcome::Ok)
        })
    );
    assert!(controller.resolve(ApprovalResponse::approve(id)).is_err());
}

#[test]
fn two_processes_answering_one_request_run_it_once() {
    let scratch = Scratch::new("two");
    for round in 0..3 {
        let id = ask_in_a_child(&scratch);
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            + 300;
        let env = [
            ("TOOLGATE_APPROVAL", id.to_string()),
            ("TOOLGATE_START_AT_MS", start.to_string()),
        ];
        let racers = [
            spawn_child(&scratch, "approve", &env),
            spawn_child(&scratch, "approve", &env),
        ];
        let mut lines: Vec<String> = racers.into_iter().map(child_line).collect();
        lines.sort();
        assert_eq!(lines[0], "RESULT not_pending", "round {round}: {lines:?}");
        assert!(
            lines[1].starts_with("RESULT ok"),
            "round {round}: {lines:?}"
        );
        assert_eq!(
            scratch.run_lines().len(),
            2 * (round + 1),
            "one run (2 lines) per round"
        );
    }
}

#[test]
fn a_process_killed_mid_handler_leaves_the_call_consumed_and_never_reruns_it() {
    let scratch = Scratch::new("kill");
    let id = ask_in_a_child(&scratch);
    let mut child = spawn_child(
        &scratch,
        "approve_and_hang",
        &[("TOOLGATE_APPROVAL", id.to_string())],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while scratch.run_lines().is_empty() {
        assert!(Instant::now() < deadline, "the handler never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL"); // std sends SIGKILL on Unix
    let _ = child.wait();

    let controller = controller(&scratch.ledger(), scratch.runs(), false);
    assert_eq!(
        controller.approval_state(id).unwrap(),
        Some(ApprovalState::Approved { outcome: None }),
        "consumed, outcome unknown"
    );
    assert!(controller.pending().is_empty());
    assert_eq!(
        controller.resolve(ApprovalResponse::approve(id)),
        Err(ApprovalError::NotPending { approval_id: id })
    );
    assert_eq!(scratch.run_lines(), ["started"], "never run again");
}

#[test]
fn eight_threads_with_their_own_connections_consume_once() {
    let scratch = Scratch::new("threads");
    let first = controller(&scratch.ledger(), scratch.runs(), false);
    let Outcome::PendingApproval(request) =
        first.handle(ToolCall::new("c", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (barrier, ledger, runs) = (Arc::clone(&barrier), scratch.ledger(), scratch.runs());
            std::thread::spawn(move || {
                let own = controller(&ledger, runs, false);
                barrier.wait();
                own.resolve(ApprovalResponse::approve(request.approval_id))
                    .is_ok()
            })
        })
        .collect();
    let successes = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|ok| *ok)
        .count();
    assert_eq!(successes, 1);
    assert_eq!(scratch.run_lines().len(), 2);
}

#[test]
fn expiry_and_revocation_are_durable() {
    let scratch = Scratch::new("expiry");
    let expiring = controller(&scratch.ledger(), scratch.runs(), false)
        .with_approval_limits(ApprovalLimits::default().with_time_to_live(Some(Duration::ZERO)));
    let Outcome::PendingApproval(expired) =
        expiring.handle(ToolCall::new("e", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    let reopened = controller(&scratch.ledger(), scratch.runs(), false);
    let result = reopened
        .resolve(ApprovalResponse::approve(expired.approval_id))
        .unwrap();
    assert!(result.content.contains("expired"), "{result:?}");
    assert_eq!(
        reopened.approval_state(expired.approval_id).unwrap(),
        Some(ApprovalState::Expired)
    );

    let Outcome::PendingApproval(revoked) =
        reopened.handle(ToolCall::new("r", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    reopened.revoke(revoked.approval_id).unwrap();
    let again = controller(&scratch.ledger(), scratch.runs(), false);
    assert_eq!(
        again.approval_state(revoked.approval_id).unwrap(),
        Some(ApprovalState::Revoked)
    );
    assert!(
        again
            .resolve(ApprovalResponse::approve(revoked.approval_id))
            .is_err()
    );
    assert!(scratch.run_lines().is_empty());
}

#[test]
fn the_cap_holds_across_restarts() {
    let scratch = Scratch::new("cap");
    let limits = ApprovalLimits::default().with_max_pending(1);
    let first = controller(&scratch.ledger(), scratch.runs(), false).with_approval_limits(limits);
    assert!(matches!(
        first.handle(ToolCall::new("a", "apply_patch", json!({"patch": "+"}))),
        Outcome::PendingApproval(_)
    ));
    let second = controller(&scratch.ledger(), scratch.runs(), false).with_approval_limits(limits);
    let Outcome::Completed(result) =
        second.handle(ToolCall::new("b", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("over the cap");
    };
    assert!(
        result.content.contains("too many calls are waiting"),
        "{result:?}"
    );
}

// ---- files that must be refused ----------------------------------------------------------------

fn open_error(path: &Path) -> String {
    match SqliteApprovalStore::open(path) {
        Err(ApprovalError::Store(error)) => error.message().to_owned(),
        other => panic!("expected a store error, got {other:?}"),
    }
}

#[test]
fn store_errors_keep_the_sqlite_error_as_their_source() {
    let scratch = Scratch::new("garbage-source");
    std::fs::write(scratch.ledger(), vec![0x42; 8192]).unwrap();
    let error = SqliteApprovalStore::open(scratch.ledger()).unwrap_err();
    let chain: Vec<&dyn std::error::Error> =
        std::iter::successors(std::error::Error::source(&error), |e| e.source()).collect();
    assert!(
        chain.iter().any(|cause| cause.is::<rusqlite::Error>()),
        "no rusqlite::Error in the chain of {error}"
    );
}

#[test]
fn a_file_that_is_not_a_ledger_is_refused() {
    let scratch = Scratch::new("garbage");
    std::fs::write(scratch.ledger(), vec![0x42; 8192]).unwrap();
    assert!(
        open_error(&scratch.ledger()).contains("not a database"),
        "{}",
        open_error(&scratch.ledger())
    );
}

#[test]
fn a_truncated_ledger_is_refused() {
    let scratch = Scratch::new("truncated");
    {
        let store = controller(&scratch.ledger(), scratch.runs(), false);
        for i in 0..200 {
            let _ = store.handle(ToolCall::new(
                format!("c{i}"),
                "apply_patch",
                json!({"patch": "x".repeat(200)}),
            ));
        }
    }
    // Fold the write-ahead log into the main file, then cut the file in half.
    {
        let connection = rusqlite::Connection::open(scratch.ledger()).unwrap();
        let _: (i64, i64, i64) = connection
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .unwrap();
    }
    let bytes = std::fs::read(scratch.ledger()).unwrap();
    assert!(
        bytes.len() > 8192,
        "ledger too small to truncate meaningfully"
    );
    std::fs::write(scratch.ledger(), &bytes[..bytes.len() / 2]).unwrap();
    let _ = std::fs::remove_file(scratch.ledger().with_extension("db-wal"));
    let message = open_error(&scratch.ledger());
    assert!(
        message.contains("corrupt") || message.contains("malformed"),
        "{message}"
    );
}

#[test]
fn a_ledger_from_a_newer_version_is_refused() {
    let scratch = Scratch::new("newer");
    drop(SqliteApprovalStore::open(scratch.ledger()).unwrap());
    rusqlite::Connection::open(scratch.ledger())
        .unwrap()
        .execute("UPDATE meta SET value = 2 WHERE key = 'schema_version'", [])
        .unwrap();
    assert!(open_error(&scratch.ledger()).contains("schema version 2"));
}

#[test]
fn a_tampered_stored_request_is_not_run() {
    let scratch = Scratch::new("tampered");
    let controller = controller(&scratch.ledger(), scratch.runs(), false);
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c", "apply_patch", json!({"patch": "+ok"})))
    else {
        panic!("asks");
    };
    // Someone with write access to the file swaps the arguments but cannot redo the digest.
    let connection = rusqlite::Connection::open(scratch.ledger()).unwrap();
    let stored: String = connection
        .query_row(
            "SELECT request FROM approvals WHERE id = ?1",
            [request.approval_id.to_string()],
            |row| row.get(0),
        )
        .unwrap();
    let tampered = stored.replace("+ok", "rm -rf /");
    connection
        .execute(
            "UPDATE approvals SET request = ?1 WHERE id = ?2",
            [tampered, request.approval_id.to_string()],
        )
        .unwrap();
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(
        result.content.contains("does not match the digest"),
        "{result:?}"
    );
    assert!(scratch.run_lines().is_empty());
}
