//! Figures for approvals and the audit log over PostgreSQL on this machine: the round trip of one
//! approval (hold, approve, run, record), answers per second with three processes answering the
//! same requests — each with and without the shared audit chain — and audited calls per second
//! from four processes, beside a baseline sink that inserts each event with a commit of its own;
//! and what provenance costs there: a 10 KB result's values recorded, a payee looked up.
//!
//! Run it with `.ci/postgres cargo run --release --features postgres --example postgres_figures`
//! (it needs `TOOLGATE_PG_URL`). It runs itself again as the three answering processes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::approvals::PostgresApprovalStore;
use toolgate::approvals::{ApprovalError, ApprovalId};
use toolgate::audit::PostgresAuditSink;
use toolgate::{
    ApprovalResponse, Outcome, ToolCall, ToolController, ToolDefinition, ToolError, ToolPolicy,
    ToolRegistry, ToolSpec,
};

// The 10 KB page and the provenance policy of `benches/provenance.rs`.
#[allow(
    dead_code,
    reason = "the benchmark's flow rule and sessions are not measured here"
)]
#[path = "../benches/shapes/provenance.rs"]
mod provenance;

const REQUESTS: usize = 200;
const PROCESSES: usize = 3;
const THREADS: usize = 4;

fn node(url: &str, audit: bool) -> Result<ToolController, Box<dyn std::error::Error>> {
    let tool = ToolDefinition::new(
        ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"})),
        |_: &Value| -> Result<String, ToolError> { Ok("applied".into()) },
    )?;
    let controller = ToolController::new(
        ToolRegistry::new([tool])?,
        ToolPolicy::new(Vec::<String>::new(), ["apply_patch"])?,
    )
    .with_approval_store(PostgresApprovalStore::connect(url)?);
    Ok(if audit {
        controller.with_audit_sink(PostgresAuditSink::connect(url)?)
    } else {
        controller
    })
}

fn ask(node: &ToolController, n: usize) -> Result<ApprovalId, Box<dyn std::error::Error>> {
    match node.handle(ToolCall::new(
        format!("c{n}"),
        "apply_patch",
        json!({"n": n}),
    )) {
        Outcome::PendingApproval(request) => Ok(request.approval_id),
        other => Err(format!("expected a pending approval, got {other:?}").into()),
    }
}

/// A child: answers every id from several threads, prints how many it approved and how long.
fn child(url: &str, audit: bool) -> Result<(), Box<dyn std::error::Error>> {
    let node = Arc::new(node(url, audit)?);
    let ids: Vec<ApprovalId> = std::env::var("FIGURES_IDS")?
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let process: usize = std::env::var("FIGURES_PROCESS")?.parse()?;
    let start: u128 = std::env::var("FIGURES_START_MS")?.parse()?;
    while epoch_ms() < start {
        std::thread::sleep(Duration::from_millis(1));
    }
    let started = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (node, ids) = (Arc::clone(&node), ids.clone());
            std::thread::spawn(move || {
                let offset = (process * THREADS + thread) * 17;
                let mut approved = 0;
                for k in 0..ids.len() {
                    let id = ids[(offset + k) % ids.len()];
                    match node.resolve(ApprovalResponse::approve(id)) {
                        Ok(_) => approved += 1,
                        Err(ApprovalError::NotPending { .. }) => {}
                        Err(other) => panic!("{other}"),
                    }
                }
                approved
            })
        })
        .collect();
    let approved: usize = threads.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    println!("FIGURES {approved} {}", started.elapsed().as_micros());
    Ok(())
}

fn epoch_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis())
}

fn fresh_schema(base: &str, name: &str) -> Result<String, Box<dyn std::error::Error>> {
    let schema = format!("toolgate_figures_{name}_{}", std::process::id());
    let mut admin = base.parse::<postgres::Config>()?.connect(postgres::NoTls)?;
    admin.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))?;
    let separator = if base.contains('?') { '&' } else { '?' };
    Ok(format!("{base}{separator}options=-csearch_path%3D{schema}"))
}

fn round_trips(base: &str, audit: bool) -> Result<(), Box<dyn std::error::Error>> {
    let url = fresh_schema(base, if audit { "rt_audit" } else { "rt" })?;
    let node = node(&url, audit)?;
    let mut micros = Vec::with_capacity(REQUESTS);
    for n in 0..REQUESTS {
        let started = Instant::now();
        let id = ask(&node, n)?;
        node.resolve(ApprovalResponse::approve(id))?;
        micros.push(started.elapsed().as_micros());
    }
    micros.sort_unstable();
    println!(
        "round trip (hold, approve, run, record){}: median {:.2} ms, p90 {:.2} ms over {REQUESTS}",
        if audit { " with the audit chain" } else { "" },
        micros[REQUESTS / 2] as f64 / 1000.0,
        micros[REQUESTS * 9 / 10] as f64 / 1000.0,
    );
    Ok(())
}

