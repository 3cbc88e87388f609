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

// ---------------------------------------------------------------------------------------------
// Key spellings: one recipient, many spellings.

#[test]
fn key_spelling_case_escapes_duplicates_and_list_forms_share_one_count() {
    let bench = bench(ONE_PER_RECIPIENT_CI);
    assert!(mail_runs(&bench, r#"{"to": "Bob@Example.com"}"#));
    for same in [
        r#"{"to": "bob@example.com"}"#,
        r#"{"to": "BOB@EXAMPLE.COM"}"#,
        r#"{"to": "\u0062ob@example.com"}"#,
        r#"{"to": "\u0042OB@EXAMPLE.COM"}"#,
        r#"{"to": ["bob@example.com"]}"#,
        r#"{"to": ["bob@example.com", "BOB@example.com"]}"#,
        r#"{"to": ["carol@example.com", "bob@example.com"]}"#,
    ] {
        assert!(!mail_runs(&bench, same), "{same} ran past the cap");
    }
    // The refused list took no slot for carol (all or none).
    assert!(mail_runs(&bench, r#"{"to": "carol@example.com"}"#));
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
}

#[test]
fn key_spelling_case_insensitive_is_unicode_case_folding_final_sigma_and_long_s() {
    // Σ lowercases to ς at the end of a word and to σ elsewhere; ſ (long s) uppercases to S.
    // Under Unicode case folding "ΟΔΟΣ" = "οδοσ" and "ſam" = "SAM".
    let bench = bench(ONE_PER_RECIPIENT_CI);
    assert!(mail_runs(&bench, r#"{"to": "ΟΔΟΣ"}"#));
    assert!(
        !mail_runs(&bench, r#"{"to": "οδοσ"}"#),
        "final sigma spelled as a plain sigma got a fresh count"
    );
    assert!(mail_runs(&bench, r#"{"to": "SAM"}"#));
    assert!(
        !mail_runs(&bench, r#"{"to": "ſam"}"#),
        "long s got a fresh count"
    );
}

#[test]
fn key_spelling_missing_empty_list_and_absent_key_share_the_none_count() {
    let bench = bench(ONE_PER_RECIPIENT_CI);
    assert!(mail_runs(&bench, r#"{"body": "no recipient"}"#));
    assert!(!mail_runs(&bench, r#"{"to": []}"#));
    assert!(!mail_runs(&bench, r#"{}"#));
    // null is no recipient: it shares the "none" count too, alone or in lists.
    assert!(!mail_runs(&bench, r#"{"to": null}"#));
    assert!(!mail_runs(&bench, r#"{"to": [null]}"#));
    assert!(!mail_runs(&bench, r#"{"to": [[], [null]]}"#));
}

#[test]
fn key_spelling_nested_lists_of_one_recipient_get_no_fresh_count() {
    // `notify.to` is any list (a plausible loose schema). Each element is counted; a nested
    // list is an element of its own, so re-wrapping one recipient would make a new key.
    let limit = r#"{"id": "per-recipient", "tool": "notify", "max": 1, "per": "day",
        "over": "deny", "key": {"pointer": "/to"}, "reason": "one note a day to one recipient"}"#;
    let bench = bench(limit);
    assert!(ran(&send(&bench, "notify", json!({"to": ["bob"]}))));
    for wrapped in [
        json!({"to": [["bob"]]}),
        json!({"to": [[["bob"]]]}),
        json!({"to": [["bob", "bob"]]}),
    ] {
        assert!(
            !ran(&send(&bench, "notify", wrapped.clone())),
            "{wrapped} reached bob again past the cap"
        );
    }
}

#[test]
fn key_spelling_case_insensitive_reaches_text_inside_objects_and_nested_lists() {
    let limit = r#"{"id": "per-recipient", "tool": "notify", "max": 1, "per": "day",
        "over": "deny", "key": {"pointer": "/to", "case_insensitive": true},
        "reason": "one note a day to one recipient"}"#;
    let bench = bench(limit);
    assert!(ran(&send(
        &bench,
        "notify",
        json!({"to": [{"email": "bob@example.com"}]})
    )));
    assert!(
        !ran(&send(
            &bench,
            "notify",
            json!({"to": [{"email": "BOB@example.com"}]})
        )),
        "a case-insensitive key compared text inside an object by case"
    );
}

#[test]
fn key_spelling_more_than_64_keys_deny_but_many_spellings_of_64_count() {
    let limit = r#"{"id": "per-recipient", "tool": "send_email", "max": 2, "per": "day",
        "over": "deny", "key": {"pointer": "/to", "case_insensitive": true},
        "reason": "two mails a day to one recipient"}"#;
    let bench = bench(limit);
    let distinct: Vec<String> = (0..65).map(|i| format!("user{i}@example.com")).collect();
    assert!(!ran(&send(&bench, "send_email", json!({"to": distinct}))));
    // 64 recipients, each spelled three ways: 64 keys, within the bound.
    let spelled: Vec<String> = (0..64)
        .flat_map(|i| {
            let base = format!("user{i}@example.com");
            [
                base.clone(),
                base.to_uppercase(),
                format!("User{i}@Example.com"),
            ]
        })
        .collect();
    assert!(ran(&send(&bench, "send_email", json!({"to": spelled}))));
    // The 65-key call took nothing: each recipient has one of its two slots left.
    assert!(ran(&send(
        &bench,
        "send_email",
        json!({"to": "user0@example.com"})
    )));
    assert!(!ran(&send(
        &bench,
        "send_email",
        json!({"to": "USER0@example.com"})
    )));
}

// ---------------------------------------------------------------------------------------------
// Approvals: edited, rejected, revoked.

const ASK_MAIL: &str = r#"
    {"id": "mail", "tool": "send_email", "action": "ask", "reason": "a person reads mail first"}"#;

fn held(outcome: Outcome) -> ApprovalRequest {
    match outcome {
        Outcome::PendingApproval(request) => request,
        other => panic!("expected a held call, got {other:?}"),
    }
}

#[test]
fn approval_edited_arguments_are_counted_under_the_edited_key() {
    let bench = bench_with(ONE_PER_RECIPIENT_CI, ASK_MAIL);
    let first = held(send(&bench, "send_email", json!({"to": "alice"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve_edited(
            first.approval_id,
            json!({"to": "bob"}),
        ))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    // bob's slot is taken, alice's is not.
    let to_bob = held(send(&bench, "send_email", json!({"to": "BOB"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve(to_bob.approval_id))
        .unwrap();
    assert!(result.is_error && result.content.contains("per-recipient"));
    let to_alice = held(send(&bench, "send_email", json!({"to": "alice"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve(to_alice.approval_id))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    // An edit onto a full key is denied: a person's edit does not waive a deny cap.
    let again = held(send(&bench, "send_email", json!({"to": "carol"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve_edited(
            again.approval_id,
            json!({"to": "Alice"}),
        ))
        .unwrap();
    assert!(result.is_error, "{result:?}");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
}

#[test]
fn approval_rejected_and_revoked_calls_take_no_slot() {
    let bench = bench_with(ONE_PER_RECIPIENT_CI, ASK_MAIL);
    let rejected = held(send(&bench, "send_email", json!({"to": "bob"})));
    let revoked = held(send(&bench, "send_email", json!({"to": "bob"})));
    let approved = held(send(&bench, "send_email", json!({"to": "bob"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::reject(rejected.approval_id))
        .unwrap();
    assert!(result.is_error);
    bench.controller.revoke(revoked.approval_id).unwrap();
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve(approved.approval_id))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 1);
}

#[test]
fn approval_over_ask_waived_by_a_person_still_meets_a_deny_cap() {
    let limits = r#"{"id": "soft", "tool": "deploy__web", "max": 1, "per": "hour", "over": "ask",
            "reason": "more deploys need a person"},
        {"id": "hard", "tool": "deploy__web", "max": 2, "per": "hour", "over": "deny",
            "reason": "never more than two an hour"}"#;
    let bench = bench(limits);
    assert!(ran(&send(&bench, "deploy__web", json!({}))));
    let second = held(send(&bench, "deploy__web", json!({})));
    let third = held(send(&bench, "deploy__web", json!({})));
    assert!(
        !bench
            .controller
            .resolve(ApprovalResponse::approve(second.approval_id))
            .unwrap()
            .is_error
    );
    let late = bench
        .controller
        .resolve(ApprovalResponse::approve(third.approval_id))
        .unwrap();
    assert!(late.is_error && late.content.contains("hard"), "{late:?}");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
}

// ---------------------------------------------------------------------------------------------
// Paths: every way into the controller counts the same.

const TWO_DEPLOYS: &str = r#"{"id": "deploys", "tool": "deploy__*", "max": 2, "per": "hour",
    "over": "deny", "reason": "two deploys an hour"}"#;

#[test]
fn path_handle_async_and_handle_share_one_count() {
    let bench = bench(TWO_DEPLOYS);
    let call = || ToolCall::new("c", "deploy__web", json!({}));
    assert!(ran(&block_on(bench.controller.handle_async(call()))));
    assert!(ran(&bench.controller.handle(call())));
    assert!(!ran(&block_on(bench.controller.handle_async(call()))));
    assert!(!ran(&bench.controller.handle(call())));
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
}

#[test]
fn path_resolve_async_counts_like_resolve() {
    let bench = bench_with(ONE_PER_RECIPIENT_CI, ASK_MAIL);
    let first = held(send(&bench, "send_email", json!({"to": "bob"})));
    let second = held(send(&bench, "send_email", json!({"to": "bob"})));
    let ok = block_on(
        bench
            .controller
            .resolve_async(ApprovalResponse::approve(first.approval_id)),
    )
    .unwrap();
    assert!(!ok.is_error);
    let late = bench
        .controller
        .resolve(ApprovalResponse::approve(second.approval_id))
        .unwrap();
    assert!(late.is_error);
    assert_eq!(bench.runs.load(Ordering::SeqCst), 1);
}

fn allowing_check(asked: &Arc<AtomicUsize>) -> impl AsyncPolicy + 'static {
    let asked = Arc::clone(asked);
    move |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { PolicyDecision::allow(Reason::from_static("the check found nothing")) })
    }
}

#[test]
fn path_a_call_the_async_check_allows_is_counted_on_every_entry() {
    // No rule decides deploy__web: the async check does, and the limit still counts.
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let policy = rule_policy("", TWO_DEPLOYS, &registry);
    let asked = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_clock(ManualClock::new(T0))
        .with_async_check(allowing_check(&asked), Duration::from_secs(5));
    let call = || ToolCall::new("c", "deploy__web", json!({}));
    assert!(ran(&controller.handle(call())));
    assert!(ran(&block_on(controller.handle_async(call()))));
    assert!(!ran(&controller.handle(call())));
    assert!(!ran(&block_on(controller.handle_async(call()))));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[test]
fn path_shadow_enforces_its_enforced_policys_limits_and_counts_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let enforced = rule_policy(RULES, TWO_DEPLOYS, &registry);
    // The candidate would cap at one: it is only watched, never counted or enforced.
    let candidate = rule_policy(
        RULES,
        &TWO_DEPLOYS.replace("\"max\": 2", "\"max\": 1"),
        &registry,
    );
    let controller = ToolController::try_new(registry, Shadow::new(enforced, candidate))
        .unwrap()
        .with_clock(ManualClock::new(T0));
    let call = || ToolCall::new("c", "deploy__web", json!({}));
    assert!(ran(&controller.handle(call())));
    assert!(ran(&controller.handle(call())));
    assert!(!ran(&controller.handle(call())));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[test]
fn path_a_shared_arc_rule_policy_counts_its_limits() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let policy = Arc::new(rule_policy(RULES, TWO_DEPLOYS, &registry));
    let controller = ToolController::try_new(registry, Arc::clone(&policy))
        .unwrap()
        .with_clock(ManualClock::new(T0));
    let call = || ToolCall::new("c", "deploy__web", json!({}));
    assert!(ran(&controller.handle(call())));
    assert!(ran(&controller.handle(call())));
    assert!(!ran(&controller.handle(call())));
}

// ---------------------------------------------------------------------------------------------
// Layers.

fn layered(
    first: (&str, &str),
    second: (&str, &str),
) -> (ToolController, ManualClock, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let top = rule_policy("", first.1, &registry);
    let bottom = rule_policy(RULES, second.1, &registry);
    let layers = Layers::new()
        .layer(first.0, top)
        .unwrap()
        .layer(second.0, bottom)
        .unwrap();
    let clock = ManualClock::new(T0);
    let controller = ToolController::try_new(registry, layers)
        .unwrap()
        .with_clock(clock.clone());
    (controller, clock, runs)
}

#[test]
fn layers_one_limit_id_in_two_layers_keeps_each_layers_window() {
    // Two teams both call their deploy cap "deploys": the project's is 100 a minute, the org's
    // (a layer with limits and no rules) three a day. At most three deploys may run in a day.
    let project = r#"{"id": "deploys", "tool": "deploy__*", "max": 100, "per": "minute",
        "over": "deny", "reason": "project: a hundred a minute"}"#;
    let org = r#"{"id": "deploys", "tool": "deploy__*", "max": 3, "per": "day",
        "over": "deny", "reason": "org: three a day"}"#;
    let (controller, clock, runs) = layered(("project", project), ("org", org));
    for _ in 0..10 {
        for _ in 0..3 {
            let _ = controller.handle(ToolCall::new("c", "deploy__web", json!({})));
        }
        clock.advance(Duration::from_secs(61));
    }
    assert!(
        runs.load(Ordering::SeqCst) <= 3,
        "{} deploys ran within ten minutes under a cap of three a day",
        runs.load(Ordering::SeqCst)
    );
}

#[test]
fn layers_one_limit_id_in_two_layers_lets_each_layer_its_own_max() {
    let cap = r#"{"id": "deploys", "tool": "deploy__*", "max": 3, "per": "hour",
        "over": "deny", "reason": "three an hour"}"#;
    let (controller, _clock, runs) = layered(("org", cap), ("project", cap));
    for _ in 0..5 {
        let _ = controller.handle(ToolCall::new("c", "deploy__web", json!({})));
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "a call was counted once per layer in one shared counter"
    );
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
// Memory: fresh keys fill the counters; nothing live is forgotten.

#[test]
fn memory_fresh_keys_fill_the_counters_then_deny_never_evict() {
    let limit = r#"{"id": "per-recipient", "tool": "send_email", "max": 1, "per": "minute",
        "over": "deny", "key": {"pointer": "/to"}, "reason": "one a minute to one recipient"}"#;
    let bench = bench(limit);
    let counters = Arc::new(MemoryRateCounters::with_capacity(8));
    let controller = bench.controller.with_rate_counters(Arc::clone(&counters));
    let mail =
        |to: String| ran(&controller.handle(ToolCall::new("c", "send_email", json!({"to": to}))));
    for i in 0..8 {
        assert!(mail(format!("r{i}")));
    }
    // Full: new recipients are refused, and no old count was dropped to make room.
    for i in 8..100 {
        assert!(!mail(format!("r{i}")));
    }
    assert!(!mail("r0".to_owned()));
    assert_eq!(counters.held(), 8);
    // Once the minute passes, room is made from passed times only.
    bench.clock.advance(Duration::from_secs(60));
    for i in 100..108 {
        assert!(mail(format!("r{i}")));
    }
    assert!(counters.held() <= 8);
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

// ---------------------------------------------------------------------------------------------
// Shared stores: a replaced policy's longer window, as the memory counters honour it.

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_a_replaced_policy_counts_past_calls_by_its_own_window() {
    use toolgate::limits::SqliteRateCounters;
    let dir = std::env::temp_dir().join(format!("toolgate-attacked-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let minute = r#"{"id": "cap", "tool": "deploy__web", "max": 1, "per": "minute",
        "over": "deny", "reason": "one"}"#;
    let bench = bench(minute);
    let controller = bench
        .controller
        .with_rate_counters(SqliteRateCounters::open(dir.join("rates.db"), "s").unwrap());
    let call = || ToolCall::new("c", "deploy__web", json!({}));
    assert!(ran(&controller.handle(call())));
    bench.clock.advance(Duration::from_secs(30));
    controller
        .try_replace_policy(|registry| {
            RulePolicy::from_json(
                &policy_json(RULES, &minute.replace("minute", "hour")),
                registry,
            )
        })
        .unwrap();
    // 90 s after the first call: past a minute, within the hour the policy now says.
    bench.clock.advance(Duration::from_secs(60));
    let second = ran(&controller.handle(call()));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !second,
        "the sqlite counters forgot a call by the old window"
    );
}

#[test]
fn memory_counters_emptied_by_refused_calls_are_dropped_within_the_capacity() {
    // A keyed cap (one a minute per recipient) listed before a group cap (five an hour). Once the
    // group cap is full, a call to an old recipient empties that recipient's counter and is then
    // refused by the group cap: the empty counter must not stay behind for ever.
    let limits = r#"{"id": "per-recipient", "tool": "send_email", "max": 1, "per": "minute",
            "over": "deny", "key": {"pointer": "/to"}, "reason": "one a minute to one recipient"},
        {"id": "group", "tool": "send_email", "max": 5, "per": "hour", "over": "deny",
            "reason": "five an hour"}"#;
    let bench = bench(limits);
    let counters = Arc::new(MemoryRateCounters::with_capacity(10));
    let controller = bench.controller.with_rate_counters(Arc::clone(&counters));
    let mail =
        |to: String| ran(&controller.handle(ToolCall::new("c", "send_email", json!({"to": to}))));
    for round in 0..20 {
        for i in 0..5 {
            assert!(mail(format!("r{round}-{i}")));
        }
        bench.clock.advance(Duration::from_secs(61));
        for i in 0..5 {
            assert!(!mail(format!("r{round}-{i}")));
        }
        bench.clock.advance(Duration::from_secs(3_600));
    }
    let kept = format!("{counters:?}").matches("Counter {").count();
    assert!(
        kept <= 10,
        "{kept} counters kept for a capacity of 10 call times ({} held)",
        counters.held()
    );
}
