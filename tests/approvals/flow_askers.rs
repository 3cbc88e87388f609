//! Who answers a call that flow rules ask about: every flow rule that asks names its approvers
//! (not only the first), one naming nobody bars the asker on the page beside another's
//! `allow_self`, and a reload changing them holds for a call held before it — as for ask rules
//! (an independent attack, 7 December 2026: each of these let a call run).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolgate::approvals::ApprovalError;
use toolgate::definition::BoxFuture;
use toolgate::limits::MemoryRateCounters;
use toolgate::policy::Layers;
use toolgate::*;

use crate::common::counted;

fn registry(runs: &Arc<AtomicUsize>) -> ToolRegistry {
    let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}});
    ToolRegistry::new([
        counted("read_secret", json!({"type": "object"}), runs),
        counted("deploy", schema, runs),
    ])
    .unwrap()
}

fn policy(text: &str, registry: &ToolRegistry) -> RulePolicy {
    RulePolicy::from_json(text, registry).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn alice() -> Principal {
    Principal::new("alice", ["dev"])
}

fn controller(text: &str, runs: &Arc<AtomicUsize>) -> ToolController {
    let registry = registry(runs);
    let policy = policy(text, &registry);
    ToolController::try_new(registry, policy)
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default())
}

fn as_alice(controller: &ToolController, tool: &str) -> Outcome {
    controller.handle(ToolCall::new("c", tool, json!({"env": "prod"})).with_principal(alice()))
}

fn held(controller: &ToolController) -> ApprovalRequest {
    let read =
        controller.handle(ToolCall::new("r", "read_secret", json!({})).with_principal(alice()));
    assert!(
        matches!(read, Outcome::Completed(ref r) if !r.is_error),
        "{read:?}"
    );
    match as_alice(controller, "deploy") {
        Outcome::PendingApproval(request) => request,
        Outcome::Completed(result) => panic!("expected an ask, got {result:?}"),
    }
}

fn on_the_page(
    controller: &ToolController,
    request: &ApprovalRequest,
    who: Principal,
) -> Result<ToolResult, ApprovalError> {
    controller.resolve(
        ApprovalResponse::approve(request.approval_id)
            .by_principal(who)
            .out_of_band(),
    )
}

const RULES: &str = r#""rules": [
    {"id": "r", "tool": "read_secret", "action": "allow", "reason": "ok"},
    {"id": "d", "tool": "deploy", "action": "allow", "reason": "ok"}]"#;

fn flow(id: &str, approvers: &str) -> String {
    let approvers = if approvers.is_empty() {
        String::new()
    } else {
        format!(r#", "approvers": {approvers}"#)
    };
    format!(
        r#"{{"id": "{id}", "tool": "deploy", "action": "ask", "reason": "after a secret"{approvers},
            "after": {{"tool": "read_secret", "within": "session"}}}}"#
    )
}

