//! What a flow rule costs, in one run beside a rate limit (memory store):
//!
//! - `one_rate_limit`: an allowed call counted by one limit (a slot taken per call);
//! - `one_flow_rule`: the same call judged by one flow rule (no fetching within an hour of reading
//!   a secret: the history is looked at, nothing recorded) — target ≤ 2× `one_rate_limit`;
//! - `history_10` and `history_100000`: a write allowed because its path was read before, in a
//!   session whose history holds 10 or 100,000 reads of that path — target: the same time.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::clock::ManualClock;
use toolgate::{
    Outcome, RulePolicy, ToolCall, ToolController, ToolDefinition, ToolError, ToolRegistry,
    ToolSpec,
};

fn registry() -> ToolRegistry {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let path =
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    ToolRegistry::new(["read_file", "write_file", "web_fetch"].map(|name| {
        ToolDefinition::new(ToolSpec::new(name, "bench", path.clone()), noop).expect("compiles")
    }))
    .expect("distinct")
}

fn controller(extra: &str) -> (ToolController, Arc<ManualClock>) {
    let registry = registry();
    let text = format!(
        r#"{{"rules": [
          {{"id": "read", "tool": "read_file", "action": "allow", "reason": "b"}},
          {{"id": "write", "tool": "write_file", "action": "allow", "reason": "b"}},
          {{"id": "fetch", "tool": "web_fetch", "action": "allow", "reason": "b"}}], {extra}}}"#
    );
    let policy = RulePolicy::from_json(&text, &registry).expect("loads");
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let controller = ToolController::try_new(registry, policy)
        .expect("fits")
        .with_clock(Arc::clone(&clock));
    (controller, clock)
}

fn allowed(controller: &ToolController, tool: &str, path: &str) {
    let outcome = controller.handle(ToolCall::new("c", tool, json!({ "path": path })));
    assert!(
        matches!(outcome, Outcome::Completed(ref result) if !result.is_error),
        "{outcome:?}"
    );
    let _ = black_box(outcome);
}

const READ_THEN_WRITE: &str = r#""flows": [{"id": "read-before-write", "tool": "write_file",
    "action": "deny", "reason": "read first", "unless_after": {"tool": "read_file",
    "within": "session", "same": {"earlier": "/path", "now": "/path", "as_path": true}}}]"#;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("flows");
    let (limited, clock) = controller(
        r#""limits": [{"id": "cap", "tool": "web_fetch", "max": 100000, "per": "minute",
                       "over": "deny", "reason": "b"}]"#,
    );
    group.bench_function("one_rate_limit", |b| {
        b.iter(|| {
            // A millisecond a call: at most 60,000 in any minute, so the cap is never reached.
            clock.advance(Duration::from_millis(1));
            allowed(&limited, "web_fetch", "/x");
        });
    });
    let (flowing, _) = controller(
        r#""flows": [{"id": "no-fetch-after-secrets", "tool": "web_fetch", "action": "deny",
            "reason": "b", "after": {"tool": "read_file", "within": "hour",
            "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}]"#,
    );
    group.bench_function("one_flow_rule", |b| {
        b.iter(|| allowed(&flowing, "web_fetch", "/x"));
    });
    for reads in [10, 100_000] {
        let (session, _) = controller(READ_THEN_WRITE);
        for _ in 0..reads {
            allowed(&session, "read_file", "/srv/a");
        }
        group.bench_function(format!("history_{reads}"), |b| {
            b.iter(|| allowed(&session, "write_file", "/srv/./a"));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
