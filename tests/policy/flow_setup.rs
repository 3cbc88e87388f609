//! What the flow rule tests share: tools that count their runs, a policy that allows every one of
//! them with labels, flows and limits on top, a controller on a manual clock, and what happened to
//! a call.
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::common::counted;
use serde_json::{Value, json};
use toolgate::clock::ManualClock;
use toolgate::limits::RateCounters;
use toolgate::rules::PolicyLoadError;
use toolgate::*;

pub(crate) const T0: u64 = 1_800_000_000_000;
pub(crate) const HOUR: u64 = 3_600_000;
pub(crate) const DAY: u64 = 24 * HOUR;

pub(crate) struct Tools {
    pub(crate) registry: ToolRegistry,
    pub(crate) runs: Arc<AtomicUsize>,
}

/// A tool returning whatever `result` holds now.
pub(crate) fn returning(
    name: &str,
    schema: Value,
    result: &std::sync::Arc<std::sync::Mutex<String>>,
) -> ToolDefinition {
    let result = std::sync::Arc::clone(result);
    ToolDefinition::new(
        ToolSpec::new(name, "Returns what the test put there.", schema),
        move |_: &Value| -> Result<String, ToolError> { Ok(result.lock().unwrap().clone()) },
    )
    .unwrap()
}

pub(crate) fn schema_of(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

/// Files, a database, the web, mail, deploys and payments, every call counted in `runs`.
pub(crate) fn tools() -> Tools {
    let runs = Arc::new(AtomicUsize::new(0));
    let path =
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    let registry = ToolRegistry::new([
        counted("read_file", path.clone(), &runs),
        counted("write_file", path.clone(), &runs),
        counted("download", path.clone(), &runs),
        counted("run_file", path.clone(), &runs),
        counted("read_any", schema_of(json!({"path": {}})), &runs),
        counted("db__query", json!({"type": "object"}), &runs),
        counted("web_fetch", schema_of(json!({"url": {"type": "string"}})), &runs),
        counted("send_email", schema_of(json!({"to": {"type": "string"}})), &runs),
        counted(
            "mail",
            schema_of(json!({"to": {"type": "array", "items": {"type": "string"}}})),
            &runs,
        ),
        counted(
            "deploy",
            schema_of(json!({"targets": {"type": "array", "items": {"type": "string"}}})),
            &runs,
        ),
        counted("settle", schema_of(json!({"order": {}})), &runs),
        counted(
            "refund",
            json!({"type": "object", "properties": {"order": {"type": "string"}, "cents": {"type": "integer"}},
                   "required": ["order", "cents"]}),
            &runs,
        ),
        counted("pay", schema_of(json!({"order": {}, "cents": {}})), &runs),
    ])
    .unwrap();
    Tools { registry, runs }
}

/// `rules` (default: every tool allowed), then `extra` (labels, flows, limits, paths) on top.
pub(crate) fn policy_with(
    rules: Option<Value>,
    extra: &str,
    registry: &ToolRegistry,
) -> Result<RulePolicy, PolicyLoadError> {
    let rules = rules.unwrap_or_else(|| {
        Value::Array(
            registry
                .specs()
                .map(|spec| json!({"id": format!("allow-{}", spec.name), "tool": spec.name, "action": "allow", "reason": "fine"}))
                .collect(),
        )
    });
    let mut text: Value = serde_json::from_str(&format!("{{{extra}}}")).unwrap();
    text["rules"] = rules;
    RulePolicy::from_json(&text.to_string(), registry)
}

/// Every tool allowed, then `extra` on top; what loading it says.
pub(crate) fn try_policy(
    extra: &str,
    registry: &ToolRegistry,
) -> Result<RulePolicy, PolicyLoadError> {
    policy_with(None, extra, registry)
}

/// Every tool allowed, then `extra` on top, which must load.
pub(crate) fn policy(extra: &str, registry: &ToolRegistry) -> RulePolicy {
    try_policy(extra, registry).unwrap_or_else(|error| panic!("{error}"))
}

/// A controller over [`tools`] and [`policy`]`(extra)`, counting in `counters`, on a manual clock
/// at `T0`.
pub(crate) fn controller(
    extra: &str,
    counters: impl RateCounters + 'static,
) -> (ToolController, Arc<ManualClock>, Arc<AtomicUsize>) {
    let Tools { registry, runs } = tools();
    let policy = policy(extra, &registry);
    let clock = Arc::new(ManualClock::new(T0));
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_clock(Arc::clone(&clock))
        .with_rate_counters(counters);
    (controller, clock, runs)
}

/// `allow`, `ask` or `deny`: what happened to the call.
pub(crate) fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Completed(result) if !result.is_error => "allow",
        Outcome::Completed(_) => "deny",
        Outcome::PendingApproval(_) => "ask",
    }
}

/// `allow`, `ask` or `deny`: what happened to the call.
pub(crate) fn call(controller: &ToolController, tool: &str, arguments: Value) -> &'static str {
    outcome_word(controller.handle(ToolCall::new("c", tool, arguments)))
}

/// The path of a SQLite file in a fresh directory of its own.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolgate-flows-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("toolgate.db")
}
