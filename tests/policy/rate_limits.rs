//! Rate limits: caps per window, per key, per group and per session, counted once per call where
//! the controller authorizes it, with a fake clock for the window edges.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use toolgate::ApprovalOutcome;
use toolgate::PolicyOutcome;
use toolgate::policy::Layers;
use toolgate::policy::Shadow;

use crate::common::counted;
use serde_json::{Value, json};
use toolgate::audit::{AuditKind, MemoryAuditSink};
use toolgate::clock::ManualClock;
use toolgate::limits::{CounterError, MemoryRateCounters, RateCounters, Take, Taken};
use toolgate::rules::PolicyLoadError;
use toolgate::*;

const T0: u64 = 1_800_000_000_000;

fn mail_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "to": {"type": ["string", "array"], "items": {"type": "string"}},
            "body": {"type": "string"}
        },
        "required": ["body"]
    })
}

struct Bench {
    controller: ToolController,
    clock: ManualClock,
    runs: Arc<AtomicUsize>,
    audit: Arc<MemoryAuditSink>,
}

/// A controller over `send_email`, `deploy__web`, `deploy__db` and `read_file` (all counting runs
/// into one counter), with `policy` written against them and a manual clock at `T0`.
fn bench(policy: &str) -> Bench {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new([
        counted("send_email", mail_schema(), &runs),
        counted("deploy__web", json!({"type": "object"}), &runs),
        counted("deploy__db", json!({"type": "object"}), &runs),
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            &runs,
        ),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(policy, &registry).unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(T0);
    let audit = Arc::new(MemoryAuditSink::new());
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_clock(clock.clone())
        .with_audit_sink(Arc::clone(&audit));
    Bench {
        controller,
        clock,
        runs,
        audit,
    }
}

const ALLOW_ALL: &str = r#"
    {"id": "mail", "tool": "send_email", "action": "allow", "reason": "mail is fine"},
    {"id": "deploy", "tool": "deploy__*", "action": "allow", "reason": "deploys are fine"},
    {"id": "read", "tool": "read_file", "action": "allow", "reason": "reading is fine"}"#;

fn policy(limits: &str) -> String {
    format!(r#"{{"rules": [{ALLOW_ALL}], "limits": [{limits}]}}"#)
}

fn call(bench: &Bench, tool: &str, arguments: Value) -> Outcome {
    bench.controller.handle(ToolCall::new("c", tool, arguments))
}

fn mail(bench: &Bench, to: Value) -> Outcome {
    call(bench, "send_email", json!({"to": to, "body": "hi"}))
}

fn ran(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Completed(result) if !result.is_error)
}

fn denial(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Completed(result) if result.is_error => result.content.clone(),
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[test]
fn a_cap_per_minute_holds_max_calls_in_any_sixty_seconds_edges_to_the_millisecond() {
    let bench = bench(&policy(
        r#"{"id": "mail-cap", "tool": "send_email", "max": 3, "per": "minute", "over": "deny",
            "reason": "three emails a minute"}"#,
    ));
    assert!(ran(&mail(&bench, json!("a"))));
    bench.clock.advance(Duration::from_secs(20));
    assert!(ran(&mail(&bench, json!("a"))));
    assert!(ran(&mail(&bench, json!("b"))));
    let refused = mail(&bench, json!("a"));
    let reason = denial(&refused);
    assert!(
        reason.contains("mail-cap") && reason.contains("3 per minute"),
        "{reason}"
    );
    assert!(reason.contains("three emails a minute"), "{reason}");
    // One millisecond before the first call leaves the window: still full.
    bench.clock.set(T0 + 59_999);
    assert!(!ran(&mail(&bench, json!("a"))));
    // Exactly when it leaves: one slot, and only one.
    bench.clock.set(T0 + 60_000);
    assert!(ran(&mail(&bench, json!("a"))));
    assert!(!ran(&mail(&bench, json!("a"))));
    // Refused calls took no slot: at T0 + 80 s the two calls of T0 + 20 s leave.
    bench.clock.set(T0 + 80_000);
    assert!(ran(&mail(&bench, json!("a"))));
    assert!(ran(&mail(&bench, json!("a"))));
    assert!(!ran(&mail(&bench, json!("a"))));
    assert_eq!(bench.runs.load(Ordering::SeqCst), 6);
}

#[test]
fn hour_day_and_session_windows_have_their_lengths() {
    for (per, window) in [("hour", 3_600_000), ("day", 86_400_000)] {
        let bench = bench(&policy(&format!(
            r#"{{"id": "cap", "tool": "read_file", "max": 1, "per": "{per}", "over": "deny", "reason": "once"}}"#
        )));
        assert!(ran(&call(&bench, "read_file", json!({}))));
        bench.clock.set(T0 + window - 1);
        assert!(!ran(&call(&bench, "read_file", json!({}))), "{per}");
        bench.clock.set(T0 + window);
        assert!(ran(&call(&bench, "read_file", json!({}))), "{per}");
    }
    let bench = bench(&policy(
        r#"{"id": "cap", "tool": "read_file", "max": 2, "per": "session", "over": "deny", "reason": "twice"}"#,
    ));
    assert!(ran(&call(&bench, "read_file", json!({}))));
    assert!(ran(&call(&bench, "read_file", json!({}))));
    bench.clock.advance(Duration::from_secs(10 * 365 * 86_400));
    let reason = denial(&call(&bench, "read_file", json!({})));
    assert!(reason.contains("2 per session"), "{reason}");
}

#[test]
fn over_ask_holds_the_call_for_a_person_and_an_approved_call_is_counted() {
    let bench = bench(&policy(
        r#"{"id": "deploys", "tool": "deploy__*", "max": 1, "per": "hour", "over": "ask",
            "reason": "more deploys need a person"}"#,
    ));
    assert!(ran(&call(&bench, "deploy__web", json!({}))));
    let Outcome::PendingApproval(request) = call(&bench, "deploy__db", json!({})) else {
        panic!("past the cap, the group's next call is asked")
    };
    assert!(
        request.reason.as_str().contains("deploys"),
        "{}",
        request.reason
    );
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
    // Still past the cap within the hour (the approved run counted too): asked again.
    assert!(matches!(
        call(&bench, "deploy__web", json!({})),
        Outcome::PendingApproval(_)
    ));
    // The audit log names the limit as the deciding rule.
    let asked = bench
        .audit
        .events()
        .into_iter()
        .find(|event| event.kind == AuditKind::Decision && event.action == Some(PolicyAction::Ask))
        .unwrap();
    assert_eq!(asked.rule_id.as_deref(), Some("deploys"));
}

