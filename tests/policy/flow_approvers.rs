//! Round-4 item 16: a flow rule's `ask` names who may answer, as an ask rule does; and a limit's
//! or flow rule's `ask` on a call a rule asks about keeps the rule's question and the approvers
//! it named — past a cap the question may get narrower, never open to anyone.
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use std::sync::atomic::Ordering;

use crate::flow_setup::*;
use serde_json::{Value, json};
use toolgate::limits::MemoryRateCounters;
use toolgate::*;

const EGRESS_ASKS_SECURITY: &str = r#"
  "labels": {"private_data": ["read_file"], "external_egress": ["send_email"]},
  "flows": [
    {"id": "egress-after-private", "label": "external_egress", "action": "ask",
     "reason": "this session read private data", "approvers": {"groups": ["security"]},
     "after": {"label": "private_data", "within": "session"}}
  ]"#;

fn held(controller: &ToolController, tool: &str, arguments: Value) -> ApprovalRequest {
    match controller.handle(ToolCall::new("c", tool, arguments)) {
        Outcome::PendingApproval(request) => request,
        Outcome::Completed(result) => panic!("not held: {}", result.content),
    }
}

fn answer_as(
    controller: &ToolController,
    request: &ApprovalRequest,
    who: Principal,
) -> Result<ToolResult, toolgate::approvals::ApprovalError> {
    controller.resolve(ApprovalResponse::approve(request.approval_id).by_principal(who))
}

#[test]
fn a_flow_rules_ask_is_answered_only_by_the_approvers_it_names() {
    let (controller, _, runs) = controller(EGRESS_ASKS_SECURITY, MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/a"})),
        "allow"
    );
    let before = runs.load(Ordering::SeqCst);
    let request = held(&controller, "send_email", json!({"to": "x@example.com"}));
    assert_eq!(request.approvers.len(), 1, "{:?}", request.approvers);
    for outsider in [
        Principal::new("eve", ["dev"]),
        Principal::new("mallory", Vec::<String>::new()),
    ] {
        let refused = answer_as(&controller, &request, outsider);
        assert!(refused.is_err(), "{refused:?}");
        assert_eq!(controller.pending().len(), 1, "still waiting");
    }
    let anonymous = controller.resolve(ApprovalResponse::approve(request.approval_id));
    assert!(anonymous.is_err(), "an answer naming nobody: {anonymous:?}");
    assert_eq!(runs.load(Ordering::SeqCst), before, "nothing ran");
    let ran = answer_as(&controller, &request, Principal::new("sam", ["security"])).unwrap();
    assert!(!ran.is_error, "{}", ran.content);
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
}

#[test]
fn approvers_on_a_deny_flow_rule_are_refused_at_load() {
    let tools = tools();
    let error = try_policy(
        r#""flows": [{"id": "f", "tool": "send_email", "action": "deny", "reason": "r",
            "approvers": {"groups": ["security"]},
            "after": {"tool": "read_file", "within": "session"}}]"#,
        &tools.registry,
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("flows[0]") && error.contains("approvers"),
        "{error}"
    );
}

#[test]
fn an_ask_past_a_cap_keeps_the_approvers_the_rule_named() {
    let tools = tools();
    // The rule asks security for every deploy; past one deploy an hour the limit asks too, and
    // after a read the flow asks: neither may open the question to anyone.
    let rules = json!([
        {"id": "deploy-asks", "tool": "deploy", "action": "ask", "reason": "security confirms",
         "approvers": {"groups": ["security"]}},
        {"id": "read", "tool": "read_file", "action": "allow", "reason": "fine"}
    ]);
    // A limit's or flow's `ask` on a call the rule asks about already leaves the rule's question,
    // and its approvers: the cap is the person's to waive, and only security may.
    for (extra, decided_by) in [
        (
            r#""limits": [{"id": "two-an-hour", "tool": "deploy", "max": 1, "per": "hour",
             "over": "ask", "reason": "many deploys"}]"#,
            "security confirms",
        ),
        (
            r#""flows": [{"id": "after-read", "tool": "deploy", "action": "ask", "reason": "read first",
             "after": {"tool": "read_file", "within": "session"}}]"#,
            "security confirms",
        ),
    ] {
        let policy = policy_with(Some(rules.clone()), extra, &tools.registry).unwrap();
        let controller = ToolController::try_new(tools_registry(), policy)
            .unwrap()
            .with_rate_counters(MemoryRateCounters::default());
        let _ = controller.handle(ToolCall::new("r", "read_file", json!({"path": "/a"})));
        let first = held(&controller, "deploy", json!({"targets": ["stage"]}));
        let ran = answer_as(&controller, &first, Principal::new("sam", ["security"]));
        assert!(
            ran.is_ok_and(|result| !result.is_error),
            "{extra}: the first deploy"
        );
        let request = held(&controller, "deploy", json!({"targets": ["prod"]}));
        assert!(
            request.reason.as_str().contains(decided_by),
            "{extra}: decided by {decided_by}: {}",
            request.reason
        );
        assert!(!request.approvers.is_empty(), "{extra}: approvers kept");
        let refused = answer_as(&controller, &request, Principal::new("eve", ["dev"]));
        assert!(refused.is_err(), "{extra}: {refused:?}");
        let ran = answer_as(&controller, &request, Principal::new("sam", ["security"]));
        assert!(ran.is_ok_and(|result| !result.is_error), "{extra}");
    }
}

fn tools_registry() -> ToolRegistry {
    tools().registry
}

#[test]
fn a_denial_past_a_cap_names_the_kind_of_cap_that_decided() {
    let tools = tools();
    let extra = r#""limits": [
        {"id": "refund-total", "tool": "refund", "sum": "/cents", "key": {"pointer": "/order"},
         "max": 100, "per": "day", "over": "deny", "reason": "a day's refunds"},
        {"id": "few-reads", "tool": "read_file", "max": 1, "per": "hour", "over": "deny",
         "reason": "reads are rare"}],
      "flows": [{"id": "no-send-after-read", "tool": "send_email", "action": "deny",
                 "reason": "read first", "after": {"tool": "read_file", "within": "session"}}]"#;
    let policy = policy_with(None, extra, &tools.registry).unwrap();
    let controller = ToolController::try_new(tools_registry(), policy)
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default());
    let denied = |tool: &str, arguments: Value| match controller
        .handle(ToolCall::new("c", tool, arguments))
    {
        Outcome::Completed(result) if result.is_error => result.content,
        other => panic!("not denied: {other:?}"),
    };
    let _ = controller.handle(ToolCall::new(
        "c",
        "refund",
        json!({"order": "A", "cents": 80}),
    ));
    assert!(
        denied("refund", json!({"order": "A", "cents": 30}))
            .contains("limit \"refund-total\" reached (a total of 100 per day): a day's refunds")
    );
    let _ = controller.handle(ToolCall::new("c", "read_file", json!({"path": "/a"})));
    assert!(
        denied("read_file", json!({"path": "/b"}))
            .contains("rate limit \"few-reads\" reached (1 per hour): reads are rare")
    );
    assert!(
        denied("send_email", json!({"to": "x@example.com"})).contains(
            "flow rule \"no-send-after-read\", on what this session did before: read first"
        )
    );
}
