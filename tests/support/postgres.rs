//! What the PostgreSQL tests share: the server from `TOOLGATE_PG_URL` (started by `.ci/postgres`),
//! a fresh schema per test, the tool every node registers, and the run log its handler appends to.
#![allow(dead_code, reason = "each test binary uses part of this module")]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate::approvals::ApprovalId;

use serde_json::{Value, json};
use toolgate::approvals::PostgresApprovalStore;
use toolgate::audit::PostgresAuditSink;
use toolgate::*;

/// The server's URL, or `None` with a printed note when no server was started. Under CI
/// (`CI` set) a missing server is an error: CI never skips these tests.
pub fn server_url() -> Option<String> {
    match std::env::var("TOOLGATE_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI must run the PostgreSQL tests: start a server with .ci/postgres")
        }
        _ => {
            // Straight to stderr, once per binary: the test harness captures `eprintln!` of
            // passing tests, and this note must be seen.
            static NOTE: std::sync::Once = std::sync::Once::new();
            NOTE.call_once(|| {
                let _ = writeln!(
                    std::io::stderr(),
                    "note: TOOLGATE_PG_URL is not set, PostgreSQL tests skipped \
                     (run them with `.ci/postgres cargo test --features postgres --test ...`)"
                );
            });
            None
        }
    }
}

/// `url` with a search path and an application name (which the fault tests find backends by).
pub fn with_params(url: &str, schema: &str, application: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-csearch_path%3D{schema}&application_name={application}")
}

/// A connection for the test itself (setup, tampering, terminating backends).
pub fn admin(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// One test's own schema, dropped afterwards, with a scratch directory for its run log.
pub struct Db {
    pub base: String,
    pub schema: String,
    pub dir: PathBuf,
}

impl Db {
    pub fn new(base: &str, name: &str) -> Self {
        let schema = format!("tg_{name}_{}", std::process::id());
        let mut admin = admin(base);
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .unwrap();
        let dir = std::env::temp_dir().join(format!("toolgate-pg-{schema}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self {
            base: base.to_owned(),
            schema,
            dir,
        }
    }

    /// The URL a node named `application` connects with.
    pub fn url(&self, application: &str) -> String {
        with_params(&self.base, &self.schema, application)
    }

    /// A connection to this test's schema.
    pub fn admin(&self) -> postgres::Client {
        admin(&self.url("admin"))
    }

    pub fn store(&self, application: &str) -> PostgresApprovalStore {
        PostgresApprovalStore::connect(&self.url(application)).unwrap()
    }

    pub fn sink(&self, application: &str) -> PostgresAuditSink {
        PostgresAuditSink::connect(&self.url(application)).unwrap()
    }

    pub fn runs(&self) -> PathBuf {
        self.dir.join("runs.log")
    }

    /// The call ids the handler ran, in order.
    pub fn run_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.runs())
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Ok(mut admin) = base_connection(&self.base) {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

fn base_connection(url: &str) -> Result<postgres::Client, postgres::Error> {
    url.parse::<postgres::Config>()?.connect(postgres::NoTls)
}

pub fn patch_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"patch": {"type": "string"}},
        "required": ["patch"],
        "additionalProperties": false
    })
}

/// The tool every node registers (one definition, so one digest on every node): appends the call
/// id to the run log (one `write` of one line, `O_APPEND`, so lines from several processes do not
/// interleave) — after `pause` if given, so a test can kill it or restart the server mid-run.
pub fn logging_tool(runs: PathBuf, pause: Duration) -> ToolDefinition {
    ToolDefinition::new(
        ToolSpec::new("apply_patch", "Apply a patch.", patch_schema()),
        move |args: &Value| -> Result<String, ToolError> {
            let call = args["patch"].as_str().unwrap_or("?").to_owned();
            let append = |line: &str| {
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&runs)
                    .unwrap();
                file.write_all(format!("{line}\n").as_bytes()).unwrap();
                file.sync_all().unwrap();
            };
            append(&call);
            std::thread::sleep(pause);
            Ok(format!("applied {call}"))
        },
    )
    .unwrap()
}

/// A node: the logging tool behind an ask policy, approvals in the shared store, audit in the
/// shared chain.
pub fn node(db: &Db, application: &str, pause: Duration) -> ToolController {
    ToolController::new(
        ToolRegistry::new([logging_tool(db.runs(), pause)]).unwrap(),
        ToolPolicy::new(Vec::<String>::new(), ["apply_patch"]).unwrap(),
    )
    .with_approval_store(db.store(application))
    .with_audit_sink(db.sink(application))
}

/// Asks on `node` for a call whose patch (and run-log line) is `name`.
pub fn ask(node: &ToolController, name: &str) -> ApprovalId {
    match node.handle(ToolCall::new(name, "apply_patch", json!({"patch": name}))) {
        Outcome::PendingApproval(request) => request.approval_id,
        other => panic!("expected a pending approval, got {other:?}"),
    }
}

/// Runs `command` (the restart script) and waits for it.
pub fn run_script(path: &Path) {
    let status = std::process::Command::new(path).status().unwrap();
    assert!(status.success(), "{} failed: {status}", path.display());
}

/// A `call_received` audit event for call `c{n}`.
pub fn audit_event(n: impl std::fmt::Display) -> toolgate::audit::AuditEvent {
    serde_json::from_value(json!({
        "time_ms": 1, "kind": "call_received", "call_id": format!("c{n}"),
        "tool": "apply_patch", "argument_digest": "sha256:00"
    }))
    .unwrap()
}