fn three_processes(base: &str, audit: bool) -> Result<(), Box<dyn std::error::Error>> {
    let url = fresh_schema(base, if audit { "tp_audit" } else { "tp" })?;
    let asking = node(&url, audit)?;
    let ids: Vec<String> = (0..REQUESTS)
        .map(|n| ask(&asking, n).map(|id| id.to_string()))
        .collect::<Result<_, _>>()?;
    let start = epoch_ms() + 1000;
    let children: Vec<_> = (0..PROCESSES)
        .map(|process| {
            std::process::Command::new(std::env::current_exe()?)
                .env("FIGURES_CHILD", if audit { "audit" } else { "plain" })
                .env("FIGURES_URL", &url)
                .env("FIGURES_IDS", ids.join(","))
                .env("FIGURES_PROCESS", process.to_string())
                .env("FIGURES_START_MS", start.to_string())
                .stdout(std::process::Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let (mut approved, mut slowest) = (0, 0u128);
    for child in children {
        let output = child.wait_with_output()?;
        let text = String::from_utf8_lossy(&output.stdout);
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix("FIGURES "))
            .ok_or("a child printed nothing")?;
        let mut numbers = line.split(' ').map(str::parse::<u128>);
        approved += numbers.next().ok_or("no count")??;
        slowest = slowest.max(numbers.next().ok_or("no time")??);
    }
    println!(
        "{PROCESSES} processes x {THREADS} threads answering the same {REQUESTS} requests{}: \
         {approved} approved once each in {:.0} ms = {:.0} approvals/s ({:.0} answers/s \
         counting the {} refused duplicates)",
        if audit { " with the audit chain" } else { "" },
        slowest as f64 / 1000.0,
        approved as f64 / (slowest as f64 / 1e6),
        (REQUESTS * PROCESSES * THREADS) as f64 / (slowest as f64 / 1e6),
        REQUESTS * PROCESSES * THREADS - approved as usize,
    );
    Ok(())
}

/// The baseline: each event one `INSERT` with its own commit, no chain, no lock.
struct PlainInsertSink(std::sync::Mutex<postgres::Client>);

impl toolgate::audit::AuditSink for PlainInsertSink {
    fn record(
        &self,
        event: &toolgate::audit::AuditEvent,
    ) -> Result<(), toolgate::audit::AuditError> {
        let text = serde_json::to_string(event)
            .map_err(|e| toolgate::audit::AuditError::caused_by("json", e))?;
        let mut client = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        client
            .execute("INSERT INTO plain_audit (event) VALUES ($1)", &[&text])
            .map(drop)
            .map_err(|e| toolgate::audit::AuditError::caused_by("insert", e))
    }
}

/// How long each process makes calls.
const CALLS_FOR: Duration = Duration::from_secs(4);
const CALLING_PROCESSES: usize = 4;

/// A child: makes allowed calls until `CALLS_FOR` has passed; prints how many.
fn calling_child(url: &str, sink: &str) -> Result<(), Box<dyn std::error::Error>> {
    let tool = ToolDefinition::new(
        ToolSpec::new("read_file", "Read a file.", json!({"type": "object"})),
        |_: &Value| -> Result<String, ToolError> { Ok("contents".into()) },
    )?;
    let controller = ToolController::new(
        ToolRegistry::new([tool])?,
        ToolPolicy::new(["read_file"], Vec::<String>::new())?,
    );
    let controller = match sink {
        "chain" => controller.with_audit_sink(PostgresAuditSink::connect(url)?),
        "plain" => controller.with_audit_sink(PlainInsertSink(std::sync::Mutex::new(
            url.parse::<postgres::Config>()?.connect(postgres::NoTls)?,
        ))),
        _ => controller,
    };
    let start: u128 = std::env::var("FIGURES_START_MS")?.parse()?;
    while epoch_ms() < start {
        std::thread::sleep(Duration::from_millis(1));
    }
    let started = Instant::now();
    let mut calls = 0_u64;
    while started.elapsed() < CALLS_FOR {
        match controller.handle(ToolCall::new(
            format!("c{calls}"),
            "read_file",
            json!({"path": "/srv/data/a.txt"}),
        )) {
            Outcome::Completed(result) if !result.is_error => calls += 1,
            other => return Err(format!("an allowed call ended {other:?}").into()),
        }
    }
    println!("FIGURES {calls} {}", started.elapsed().as_micros());
    Ok(())
}

/// Audited calls per second from `CALLING_PROCESSES` processes, with `sink` ("none", "plain",
/// "chain").
fn calls_per_second(base: &str, sink: &str) -> Result<f64, Box<dyn std::error::Error>> {
    let url = fresh_schema(base, &format!("calls_{sink}"))?;
    if sink == "plain" {
        let mut admin = url.parse::<postgres::Config>()?.connect(postgres::NoTls)?;
        admin.batch_execute("CREATE TABLE plain_audit (id bigserial PRIMARY KEY, event text)")?;
    }
    if sink == "chain" {
        // Tables created once, before the processes race to.
        drop(PostgresAuditSink::connect(&url)?);
    }
    let start = epoch_ms() + 1000;
    let children: Vec<_> = (0..CALLING_PROCESSES)
        .map(|_| {
            std::process::Command::new(std::env::current_exe()?)
                .env("FIGURES_CALLS", sink)
                .env("FIGURES_URL", &url)
                .env("FIGURES_START_MS", start.to_string())
                .stdout(std::process::Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut per_second = 0.0;
    for child in children {
        let output = child.wait_with_output()?;
        let text = String::from_utf8_lossy(&output.stdout);
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix("FIGURES "))
            .ok_or("a calling child printed nothing")?;
        let mut numbers = line.split(' ').map(str::parse::<f64>);
        let calls = numbers.next().ok_or("no count")??;
        let micros = numbers.next().ok_or("no time")??;
        per_second += calls / (micros / 1e6);
    }
    if sink == "chain" {
        // Every call's three events made it into one chain.
        let tip = PostgresAuditSink::connect(&url)?.verify()?;
        println!("  (the chain verifies: {} entries)", tip.entries);
    }
    Ok(per_second)
}

/// The median time to record the values of a 10 KB result (121 values), and to decide a call
/// by one provenance condition, with the counters in PostgreSQL.
fn provenance_figures(base: &str) -> Result<(), Box<dyn std::error::Error>> {
    let url = fresh_schema(base, "provenance")?;
    let controller = provenance::controller(provenance::PROVENANCE).with_rate_counters(
        toolgate::limits::PostgresRateCounters::connect(&url, "figures")?,
    );
    let median = |run: &dyn Fn()| {
        let mut micros: Vec<u128> = (0..50)
            .map(|_| {
                let started = Instant::now();
                run();
                started.elapsed().as_micros()
            })
            .collect();
        micros.sort_unstable();
        micros[micros.len() / 2] as f64 / 1000.0
    };
    let recording = median(&|| provenance::allowed(&controller, "read_page", json!({})));
    controller.record_person_request(None, &format!("pay {}", provenance::PAYEE))?;
    let deciding = median(&|| {
        provenance::allowed(
            &controller,
            "send_money",
            json!({"iban": provenance::PAYEE}),
        );
    });
    println!(
        "provenance in PostgreSQL: a 10 KB result's 121 values recorded in a median {recording:.2} ms; \
         a payment decided by one provenance condition in {deciding:.2} ms"
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Ok(kind) = std::env::var("FIGURES_CHILD") {
        return child(&std::env::var("FIGURES_URL")?, kind == "audit");
    }
    if let Ok(sink) = std::env::var("FIGURES_CALLS") {
        return calling_child(&std::env::var("FIGURES_URL")?, &sink);
    }
    let base = std::env::var("TOOLGATE_PG_URL")
        .map_err(|_| "set TOOLGATE_PG_URL, or run under .ci/postgres")?;
    provenance_figures(&base)?;
    round_trips(&base, false)?;
    round_trips(&base, true)?;
    three_processes(&base, false)?;
    three_processes(&base, true)?;
    let none = calls_per_second(&base, "none")?;
    let plain = calls_per_second(&base, "plain")?;
    let chain = calls_per_second(&base, "chain")?;
    println!(
        "{CALLING_PROCESSES} processes making allowed calls: {none:.0} calls/s without an audit \
         log; {plain:.0} calls/s with the baseline (each event one INSERT, one commit); \
         {chain:.0} calls/s with the audit chain ({:.2}x the baseline)",
        chain / plain
    );
    Ok(())
}
