//! Rate limits shared through a database: real child processes (this test binary run again with a
//! role in the environment, see `child_process_role`) count against one SQLite file or one
//! PostgreSQL schema, and authorize the cap between them, not once each.
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use crate::postgres_support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::common::counted;
use serde_json::json;
use toolgate::clock::ManualClock;
use toolgate::limits::{PostgresRateCounters, RateCounters, SqliteRateCounters};
use toolgate::*;

const T0: u64 = 1_800_000_000_000;
const CAP: usize = 15;
const TRIES_PER_PROCESS: usize = 20;

/// A controller over `read_file`, allowed, capped at `CAP` a minute, counting in `counters`, at a
/// fixed time (so the window cannot move during the test).
fn controller(counters: impl RateCounters + 'static) -> ToolController {
    let registry = ToolRegistry::new([counted(
        "read_file",
        json!({"type": "object"}),
        &Arc::new(AtomicUsize::new(0)),
    )])
    .unwrap();
    let policy = RulePolicy::from_json(
        &format!(
            r#"{{"rules": [{{"id": "read", "tool": "read_file", "action": "allow", "reason": "reads are fine"}}],
                "limits": [{{"id": "cap", "tool": "read_file", "max": {CAP}, "per": "minute", "over": "deny",
                             "reason": "a few reads a minute"}}]}}"#
        ),
        &registry,
    )
    .unwrap();
    ToolController::try_new(registry, policy)
        .unwrap()
        .with_clock(ManualClock::new(T0))
        .with_rate_counters(counters)
}

fn allowed(controller: &ToolController, tries: usize) -> usize {
    (0..tries)
        .filter(|i| {
            let outcome = controller.handle(ToolCall::new(format!("c{i}"), "read_file", json!({})));
            matches!(outcome, Outcome::Completed(result) if !result.is_error)
        })
        .count()
}

/// Runs only as a child: counts against the store the parent named, prints how many ran.
#[test]
fn child_process_role() {
    let Ok(store) = std::env::var("TOOLGATE_RATE_STORE") else {
        return;
    };
    let target = std::env::var("TOOLGATE_RATE_TARGET").unwrap();
    let controller = match store.as_str() {
        "sqlite" => controller(SqliteRateCounters::open(&target, "shared").unwrap()),
        _ => controller(PostgresRateCounters::connect(&target, "shared").unwrap()),
    };
    println!("CHILD ALLOWED {}", allowed(&controller, TRIES_PER_PROCESS));
}

