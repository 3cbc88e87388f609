//! `allow_self` on the approval page: the asker answers her own call out of band only where
//! every rule that asks, in every layer that asks, says so — and the policy in force when the
//! answer comes, not only the one the call was held under (an independent attack found both
//! loosened).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use serde_json::json;
use toolgate::approvals::ApprovalError;
use toolgate::decision::ApproverRefusal;
use toolgate::policy::Layers;
use toolgate::*;

use crate::common::*;

fn deploy(runs: &Arc<AtomicUsize>) -> ToolRegistry {
    registry([counted(
        "deploy",
        json!({"type": "object", "properties": {"env": {"type": "string"}}}),
        runs,
    )])
}

fn policy(text: &str, registry: &ToolRegistry) -> RulePolicy {
    RulePolicy::from_json(text, registry).unwrap()
}

fn alice() -> Principal {
    Principal::new("alice", ["dev"])
}

/// Alice's call held by `controller`.
fn held(controller: &ToolController, id: &str) -> ApprovalRequest {
    let call = ToolCall::new(id, "deploy", json!({"env": "prod"})).with_principal(alice());
    match controller.handle(call) {
        Outcome::PendingApproval(request) => request,
        Outcome::Completed(result) => panic!("expected an ask, got {result:?}"),
    }
}

/// Alice answers her own call on the page.
fn on_the_page(controller: &ToolController, request: &ApprovalRequest) -> ToolResultOrError {
    controller.resolve(
        ApprovalResponse::approve(request.approval_id)
            .by_principal(alice())
            .out_of_band(),
    )
}

type ToolResultOrError = Result<ToolResult, ApprovalError>;

/// Whether the answer was refused as her own call (by the store, or at the re-decision).
fn refused_as_own(answer: &ToolResultOrError) -> bool {
    match answer {
        Err(ApprovalError::ApproverRefused { refusal, .. }) => {
            matches!(refusal, ApproverRefusal::OwnCall { .. })
        }
        Ok(result) => result.is_error && result.content.contains("four eyes"),
        Err(_) => false,
    }
}

const ASKS_NAMING_NOBODY: &str = r#"{"id": "prod-asks", "tool": "deploy", "action": "ask",
    "reason": "prod deploys are confirmed by someone else",
    "when": {"equals": {"pointer": "/env", "value": "prod"}}}"#;
const ASKS_ALLOWING_SELF: &str = r#"{"id": "deploys-ask", "tool": "deploy", "action": "ask",
    "reason": "a deploy is confirmed; its asker may", "approvers": {"allow_self": true}}"#;

#[test]
fn an_ask_rule_naming_no_approvers_is_not_waived_by_another_rules_allow_self() {
    let runs = Arc::default();
    let registry = deploy(&runs);
    // Either order: the deciding rule names nobody, or the other one does.
    for rules in [
        format!("[{ASKS_NAMING_NOBODY}, {ASKS_ALLOWING_SELF}]"),
        format!("[{ASKS_ALLOWING_SELF}, {ASKS_NAMING_NOBODY}]"),
    ] {
        let policy = policy(&format!(r#"{{"rules": {rules}}}"#), &registry);
        let controller = ToolController::new(deploy(&runs), policy);
        let request = held(&controller, "c1");
        let answer = on_the_page(&controller, &request);
        assert!(refused_as_own(&answer), "{rules}: {answer:?}");
        // In band, and by someone else on the page, the same call is answered.
        let bob = Principal::new("bob", ["ops"]);
        let by_bob = ApprovalResponse::approve(request.approval_id)
            .by_principal(bob)
            .out_of_band();
        assert!(!controller.resolve(by_bob).unwrap().is_error);
        let in_band = held(&controller, "c2");
        let answer = ApprovalResponse::approve(in_band.approval_id).by_principal(alice());
        assert!(!controller.resolve(answer).unwrap().is_error);
    }
    assert_eq!(run_count(&runs), 4);
    // A call only the rule allowing self asks about: she answers it on the page.
    let policy = policy(
        &format!(r#"{{"rules": [{ASKS_NAMING_NOBODY}, {ASKS_ALLOWING_SELF}]}}"#),
        &registry,
    );
    let controller = ToolController::new(registry, policy);
    let call = ToolCall::new("c3", "deploy", json!({"env": "dev"})).with_principal(alice());
    let Outcome::PendingApproval(request) = controller.handle(call) else {
        panic!("asks");
    };
    assert!(!on_the_page(&controller, &request).unwrap().is_error);
    assert_eq!(run_count(&runs), 5);
}

#[test]
fn an_asking_layer_naming_no_approvers_is_not_waived_by_another_layers_allow_self() {
    let runs = Arc::default();
    let registry = deploy(&runs);
    let org = r#"{"rules": [{"id": "org-asks", "tool": "deploy", "action": "ask",
        "reason": "the organisation confirms deploys"}]}"#;
    let project = format!(r#"{{"rules": [{ASKS_ALLOWING_SELF}]}}"#);
    for (top, below) in [(org, project.as_str()), (project.as_str(), org)] {
        let layers = Layers::new()
            .layer("top", policy(top, &registry))
            .unwrap()
            .layer("below", policy(below, &registry))
            .unwrap();
        let controller = ToolController::new(deploy(&runs), layers);
        let request = held(&controller, "c1");
        let answer = on_the_page(&controller, &request);
        assert!(refused_as_own(&answer), "{answer:?}");
    }
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn a_reload_withdrawing_allow_self_holds_for_a_call_held_before_it() {
    let runs = Arc::default();
    let registry = deploy(&runs);
    let allowing = r#"{"rules": [{"id": "asks", "tool": "deploy", "action": "ask", "reason": "confirm",
        "approvers": {"ids": ["alice"], "allow_self": true}}]}"#;
    let withdrawn = r#"{"rules": [{"id": "asks", "tool": "deploy", "action": "ask", "reason": "confirm",
        "approvers": {"ids": ["alice"]}}]}"#;
    let naming_nobody =
        r#"{"rules": [{"id": "asks", "tool": "deploy", "action": "ask", "reason": "confirm"}]}"#;
    let allows =
        r#"{"rules": [{"id": "runs", "tool": "deploy", "action": "allow", "reason": "ok"}]}"#;
    // (the policy after the reload, whether her answer on the page runs the call)
    for (reloaded, runs_it) in [
        (withdrawn, false),
        (naming_nobody, false),
        (allowing, true),
        // Nobody need answer a call the policy in force allows.
        (allows, true),
    ] {
        let controller = ToolController::new(deploy(&runs), policy(allowing, &registry));
        let request = held(&controller, "c1");
        controller
            .replace_policy(policy(reloaded, &registry))
            .unwrap();
        let before = run_count(&runs);
        let answer = on_the_page(&controller, &request);
        assert_eq!(
            run_count(&runs) - before,
            usize::from(runs_it),
            "{reloaded}: {answer:?}"
        );
        if !runs_it {
            assert!(refused_as_own(&answer), "{reloaded}: {answer:?}");
        }
    }
}