/// Two flow rules ask about the call: one names nobody (the page never lets the asker), the
/// other says allow_self. As for two ask rules, the asker must not answer her own call on the
/// page (either order).
#[test]
fn a_flow_rule_naming_nobody_is_not_waived_by_another_flow_rules_allow_self() {
    for flows in [
        format!(
            "[{}, {}]",
            flow("self-ok", r#"{"allow_self": true}"#),
            flow("nobody", "")
        ),
        format!(
            "[{}, {}]",
            flow("nobody", ""),
            flow("self-ok", r#"{"allow_self": true}"#)
        ),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        let controller = controller(&format!(r#"{{{RULES}, "flows": {flows}}}"#), &runs);
        let request = held(&controller);
        let before = runs.load(Ordering::SeqCst);
        let answer = on_the_page(&controller, &request, alice());
        assert_eq!(
            runs.load(Ordering::SeqCst),
            before,
            "flows {flows}: alice approved her own call on the page: {answer:?}"
        );
    }
}

/// Two flow rules name different approvers: every named set must be satisfied (as for rules).
#[test]
fn two_flow_rules_naming_approvers_both_bind() {
    let flows = format!(
        "[{}, {}]",
        flow("ops", r#"{"ids": ["olga"]}"#),
        flow("security", r#"{"groups": ["security"]}"#)
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = controller(&format!(r#"{{{RULES}, "flows": {flows}}}"#), &runs);
    let request = held(&controller);
    let before = runs.load(Ordering::SeqCst);
    let answer = controller.resolve(
        ApprovalResponse::approve(request.approval_id)
            .by_principal(Principal::new("olga", ["ops"])),
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        before,
        "olga (not in security) approved a call the security flow rule asked about: {answer:?} approvers {:?}",
        request.approvers
    );
    assert_eq!(controller.pending().len(), 1, "the call still waits");
    // Olga in security answers for both.
    let both = Principal::new("olga", ["security"]);
    let ran = controller
        .resolve(ApprovalResponse::approve(request.approval_id).by_principal(both))
        .unwrap();
    assert!(!ran.is_error, "{ran:?}");
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
}

/// A reload withdrawing a flow rule's allow_self must hold for a call held before it (as it does
/// for an ask rule).
#[test]
fn a_reload_withdrawing_a_flow_rules_allow_self_holds() {
    let runs = Arc::new(AtomicUsize::new(0));
    let v1 = format!(
        r#"{{{RULES}, "flows": [{}]}}"#,
        flow("f", r#"{"ids": ["alice", "bob"], "allow_self": true}"#)
    );
    for v2 in [
        format!(
            r#"{{{RULES}, "flows": [{}]}}"#,
            flow("f", r#"{"ids": ["alice", "bob"]}"#)
        ),
        format!(
            r#"{{{RULES}, "flows": [{}]}}"#,
            flow("f", r#"{"ids": ["bob"], "four_eyes": true}"#)
        ),
        format!(r#"{{{RULES}, "flows": [{}]}}"#, flow("f", "")),
    ] {
        let controller = controller(&v1, &runs);
        let request = held(&controller);
        controller
            .replace_policy(policy(&v2, &registry(&runs)))
            .unwrap();
        let before = runs.load(Ordering::SeqCst);
        let answer = on_the_page(&controller, &request, alice());
        assert_eq!(
            runs.load(Ordering::SeqCst),
            before,
            "after reload to {v2}: alice approved her own call on the page: {answer:?}"
        );
        // Bob, named before and after, answers it.
        let bob = Principal::new("bob", ["ops"]);
        let ran = on_the_page(&controller, &request, bob).unwrap();
        assert!(!ran.is_error, "{v2}: {ran:?}");
        assert_eq!(runs.load(Ordering::SeqCst), before + 1, "{v2}");
    }
}

/// A reload naming other approvers on a flow rule: a former approver (not the asker) must be
/// refused before the take, and the call keep waiting for the new one.
#[test]
fn a_reload_naming_other_flow_approvers_refuses_a_former_one() {
    let runs = Arc::new(AtomicUsize::new(0));
    let v1 = format!(
        r#"{{{RULES}, "flows": [{}]}}"#,
        flow("f", r#"{"ids": ["carol"]}"#)
    );
    let v2 = format!(
        r#"{{{RULES}, "flows": [{}]}}"#,
        flow("f", r#"{"ids": ["dave"]}"#)
    );
    let controller = controller(&v1, &runs);
    let request = held(&controller);
    controller
        .replace_policy(policy(&v2, &registry(&runs)))
        .unwrap();
    let before = runs.load(Ordering::SeqCst);
    let answer = controller.resolve(
        ApprovalResponse::approve(request.approval_id)
            .by_principal(Principal::new("carol", ["ops"])),
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        before,
        "carol, no longer a flow approver, ran the call: {answer:?}"
    );
    assert!(
        matches!(answer, Err(ApprovalError::ApproverRefused { .. })),
        "refused before the take: {answer:?}"
    );
    assert_eq!(
        controller.pending().len(),
        1,
        "the call still waits for dave"
    );
}

/// Control: with one flow rule allowing self, the asker answers her own call on the page.
#[test]
fn one_flow_rule_allowing_self_lets_the_asker_answer_on_the_page() {
    let flows = format!("[{}]", flow("self-ok", r#"{"allow_self": true}"#));
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = controller(&format!(r#"{{{RULES}, "flows": {flows}}}"#), &runs);
    let request = held(&controller);
    let before = runs.load(Ordering::SeqCst);
    let ran = on_the_page(&controller, &request, alice()).unwrap();
    assert!(!ran.is_error, "{ran:?}");
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
}

/// An ask rule allowing self beside a flow rule asking with no approvers (the flow rule's ask
/// bars the asker on the page).
#[test]
fn a_flow_rule_naming_nobody_beside_an_ask_rule_allowing_self() {
    let runs = Arc::new(AtomicUsize::new(0));
    let text = format!(
        r#"{{"rules": [
        {{"id": "r", "tool": "read_secret", "action": "allow", "reason": "ok"}},
        {{"id": "d", "tool": "deploy", "action": "ask", "reason": "confirm", "approvers": {{"allow_self": true}}}}],
        "flows": [{}]}}"#,
        flow("nobody", "")
    );
    let controller = controller(&text, &runs);
    let request = held(&controller);
    let before = runs.load(Ordering::SeqCst);
    let answer = on_the_page(&controller, &request, alice());
    assert_eq!(
        runs.load(Ordering::SeqCst),
        before,
        "alice approved on the page a call a flow rule (naming nobody) asked about: {answer:?}; approvers {:?}",
        request.approvers
    );
}

fn layered(org: &str, project: &str, runs: &Arc<AtomicUsize>) -> ToolController {
    let registry = registry(runs);
    let layers = Layers::new()
        .layer("org", policy(org, &registry))
        .unwrap()
        .layer("project", policy(project, &registry))
        .unwrap();
    ToolController::try_new(registry, layers)
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default())
}

/// Two layers each hold a flow rule of one id (ids are unique only within a policy): each asks,
/// each names its approvers, and both must agree (a second attack: the second layer's were
/// dropped, as the first's id already asked).
#[test]
fn same_flow_id_in_two_layers_both_approvers_bind() {
    for (org, project) in [
        (
            flow("after-secret", r#"{"groups": ["security"]}"#),
            flow("after-secret", r#"{"ids": ["olga"]}"#),
        ),
        (
            flow("after-secret", r#"{"ids": ["olga"]}"#),
            flow("after-secret", r#"{"groups": ["security"]}"#),
        ),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        let controller = layered(
            &format!(r#"{{{RULES}, "flows": [{org}]}}"#),
            &format!(r#"{{{RULES}, "flows": [{project}]}}"#),
            &runs,
        );
        let request = held(&controller);
        let before = runs.load(Ordering::SeqCst);
        // Sam is in security but is not olga; olga is not in security.
        for who in [
            Principal::new("sam", ["security"]),
            Principal::new("olga", ["ops"]),
        ] {
            let answer = controller
                .resolve(ApprovalResponse::approve(request.approval_id).by_principal(who.clone()));
            assert_eq!(
                runs.load(Ordering::SeqCst),
                before,
                "org {org} / project {project}: {who:?} alone approved a call both layers' flow rules asked about: {answer:?}; held approvers {:?}",
                request.approvers
            );
        }
    }
}

/// One id in two layers, one naming `allow_self` and one nobody: the asker does not answer her
/// own call on the page.
#[test]
fn same_flow_id_in_two_layers_unnamed_bars_the_asker() {
    for (org, project) in [
        (
            flow("after-secret", r#"{"allow_self": true}"#),
            flow("after-secret", ""),
        ),
        (
            flow("after-secret", ""),
            flow("after-secret", r#"{"allow_self": true}"#),
        ),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        let controller = layered(
            &format!(r#"{{{RULES}, "flows": [{org}]}}"#),
            &format!(r#"{{{RULES}, "flows": [{project}]}}"#),
            &runs,
        );
        let request = held(&controller);
        let before = runs.load(Ordering::SeqCst);
        let answer = controller.resolve(
            ApprovalResponse::approve(request.approval_id)
                .by_principal(alice())
                .out_of_band(),
        );
        assert_eq!(
            runs.load(Ordering::SeqCst),
            before,
            "org {org} / project {project}: alice approved her own call on the page: {answer:?}; approvers {:?}",
            request.approvers
        );
    }
}

fn allowing_check() -> impl Fn(&PreparedToolCall) -> BoxFuture<'static, PolicyDecision> {
    |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(async {
            PolicyDecision::allow(Reason::from_static("the classifier found nothing"))
        })
    }
}

const ONLY_READ: &str = r#""rules": [
    {"id": "r", "tool": "read_secret", "action": "allow", "reason": "ok"}]"#;

/// The async check decides `deploy` (no rule does) and a flow rule asks: a reload naming other
/// approvers refuses a former one before the take (a second attack: the rules' fallback denial
/// ended the check before the flow rules were asked).
#[test]
fn async_check_deciding_a_reload_naming_other_flow_approvers_refuses_a_former_one() {
    let runs = Arc::new(AtomicUsize::new(0));
    let v1 = format!(
        r#"{{{ONLY_READ}, "flows": [{}]}}"#,
        flow("f", r#"{"ids": ["carol"]}"#)
    );
    let v2 = format!(
        r#"{{{ONLY_READ}, "flows": [{}]}}"#,
        flow("f", r#"{"ids": ["dave"]}"#)
    );
    let controller = ToolController::try_new(registry(&runs), policy(&v1, &registry(&runs)))
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default())
        .with_async_check(allowing_check(), Duration::from_secs(5));
    let request = held(&controller);
    controller
        .replace_policy(policy(&v2, &registry(&runs)))
        .unwrap();
    let before = runs.load(Ordering::SeqCst);
    let answer = controller.resolve(
        ApprovalResponse::approve(request.approval_id)
            .by_principal(Principal::new("carol", ["ops"])),
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        before,
        "carol, no longer a flow approver, ran the call: {answer:?}"
    );
    assert!(
        matches!(answer, Err(ApprovalError::ApproverRefused { .. })),
        "refused before the take: {answer:?}"
    );
}

/// Same, the reload withdrawing the flow rule's `allow_self`: the asker must not answer her own
/// call on the page.
#[test]
fn async_check_deciding_a_reload_withdrawing_flow_allow_self_holds() {
    let runs = Arc::new(AtomicUsize::new(0));
    let v1 = format!(
        r#"{{{ONLY_READ}, "flows": [{}]}}"#,
        flow("f", r#"{"ids": ["alice", "bob"], "allow_self": true}"#)
    );
    let v2 = format!(
        r#"{{{ONLY_READ}, "flows": [{}]}}"#,
        flow("f", r#"{"ids": ["alice", "bob"]}"#)
    );
    let controller = ToolController::try_new(registry(&runs), policy(&v1, &registry(&runs)))
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default())
        .with_async_check(allowing_check(), Duration::from_secs(5));
    let request = held(&controller);
    controller
        .replace_policy(policy(&v2, &registry(&runs)))
        .unwrap();
    let before = runs.load(Ordering::SeqCst);
    let answer = controller.resolve(
        ApprovalResponse::approve(request.approval_id)
            .by_principal(alice())
            .out_of_band(),
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        before,
        "after the reload alice approved her own call on the page: {answer:?}"
    );
}

fn check_both_bind(controller: &ToolController, runs: &Arc<AtomicUsize>, label: &str) {
    let request = held(controller);
    let before = runs.load(Ordering::SeqCst);
    // Sam is in security but is not olga; olga is not in security.
    for who in [
        Principal::new("sam", ["security"]),
        Principal::new("olga", ["ops"]),
    ] {
        let answer = controller
            .resolve(ApprovalResponse::approve(request.approval_id).by_principal(who.clone()));
        assert_eq!(
            runs.load(Ordering::SeqCst),
            before,
            "{label}: {who:?} alone approved a call both rules asked about: {answer:?}; held approvers {:?}",
            request.approvers
        );
    }
}

/// Layer names are joined with `/` when stacks nest: a layer named `a/b` and a layer `b` nested in
/// a layer `a` are both `a/b`, and each holds a flow rule of one id: both bind (a third attack:
/// the second was taken for the first, its approvers dropped).
#[test]
fn nested_layer_names_that_spell_alike_keep_both_approvers() {
    for swap in [false, true] {
        let runs = Arc::new(AtomicUsize::new(0));
        let registry = registry(&runs);
        let (first, second) = if swap {
            (r#"{"ids": ["olga"]}"#, r#"{"groups": ["security"]}"#)
        } else {
            (r#"{"groups": ["security"]}"#, r#"{"ids": ["olga"]}"#)
        };
        let flat = policy(
            &format!(r#"{{{RULES}, "flows": [{}]}}"#, flow("f", first)),
            &registry,
        );
        let inner = Layers::new()
            .layer(
                "b",
                policy(
                    &format!(r#"{{{RULES}, "flows": [{}]}}"#, flow("f", second)),
                    &registry,
                ),
            )
            .unwrap();
        let layers = Layers::new()
            .layer("a/b", flat)
            .unwrap()
            .layer("a", inner)
            .unwrap();
        let controller = ToolController::try_new(registry, layers)
            .unwrap()
            .with_rate_counters(MemoryRateCounters::default());
        check_both_bind(&controller, &runs, &format!("nested layers swap={swap}"));
    }
}

/// A custom policy naming two `ask` slots of one limit id (one per bucket: a per-tenant cap and
/// a global cap, say), each with its own approvers. Both full: both approvers must bind.
struct TwoBuckets;

impl Policy for TwoBuckets {
    fn decide(&self, _: &PreparedToolCall) -> PolicyDecision {
        PolicyDecision::allow(Reason::new("ok").unwrap())
    }
    fn rate_slots(
        &self,
        call: &PreparedToolCall,
    ) -> Result<Vec<toolgate::decision::RateSlot>, PolicyDecision> {
        if call.call().tool_name != "deploy" {
            return Ok(Vec::new());
        }
        let slot = |bucket: &str, approvers: toolgate::decision::Approvers| {
            let mut slot = toolgate::decision::RateSlot::new(
                "deploys",
                None,
                1,
                PolicyAction::Ask,
                Reason::new("more deploys need a person").unwrap(),
            );
            slot.bucket = Arc::from(bucket);
            slot.approvers = Some(Arc::new(approvers));
            slot
        };
        Ok(vec![
            slot(
                "deploys/global",
                toolgate::decision::Approvers::groups(["security"]),
            ),
            slot(
                "deploys/tenant",
                toolgate::decision::Approvers::ids(["olga"]),
            ),
        ])
    }
}

#[test]
fn a_custom_policys_two_ask_slots_of_one_id_both_bind() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::try_new(registry(&runs), TwoBuckets)
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default());
    // The first deploy fills both caps; the second is held (read_secret first for `held`).
    let first = controller
        .handle(ToolCall::new("c0", "deploy", json!({"env": "prod"})).with_principal(alice()));
    assert!(
        matches!(first, Outcome::Completed(ref r) if !r.is_error),
        "{first:?}"
    );
    check_both_bind(&controller, &runs, "custom policy, two buckets of one id");
}