/// Two children at once against `target`; the number each authorized.
fn two_children(store: &str, target: &str) -> Vec<usize> {
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "rate_limits_shared::child_process_role",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TOOLGATE_RATE_STORE", store)
                .env("TOOLGATE_RATE_TARGET", target)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success());
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.lines()
                .find_map(|line| line.split("CHILD ALLOWED ").nth(1))
                .unwrap_or_else(|| panic!("no count from the child: {text}"))
                .parse()
                .unwrap()
        })
        .collect()
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("toolgate-rates-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
    fn file(&self) -> PathBuf {
        self.0.join("toolgate.db")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn two_processes_sharing_a_sqlite_file_authorize_the_cap_between_them() {
    let scratch = Scratch::new("two-processes");
    // The approval ledger's own file: counters live beside the approvals.
    drop(toolgate::approvals::SqliteApprovalStore::open(scratch.file()).unwrap());
    let counts = two_children("sqlite", scratch.file().to_str().unwrap());
    assert_eq!(counts.iter().sum::<usize>(), CAP, "{counts:?}");
    // A third controller over the same file and session finds the cap reached.
    let third = controller(SqliteRateCounters::open(scratch.file(), "shared").unwrap());
    assert_eq!(allowed(&third, 3), 0);
}

#[test]
fn sqlite_sessions_are_apart_survive_reopening_and_can_be_forgotten() {
    let scratch = Scratch::new("sessions");
    let first = controller(SqliteRateCounters::open(scratch.file(), "a").unwrap());
    assert_eq!(allowed(&first, CAP + 3), CAP);
    drop(first);
    let other = controller(SqliteRateCounters::open(scratch.file(), "b").unwrap());
    assert_eq!(allowed(&other, CAP + 3), CAP, "session b counts apart");
    let counters = Arc::new(SqliteRateCounters::open(scratch.file(), "a").unwrap());
    let reopened = controller(Arc::clone(&counters));
    assert_eq!(
        allowed(&reopened, 1),
        0,
        "session a's counts survived reopening"
    );
    counters.forget_session().unwrap();
    assert_eq!(allowed(&reopened, CAP + 3), CAP);
    // A session named like a prefix of another ("a" and "a:b") shares nothing with it.
    let prefixed = controller(SqliteRateCounters::open(scratch.file(), "a:b").unwrap());
    assert_eq!(allowed(&prefixed, CAP + 3), CAP);
}

#[test]
fn postgres_servers_share_their_limits_across_processes_threads_and_sessions() {
    let Some(base) = postgres_support::server_url() else {
        return;
    };
    let db = postgres_support::Db::new(&base, "rates");
    let url = db.url("rates");
    let counts = two_children("postgres", &url);
    assert_eq!(counts.iter().sum::<usize>(), CAP, "{counts:?}");

    // Threads of two in-process controllers in another session: again exactly the cap.
    let nodes: Vec<Arc<ToolController>> = (0..2)
        .map(|_| {
            Arc::new(controller(
                PostgresRateCounters::connect(&url, "threads").unwrap(),
            ))
        })
        .collect();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let node = Arc::clone(&nodes[i % 2]);
            std::thread::spawn(move || allowed(&node, 8))
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, CAP);

    let counters = PostgresRateCounters::connect(&url, "threads").unwrap();
    assert!(!format!("{counters:?}").contains("password"));
    counters.forget_session().unwrap();
    assert_eq!(allowed(&controller(counters), CAP + 1), CAP);
    // The first session's cap still holds.
    let again = controller(PostgresRateCounters::connect(&url, "shared").unwrap());
    assert_eq!(allowed(&again, 1), 0);
}

/// Opens a store's counters for a session.
type OpenCounters = Box<dyn Fn(&str) -> Arc<dyn RateCounters>>;

/// A policy replaced with a longer window still sees the calls counted under the shorter one, in
/// both durable stores (they keep every time for the longest window, a day).
#[test]
fn durable_counters_count_past_calls_by_a_replaced_policys_longer_window() {
    let scratch = Scratch::new("window");
    let mut stores: Vec<OpenCounters> = Vec::new();
    let file = scratch.file();
    stores.push(Box::new(move |session| {
        Arc::new(SqliteRateCounters::open(&file, session).unwrap())
    }));
    let db = postgres_support::server_url().map(|base| postgres_support::Db::new(&base, "window"));
    if let Some(db) = &db {
        let url = db.url("window");
        stores.push(Box::new(move |session| {
            Arc::new(PostgresRateCounters::connect(&url, session).unwrap())
        }));
    }
    for open in &stores {
        let registry = ToolRegistry::new([counted(
            "read_file",
            json!({"type": "object"}),
            &Arc::new(AtomicUsize::new(0)),
        )])
        .unwrap();
        let text = |per: &str| {
            format!(
                r#"{{"rules": [{{"id": "read", "tool": "read_file", "action": "allow", "reason": "r"}}],
                    "limits": [{{"id": "cap", "tool": "read_file", "max": 1, "per": "{per}", "over": "deny", "reason": "one"}}]}}"#
            )
        };
        let clock = ManualClock::new(T0);
        let policy = RulePolicy::from_json(&text("minute"), &registry).unwrap();
        let controller = ToolController::try_new(registry, policy)
            .unwrap()
            .with_clock(clock.clone())
            .with_rate_counters(open("window"));
        let runs = || {
            let outcome = controller.handle(ToolCall::new("c", "read_file", json!({})));
            matches!(outcome, Outcome::Completed(result) if !result.is_error)
        };
        assert!(runs());
        clock.advance(std::time::Duration::from_secs(70));
        controller
            .try_replace_policy(|registry| RulePolicy::from_json(&text("hour"), registry))
            .unwrap();
        assert!(
            !runs(),
            "70 s after the first call, within the hour now in force"
        );
        clock.advance(std::time::Duration::from_secs(3_600));
        assert!(runs());
    }
}

/// A PostgreSQL connection lost between calls: the take on the dead connection fails and denies
/// the call, recording nothing; the next take reconnects and counts as before.
#[test]
fn postgres_counters_deny_on_a_lost_connection_then_reconnect() {
    let Some(base) = postgres_support::server_url() else {
        return;
    };
    let db = postgres_support::Db::new(&base, "reconnect");
    let controller =
        controller(PostgresRateCounters::connect(&db.url("rates_reconnect"), "reconnect").unwrap());
    assert_eq!(allowed(&controller, 1), 1);
    let mut admin = db.admin();
    let killed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rates_reconnect'",
            &[],
        )
        .unwrap();
    assert_eq!(killed.len(), 1, "one counters connection");
    let outcome = controller.handle(ToolCall::new("c", "read_file", json!({})));
    let Outcome::Completed(denied) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        denied.is_error && denied.content.contains("could not be counted"),
        "{denied:?}"
    );
    // Reconnected: the one earlier call is still counted, the failed one is not.
    assert_eq!(allowed(&controller, CAP + 1), CAP - 1);
}
