//! Evasions of rate limits: each test is one probe a model (which writes the arguments and the call
//! ids) or a plausible deployment could try against the caps, named by its class. A failing test
//! is a guarantee that does not hold yet.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use toolgate::policy::AsyncPolicy;
use toolgate::policy::Layers;
use toolgate::policy::Shadow;

use crate::common::{block_on, counted};
use serde_json::{Value, json};
use toolgate::audit::{AuditError, AuditEvent, AuditKind, AuditSink, MemoryAuditSink};
use toolgate::clock::ManualClock;
use toolgate::definition::BoxFuture;
use toolgate::limits::MemoryRateCounters;
use toolgate::*;

const T0: u64 = 1_800_000_000_000;

/// `send_email` with `to` as a text or a list of texts; `notify` whose `to` is any list.
fn registry(runs: &Arc<AtomicUsize>) -> ToolRegistry {
    ToolRegistry::new([
        counted(
            "send_email",
            json!({
                "type": "object",
                "properties": {
                    "to": {"type": ["string", "array", "null"], "items": {"type": ["string", "null"]}},
                    "body": {"type": "string"}
                }
            }),
            runs,
        ),
        counted(
            "notify",
            json!({"type": "object", "properties": {"to": {"type": "array"}}}),
            runs,
        ),
        counted("deploy__web", json!({"type": "object"}), runs),
        counted("deploy__db", json!({"type": "object"}), runs),
    ])
    .unwrap()
}

const RULES: &str = r#"
    {"id": "mail", "tool": "send_email", "action": "allow", "reason": "mail is fine"},
    {"id": "notify", "tool": "notify", "action": "allow", "reason": "notes are fine"},
    {"id": "deploy", "tool": "deploy__*", "action": "allow", "reason": "deploys are fine"}"#;

fn policy_json(rules: &str, limits: &str) -> String {
    format!(r#"{{"rules": [{rules}], "limits": [{limits}]}}"#)
}

fn rule_policy(rules: &str, limits: &str, registry: &ToolRegistry) -> RulePolicy {
    RulePolicy::from_json(&policy_json(rules, limits), registry).unwrap_or_else(|e| panic!("{e}"))
}

struct Bench {
    controller: ToolController,
    clock: ManualClock,
    runs: Arc<AtomicUsize>,
}

fn bench_with(limits: &str, rules: &str) -> Bench {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let policy = rule_policy(rules, limits, &registry);
    let clock = ManualClock::new(T0);
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_clock(clock.clone());
    Bench {
        controller,
        clock,
        runs,
    }
}

fn bench(limits: &str) -> Bench {
    bench_with(limits, RULES)
}

fn ran(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Completed(result) if !result.is_error)
}

fn send(bench: &Bench, tool: &str, arguments: Value) -> Outcome {
    bench.controller.handle(ToolCall::new("c", tool, arguments))
}

fn mail_runs(bench: &Bench, arguments: &str) -> bool {
    let arguments: Value = serde_json::from_str(arguments).unwrap();
    ran(&send(bench, "send_email", arguments))
}

const ONE_PER_RECIPIENT_CI: &str = r#"{"id": "per-recipient", "tool": "send_email", "max": 1,
    "per": "day", "over": "deny", "key": {"pointer": "/to", "case_insensitive": true},
    "reason": "one mail a day to one recipient"}"#;

const ASK_MAIL: &str = r#"
    {"id": "mail", "tool": "send_email", "action": "ask", "reason": "a person reads mail first"}"#;