#[test]
fn a_call_the_policy_asks_about_is_counted_when_approved_and_a_deny_cap_reached_meanwhile_wins() {
    let rules = r#"{"rules": [
        {"id": "mail", "tool": "send_email", "action": "ask", "reason": "a person reads mail first"}],
        "limits": [{"id": "cap", "tool": "send_email", "max": 1, "per": "minute", "over": "deny",
                    "reason": "one a minute"}]}"#;
    let bench = bench(rules);
    let Outcome::PendingApproval(first) = mail(&bench, json!("a")) else {
        panic!("asked")
    };
    let Outcome::PendingApproval(second) = mail(&bench, json!("a")) else {
        panic!("asking counts nothing: the second is asked too")
    };
    let ok = bench
        .controller
        .resolve(ApprovalResponse::approve(first.approval_id))
        .unwrap();
    assert!(!ok.is_error);
    let late = bench
        .controller
        .resolve(ApprovalResponse::approve(second.approval_id))
        .unwrap();
    assert!(late.is_error && late.content.contains("cap"), "{late:?}");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 1);
}

#[test]
fn per_key_counts_each_recipient_apart_ignoring_case_and_each_element_of_a_list() {
    let bench = bench(&policy(
        r#"{"id": "per-recipient", "tool": "send_email", "max": 2, "per": "hour", "over": "deny",
            "key": {"pointer": "/to", "case_insensitive": true}, "reason": "two emails an hour to one person"}"#,
    ));
    assert!(ran(&mail(&bench, json!("Bob@Example.com"))));
    assert!(ran(&mail(&bench, json!("bob@example.com"))));
    let reason = denial(&mail(&bench, json!("BOB@EXAMPLE.COM")));
    // The value never appears in a reason, the audit log or a decision's Debug.
    assert!(!reason.to_lowercase().contains("bob"), "{reason}");
    assert!(ran(&mail(&bench, json!("carol@example.com"))));
    // A list counts each distinct element once; a full element refuses the whole call.
    assert!(ran(&mail(&bench, json!(["dave", "Dave", "erin"]))));
    assert!(!ran(&mail(
        &bench,
        json!(["erin", "carol@example.com", "bob@example.com"])
    )));
    assert!(ran(&mail(&bench, json!(["erin", "dave"]))));
    assert!(!ran(&mail(&bench, json!(["frank", "dave"]))));
    assert!(
        ran(&mail(&bench, json!("frank"))),
        "the refused list took no slot for frank"
    );
    for event in bench.audit.events() {
        let text = format!("{event:?}");
        assert!(
            !text.to_lowercase().contains("bob") && !text.contains("frank"),
            "{text}"
        );
    }
}

