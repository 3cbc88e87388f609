//! Paths: every way into the controller (async or not, through an async check, a shadow, a shared
//! policy) counts the same.

use super::*;

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