fn held(outcome: Outcome) -> ApprovalRequest {
    match outcome {
        Outcome::PendingApproval(request) => request,
        other => panic!("expected a held call, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Audit: a call that does not run because its record failed.

#[derive(Debug, Default)]
struct FailFirstAllow {
    failed: AtomicBool,
    inner: MemoryAuditSink,
}

impl AuditSink for FailFirstAllow {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        if event.kind == AuditKind::Decision
            && event.action == Some(PolicyAction::Allow)
            && !self.failed.swap(true, Ordering::SeqCst)
        {
            return Err(AuditError::new("audit disk full"));
        }
        self.inner.record(event)
    }
}

#[test]
fn audit_a_call_not_run_because_its_record_failed_still_spends_its_slot() {
    let bench = bench(
        r#"{"id": "one", "tool": "deploy__web", "max": 1, "per": "day",
        "over": "deny", "reason": "one a day"}"#,
    );
    let controller = bench
        .controller
        .with_audit_sink(Arc::new(FailFirstAllow::default()));
    let call = || ToolCall::new("c", "deploy__web", json!({}));
    assert!(!ran(&controller.handle(call())), "the record failed");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 0);
    // Documented, and on the strict side: the slot was taken when the call was authorized, and
    // counting it back could let a call past the cap if the sink fails after the handler ran.
    assert!(!ran(&controller.handle(call())));
    assert_eq!(bench.runs.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// Clock: stepped back, near the end of u64.

#[test]
fn clock_stepped_back_or_at_the_end_of_time_still_counts() {
    let bench = bench(
        r#"{"id": "one", "tool": "deploy__web", "max": 1, "per": "minute",
        "over": "deny", "reason": "one a minute"}"#,
    );
    assert!(ran(&send(&bench, "deploy__web", json!({}))));
    bench.clock.set(T0 - 3_600_000);
    assert!(!ran(&send(&bench, "deploy__web", json!({}))));
    bench.clock.set(T0 + 59_999);
    assert!(!ran(&send(&bench, "deploy__web", json!({}))));
    bench.clock.set(u64::MAX - 10);
    assert!(ran(&send(&bench, "deploy__web", json!({}))));
    bench.clock.set(u64::MAX);
    assert!(!ran(&send(&bench, "deploy__web", json!({}))));
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
}

// ---------------------------------------------------------------------------------------------
// Secrecy: key values never leave as text.

#[test]
fn secrecy_key_values_never_appear_in_reasons_audit_or_debug() {
    const SECRET: &str = "secret-recipient-7Q2";
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let policy = rule_policy(RULES, ONE_PER_RECIPIENT_CI, &registry);
    let audit = Arc::new(MemoryAuditSink::new());
    let counters = Arc::new(MemoryRateCounters::default());
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_clock(ManualClock::new(T0))
        .with_audit_sink(Arc::clone(&audit))
        .with_rate_counters(Arc::clone(&counters));
    let mut texts = Vec::new();
    let mut mail = |to: Value| {
        let outcome = controller.handle(ToolCall::new("c", "send_email", json!({"to": to})));
        texts.push(format!("{outcome:?}"));
    };
    mail(json!(SECRET));
    mail(json!(SECRET.to_uppercase()));
    let many: Vec<String> = (0..70).map(|i| format!("{SECRET}-{i}")).collect();
    mail(json!(many));
    texts.push(format!("{controller:?}"));
    texts.push(format!("{counters:?}"));
    texts.extend(audit.events().iter().map(|event| format!("{event:?}")));
    let lower = SECRET.to_lowercase();
    for text in &texts {
        let folded = text.to_lowercase();
        assert!(!folded.contains(&lower), "a key value leaked: {text}");
    }
    assert!(texts.iter().any(|text| text.contains("per-recipient")));
}

// ---------------------------------------------------------------------------------------------
// Concurrency: proposals and approvals racing for the last slots.

#[test]
fn concurrency_handle_and_resolve_racing_never_exceed_a_deny_cap() {
    let limits = r#"{"id": "cap", "tool": "deploy__*", "max": 5, "per": "hour", "over": "deny",
        "reason": "five an hour"}"#;
    let rules = r#"
        {"id": "ask-db", "tool": "deploy__db", "action": "ask", "reason": "the db needs a person"},
        {"id": "web", "tool": "deploy__web", "action": "allow", "reason": "web is fine"}"#;
    let bench = bench_with(limits, rules);
    let requests: Vec<ApprovalRequest> = (0..8)
        .map(|_| held(send(&bench, "deploy__db", json!({}))))
        .collect();
    let barrier = Barrier::new(16);
    std::thread::scope(|scope| {
        for request in &requests {
            let (controller, barrier) = (&bench.controller, &barrier);
            scope.spawn(move || {
                barrier.wait();
                let _ = controller.resolve(ApprovalResponse::approve(request.approval_id));
            });
        }
        for _ in 0..8 {
            let (controller, barrier) = (&bench.controller, &barrier);
            scope.spawn(move || {
                barrier.wait();
                let _ = controller.handle(ToolCall::new("c", "deploy__web", json!({})));
            });
        }
    });
    assert_eq!(bench.runs.load(Ordering::SeqCst), 5);
}

mod approvals;
mod counters;
mod key_spellings;
mod layers;
mod paths;
