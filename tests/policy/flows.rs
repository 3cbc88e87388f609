//! Flow rules: labels, what a session did before deciding what it may do next, sum caps — in
//! memory, in a SQLite file shared by real processes and in PostgreSQL shared by several — and the
//! attacks: spellings that dodge a label or a path, sessions that restart, races, full histories.
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use crate::postgres_support;
use toolgate::PolicyOutcome;
use toolgate::policy::Layers;
use toolgate::policy::Shadow;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::counted;
use crate::flow_setup::*;
use serde_json::{Value, json};
use toolgate::limits::{
    MemoryRateCounters, PostgresRateCounters, RateCounters, SqliteRateCounters,
};
use toolgate::rules::PolicyLoadError;
use toolgate::*;

const TRIFECTA: &str = r#"
  "labels": {"private_data": ["read_file", "db__*"], "untrusted_content": ["web_fetch"],
             "external_egress": ["send_email", "web_fetch"]},
  "flows": [
    {"id": "egress-after-private", "label": "external_egress", "action": "ask",
     "reason": "this session read private data: a person confirms anything leaving",
     "after": {"label": "private_data", "within": "session"}},
    {"id": "no-fetch-after-secrets", "tool": "web_fetch", "action": "deny",
     "reason": "no fetching within an hour of reading secrets",
     "after": {"tool": "read_file", "within": "hour",
               "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}
  ]"#;

const READ_THEN_WRITE: &str = r#"
  "flows": [{"id": "read-before-write", "tool": "write_file", "action": "deny",
     "reason": "a file is written only after it was read in this session",
     "unless_after": {"tool": "read_file", "within": "session",
                      "same": {"earlier": "/path", "now": "/path", "as_path": true}}}]"#;

const REFUND_CAP: &str = r#"
  "limits": [{"id": "refunds-per-order", "tool": "refund", "sum": "/cents", "key": {"pointer": "/order"},
              "max": 10000, "per": "day", "over": "deny",
              "reason": "the refunds of one order stay within 10,000 cents a day"}]"#;

// ---- shared stores: real processes and a real server ---------------------------------------------

const ONCE: &str = r#"
  "flows": [{"id": "deploy-once", "tool": "deploy", "action": "deny", "reason": "one deploy a session",
             "after": {"tool": "deploy", "within": "session"}}]"#;

const TRIES_PER_PROCESS: usize = 10;

/// Runs only as a child: deploys and refunds against the store the parent named; prints what ran.
#[test]
fn child_process_role() {
    let Ok(store) = std::env::var("TOOLGATE_FLOW_STORE") else {
        return;
    };
    let target = std::env::var("TOOLGATE_FLOW_TARGET").unwrap();
    let counters: Arc<dyn RateCounters> = match store.as_str() {
        "sqlite" => Arc::new(SqliteRateCounters::open(&target, "shared").unwrap()),
        _ => Arc::new(PostgresRateCounters::connect(&target, "shared").unwrap()),
    };
    let extra = format!("{ONCE}, {REFUND_CAP}");
    let (controller, _, _) = controller(&extra, counters);
    let deploys = (0..TRIES_PER_PROCESS)
        .filter(|_| call(&controller, "deploy", json!({})) == "allow")
        .count();
    let cents: i64 = (0..TRIES_PER_PROCESS)
        .filter(|_| call(&controller, "refund", json!({"order": "A", "cents": 700})) == "allow")
        .map(|_| 700)
        .sum();
    println!("CHILD RAN {deploys} {cents}");
}

/// Two children at once against `target`: what each ran (deploys, refunded cents).
fn two_children(store: &str, target: &str) -> Vec<(usize, i64)> {
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "flows::child_process_role",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TOOLGATE_FLOW_STORE", store)
                .env("TOOLGATE_FLOW_TARGET", target)
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
            let line = text
                .lines()
                .find_map(|line| line.split("CHILD RAN ").nth(1))
                .unwrap_or_else(|| panic!("no count from the child: {text}"))
                .to_owned();
            let mut parts = line.split(' ');
            (
                parts.next().unwrap().parse().unwrap(),
                parts.next().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn two_processes_on_one_sqlite_file_never_both_get_past_a_flow_rule_or_a_sum() {
    let file = scratch("two-processes");
    let ran = two_children("sqlite", file.to_str().unwrap());
    assert_eq!(
        ran.iter().map(|(deploys, _)| deploys).sum::<usize>(),
        1,
        "{ran:?}"
    );
    // 14 refunds of 700 cents fit in 10,000: 14 * 700 = 9,800.
    assert_eq!(
        ran.iter().map(|(_, cents)| cents).sum::<i64>(),
        9_800,
        "{ran:?}"
    );
    // The session restarts (a new process, the same file): the history is still there.
    let (controller, _, _) = controller(ONCE, SqliteRateCounters::open(&file, "shared").unwrap());
    assert_eq!(call(&controller, "deploy", json!({})), "deny");
    // Another session starts afresh.
    let (controller, _, _) =
        self::controller(ONCE, SqliteRateCounters::open(&file, "other").unwrap());
    assert_eq!(call(&controller, "deploy", json!({})), "allow");
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn two_processes_on_one_postgres_server_never_both_get_past_a_flow_rule_or_a_sum() {
    let Some(base) = postgres_support::server_url() else {
        return;
    };
    let db = postgres_support::Db::new(&base, "flows");
    let url = db.url("flows");
    let ran = two_children("postgres", &url);
    assert_eq!(
        ran.iter().map(|(deploys, _)| deploys).sum::<usize>(),
        1,
        "{ran:?}"
    );
    assert_eq!(
        ran.iter().map(|(_, cents)| cents).sum::<i64>(),
        9_800,
        "{ran:?}"
    );
    // Threads of two in-process controllers in another session: again one deploy.
    let nodes: Vec<Arc<ToolController>> = (0..2)
        .map(|_| {
            Arc::new(
                controller(
                    ONCE,
                    PostgresRateCounters::connect(&url, "threads").unwrap(),
                )
                .0,
            )
        })
        .collect();
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let node = Arc::clone(&nodes[i % 2]);
            std::thread::spawn(move || {
                (0..3)
                    .filter(|_| call(&node, "deploy", json!({})) == "allow")
                    .count()
            })
        })
        .collect();
    assert_eq!(
        threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .sum::<usize>(),
        1
    );
}

mod as_limits;
mod decisions;
mod load_checks;