#[test]
fn leaving_the_key_out_or_sending_an_empty_list_shares_one_count() {
    let bench = bench(&policy(
        r#"{"id": "per-recipient", "tool": "send_email", "max": 1, "per": "hour", "over": "deny",
            "key": {"pointer": "/to"}, "reason": "one email an hour to one person"}"#,
    ));
    assert!(ran(&call(&bench, "send_email", json!({"body": "x"}))));
    assert!(!ran(&mail(&bench, json!([]))));
    assert!(!ran(&call(&bench, "send_email", json!({"body": "y"}))));
    // A case-sensitive key tells case apart.
    assert!(ran(&mail(&bench, json!("A"))));
    assert!(ran(&mail(&bench, json!("a"))));
}

#[test]
fn more_keys_than_can_be_counted_deny_the_call_without_counting() {
    let bench = bench(&policy(
        r#"{"id": "per-recipient", "tool": "send_email", "max": 1000, "per": "hour", "over": "deny",
            "key": {"pointer": "/to"}, "reason": "bounded"}"#,
    ));
    let many: Vec<String> = (0..=limits::MAX_KEYS_PER_CALL)
        .map(|i| format!("r{i}"))
        .collect();
    let reason = denial(&mail(&bench, json!(many)));
    assert!(
        reason.contains("more than 64 distinct keys at /to"),
        "{reason}"
    );
    assert!(!reason.contains("r0"), "{reason}");
    let exactly: Vec<String> = many[..limits::MAX_KEYS_PER_CALL].to_vec();
    assert!(ran(&mail(&bench, json!(exactly))));
}

#[test]
fn a_group_shares_one_count_and_covers_tools_registered_later() {
    let bench = bench(&policy(
        r#"{"id": "deploys", "tool": "deploy__*", "max": 2, "per": "day", "over": "deny", "reason": "two deploys a day"}"#,
    ));
    assert!(ran(&call(&bench, "deploy__web", json!({}))));
    assert!(ran(&call(&bench, "deploy__db", json!({}))));
    assert!(!ran(&call(&bench, "deploy__web", json!({}))));
    assert!(
        ran(&call(&bench, "read_file", json!({}))),
        "other tools are not counted"
    );
    // A tool added later that matches the pattern shares the group's count.
    let runs = Arc::clone(&bench.runs);
    let mut tools: Vec<ToolDefinition> = ["send_email", "deploy__web", "deploy__db", "read_file"]
        .into_iter()
        .map(|name| {
            let schema = if name == "send_email" {
                mail_schema()
            } else {
                json!({"type": "object", "properties": {"path": {"type": "string"}}})
            };
            counted(name, schema, &runs)
        })
        .collect();
    tools.push(counted("deploy__cache", json!({"type": "object"}), &runs));
    bench
        .controller
        .replace_registry(ToolRegistry::new(tools).unwrap())
        .unwrap();
    let reason = denial(&call(&bench, "deploy__cache", json!({})));
    assert!(reason.contains("deploys"), "{reason}");
}

#[test]
fn deciding_explaining_and_shadowing_count_nothing_one_slot_per_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new([counted(
        "read_file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        &runs,
    )])
    .unwrap();
    let only_reads = r#"{"rules": [{"id": "read", "tool": "read_file", "action": "allow", "reason": "r"}],
        "limits": [{"id": "cap", "tool": "read_file", "max": 2, "per": "minute", "over": "deny", "reason": "two reads"}]}"#;
    let enforced = Arc::new(RulePolicy::from_json(only_reads, &registry).unwrap());
    for _ in 0..10 {
        let _ = enforced.decide_arguments("read_file", &json!({}));
        let _ = enforced.explain_arguments("read_file", &json!({}));
    }
    // The shadow decides each call twice (enforced and candidate) and an async check is asked
    // about undecided calls: still one slot per call.
    let shadowed = Shadow::new(Arc::clone(&enforced), Arc::clone(&enforced));
    let controller = ToolController::try_new(registry, shadowed)
        .unwrap()
        .with_clock(ManualClock::new(T0))
        .with_async_check(
            |_: &PreparedToolCall| -> policy_future::Decided { policy_future::deny() },
            Duration::from_secs(1),
        );
    let outcomes: Vec<bool> = (0..3)
        .map(|_| ran(&controller.handle(ToolCall::new("c", "read_file", json!({})))))
        .collect();
    assert_eq!(outcomes, [true, true, false]);
}

