//! What provenance costs (memory store), in one run:
//!
//! - `result_10kb_plain` / `result_10kb_recorded`: a call returning a 10 KB page (prose with
//!   links, addresses, IBANs and numbers) under a policy that reads no provenance, and under one
//!   that records its values — the difference is the recording, target ≤ 20 µs;
//! - `one_flow_rule` / `one_provenance_condition`: an allowed call judged by one flow rule, and by
//!   one provenance condition (a payee named by the person) — target ≤ 2×;
//! - `session_10_results` / `session_1000_results`: that provenance call in a session holding 10
//!   or 1,000 recorded results — target ≤ 1.5×.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::{
    Outcome, RulePolicy, ToolCall, ToolController, ToolDefinition, ToolError, ToolRegistry,
    ToolSpec,
};

/// About 10 KB of mail-like text: 40 paragraphs, each with a link, an address and a number.
fn page() -> String {
    (0..40)
        .map(|n| {
            format!(
                "Paragraph {n}: our quarterly report is at https://reports.example/{n}/q3?lang=en \
                 and questions go to team{n}@corp.example. The reference for this item is \
                 {:08} and the settlement account stays unchanged for the period. Please read \
                 the attached notes before the meeting, and reply by Friday.\n",
                n * 7919
            )
        })
        .collect()
}

fn registry(page: String) -> ToolRegistry {
    let page = move |_: &Value| -> Result<String, ToolError> { Ok(page.clone()) };
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let numbered = move |arguments: &Value| -> Result<String, ToolError> {
        let n = arguments["n"].as_u64().unwrap_or(0);
        Ok(format!(
            "https://a{n}.example/x mail{n}@b.example {:010}",
            n * 31
        ))
    };
    let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let payee = json!({"type": "object", "properties": {"iban": {"type": "string"}, "path": {"type": "string"}}});
    ToolRegistry::new([
        ToolDefinition::new(ToolSpec::new("read_page", "bench", object.clone()), page)
            .expect("compiles"),
        ToolDefinition::new(ToolSpec::new("read_numbered", "bench", object), numbered)
            .expect("compiles"),
        ToolDefinition::new(ToolSpec::new("read_file", "bench", payee.clone()), noop)
            .expect("compiles"),
        ToolDefinition::new(ToolSpec::new("send_money", "bench", payee), noop).expect("compiles"),
    ])
    .expect("distinct")
}

fn controller(extra: &str) -> ToolController {
    let registry = registry(page());
    let text = format!(
        r#"{{"rules": [{{"id": "all", "tool": "*", "action": "allow", "reason": "b"}}] {extra}}}"#
    );
    let policy = RulePolicy::from_json(&text, &registry).expect("loads");
    ToolController::try_new(registry, policy).expect("fits")
}

fn allowed(controller: &ToolController, tool: &str, arguments: Value) {
    let outcome = controller.handle(ToolCall::new("c", tool, arguments));
    assert!(
        matches!(outcome, Outcome::Completed(ref result) if !result.is_error),
        "{outcome:?}"
    );
    let _ = black_box(outcome);
}

const PROVENANCE: &str = r#", "flows": [{"id": "payee", "tool": "send_money", "action": "ask",
    "reason": "b", "provenance": {"pointer": "/iban", "not_seen_in": ["person"]}}]"#;

const PAYEE: &str = "GB82WEST12345698765432";

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("provenance");
    let plain = controller("");
    group.bench_function("result_10kb_plain", |b| {
        b.iter(|| allowed(&plain, "read_page", json!({})));
    });
    // A fresh controller every 400 results: a session's bound (100,000 values) is never reached.
    group.bench_function("result_10kb_recorded", |b| {
        b.iter_custom(|iterations| {
            let mut spent = Duration::ZERO;
            let mut left = iterations;
            while left > 0 {
                let session = controller(PROVENANCE);
                let batch = left.min(400);
                let start = Instant::now();
                for _ in 0..batch {
                    allowed(&session, "read_page", json!({}));
                }
                spent += start.elapsed();
                left -= batch;
            }
            spent
        });
    });
    let flowing = controller(
        r#", "flows": [{"id": "no-pay-after-secrets", "tool": "send_money", "action": "deny",
            "reason": "b", "after": {"tool": "read_file", "within": "hour",
            "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}]"#,
    );
    group.bench_function("one_flow_rule", |b| {
        b.iter(|| allowed(&flowing, "send_money", json!({"iban": PAYEE})));
    });
    for results in [10, 1_000] {
        let session = controller(PROVENANCE);
        session
            .record_person_request(None, &format!("pay {PAYEE}"))
            .expect("recorded");
        for n in 0..results {
            allowed(&session, "read_numbered", json!({"n": n}));
        }
        let name = if results == 10 {
            "one_provenance_condition".to_owned()
        } else {
            format!("session_{results}_results")
        };
        group.bench_function(name, |b| {
            b.iter(|| allowed(&session, "send_money", json!({"iban": PAYEE})));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
