//! Who answers a call that flow rules ask about: every flow rule that asks names its approvers
//! (not only the first), one naming nobody bars the asker on the page beside another's
//! `allow_self`, and a reload changing them holds for a call held before it — as for ask rules
//! (an independent attack, 7 December 2026: each of these let a call run).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolgate::approvals::ApprovalError;
use toolgate::limits::MemoryRateCounters;
use toolgate::*;

use crate::common::counted;

pub(super) fn registry(runs: &Arc<AtomicUsize>) -> ToolRegistry {
    let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}});
    ToolRegistry::new([
        counted("read_secret", json!({"type": "object"}), runs),
        counted("deploy", schema, runs),
    ])
    .unwrap()
}

pub(super) fn policy(text: &str, registry: &ToolRegistry) -> RulePolicy {
    RulePolicy::from_json(text, registry).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

pub(super) fn alice() -> Principal {
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

pub(super) fn held(controller: &ToolController) -> ApprovalRequest {
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

pub(super) fn on_the_page(
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

pub(super) const RULES: &str = r#""rules": [
    {"id": "r", "tool": "read_secret", "action": "allow", "reason": "ok"},
    {"id": "d", "tool": "deploy", "action": "allow", "reason": "ok"}]"#;

pub(super) fn flow(id: &str, approvers: &str) -> String {
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