mod policy_future {
    use toolgate::{PolicyDecision, Reason};
    pub type Decided =
        std::pin::Pin<Box<dyn std::future::Future<Output = PolicyDecision> + Send + 'static>>;
    pub fn deny() -> Decided {
        Box::pin(std::future::ready(PolicyDecision::deny(
            Reason::from_static("async says no"),
        )))
    }
}

#[test]
fn layers_apply_every_layers_limits_all_or_none() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new([
        counted("deploy__web", json!({"type": "object"}), &runs),
        counted("deploy__db", json!({"type": "object"}), &runs),
    ])
    .unwrap();
    let org = RulePolicy::from_json(
        r#"{"rules": [], "limits": [{"id": "org-cap", "tool": "deploy__*", "max": 3, "per": "hour", "over": "deny", "reason": "org: three deploys an hour"}]}"#,
        &registry,
    )
    .unwrap();
    let project = RulePolicy::from_json(
        r#"{"rules": [{"id": "deploy", "tool": "deploy__*", "action": "allow", "reason": "ok"}],
            "limits": [{"id": "web-cap", "tool": "deploy__web", "max": 1, "per": "hour", "over": "deny", "reason": "project: one web deploy an hour"}]}"#,
        &registry,
    )
    .unwrap();
    let layers = Layers::new()
        .layer("org", org)
        .unwrap()
        .layer("project", project)
        .unwrap();
    let audit = Arc::new(MemoryAuditSink::new());
    let controller = ToolController::try_new(registry, layers)
        .unwrap()
        .with_clock(ManualClock::new(T0))
        .with_audit_sink(Arc::clone(&audit));
    let handle = |tool: &str| controller.handle(ToolCall::new("c", tool, json!({})));
    assert!(ran(&handle("deploy__web")));
    // Refused by the project's cap: the org's count is not taken.
    let reason = denial(&handle("deploy__web"));
    assert!(reason.contains("web-cap"), "{reason}");
    assert!(ran(&handle("deploy__db")));
    assert!(ran(&handle("deploy__db")));
    let reason = denial(&handle("deploy__db"));
    assert!(reason.contains("org-cap"), "{reason}");
    let denied: Vec<_> = audit
        .events()
        .into_iter()
        .filter(|event| event.action == Some(PolicyAction::Deny))
        .map(|event| {
            (
                event.rule_id.as_deref().map(str::to_owned),
                event.layer.as_deref().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(
        denied,
        [
            (Some("web-cap".to_owned()), Some("project".to_owned())),
            (Some("org-cap".to_owned()), Some("org".to_owned()))
        ]
    );
}

#[test]
fn full_counters_and_failing_stores_deny_the_call() {
    let bench_policy = policy(
        r#"{"id": "per-recipient", "tool": "send_email", "max": 5, "per": "minute", "over": "deny",
            "key": {"pointer": "/to"}, "reason": "bounded"}"#,
    );
    let small = bench(&bench_policy);
    let full = Bench {
        controller: small
            .controller
            .with_rate_counters(MemoryRateCounters::with_capacity(2)),
        ..small
    };
    assert!(ran(&mail(&full, json!("a"))));
    assert!(ran(&mail(&full, json!("b"))));
    let reason = denial(&mail(&full, json!("c")));
    assert!(
        reason.contains("could not be counted") && reason.contains("full"),
        "{reason}"
    );

    #[derive(Debug)]
    struct Broken;
    impl RateCounters for Broken {
        fn take(&self, _: &[Take<'_>], _: u64) -> Result<Taken, CounterError> {
            Err(CounterError::store(std::io::Error::other("disk on fire")))
        }
    }
    let broken = bench(&bench_policy);
    let broken = Bench {
        controller: broken.controller.with_rate_counters(Broken),
        ..broken
    };
    let reason = denial(&mail(&broken, json!("a")));
    assert!(reason.contains("disk on fire"), "{reason}");
    assert_eq!(broken.runs.load(Ordering::SeqCst), 0);
    // A tool no limit covers never reaches the counters.
    assert!(ran(&call(&broken, "read_file", json!({}))));
}

mod edges;
mod load_checks;
mod outside_controller;
