//! Rate limits are part of what the proof path enforces (issue 21, item 9). Outside the
//! controller nothing counts, so `Authorized::by_policy` and `Authorized::by_approval` deny a call
//! a limit covers (fail closed) instead of running it past the cap; the controller still counts.

use super::*;

fn limited_tools() -> (ToolRuntime, RulePolicy) {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new([
        counted("send_email", mail_schema(), &runs),
        counted("read_file", json!({"type": "object"}), &runs),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(
        r#"{"rules": [
            {"id": "mail", "tool": "send_email", "action": "allow", "reason": "mail"},
            {"id": "patch", "tool": "read_file", "action": "ask", "reason": "asks"}],
           "limits": [{"id": "mail-cap", "tool": "send_email", "max": 1, "per": "minute",
                       "over": "deny", "reason": "one a minute"},
                      {"id": "read-cap", "tool": "read_file", "max": 1, "per": "minute",
                       "over": "deny", "reason": "one a minute"}]}"#,
        &registry,
    )
    .unwrap();
    (ToolRuntime::new(registry), policy)
}

#[test]
fn rate_limits_outside_the_controller_deny_the_call_by_policy() {
    let (runtime, policy) = limited_tools();
    for attempt in 0..3 {
        let prepared = runtime
            .prepare(ToolCall::new(
                "c",
                "send_email",
                json!({"to": "a", "body": "b"}),
            ))
            .unwrap();
        match Authorized::by_policy(&policy, prepared) {
            PolicyOutcome::Denied { decision, .. } => {
                assert!(
                    decision.reason.as_str().contains("mail-cap")
                        && decision.reason.as_str().contains("ToolController"),
                    "{decision:?}"
                );
                assert_eq!(decision.rule_id.as_deref(), Some("mail-cap"));
            }
            other => panic!("attempt {attempt}: {other:?}"),
        }
    }
}

#[test]
fn rate_limits_outside_the_controller_deny_the_call_by_approval() {
    use toolgate::approvals::{Answered, PendingApprovals};
    let (runtime, policy) = limited_tools();
    let pending = PendingApprovals::new();
    let prepared = runtime
        .prepare(ToolCall::new("c", "read_file", json!({})))
        .unwrap();
    let request = pending
        .request(prepared, Reason::from_static("asks"))
        .unwrap();
    let Answered::Approved(approval) = pending
        .answer(ApprovalResponse::approve(request.approval_id))
        .unwrap()
    else {
        panic!("approved")
    };
    match Authorized::by_approval(&runtime, &policy, approval) {
        ApprovalOutcome::Denied { decision, .. } => {
            assert!(
                decision.reason.as_str().contains("read-cap"),
                "{decision:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn rate_limits_outside_the_controller_leave_uncovered_tools_alone() {
    // The control: a policy whose limits do not cover the tool authorizes it by_policy, and the
    // same policy in a controller counts and caps the covered one.
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new([
        counted("send_email", mail_schema(), &runs),
        counted("read_file", json!({"type": "object"}), &runs),
    ])
    .unwrap();
    let text = r#"{"rules": [
        {"id": "mail", "tool": "send_email", "action": "allow", "reason": "mail"},
        {"id": "read", "tool": "read_file", "action": "allow", "reason": "read"}],
       "limits": [{"id": "mail-cap", "tool": "send_email", "max": 1, "per": "minute",
                   "over": "deny", "reason": "one a minute"}]}"#;
    let policy = RulePolicy::from_json(text, &registry).unwrap();
    let runtime = ToolRuntime::new(registry);
    let prepared = runtime
        .prepare(ToolCall::new("c", "read_file", json!({})))
        .unwrap();
    assert!(matches!(
        Authorized::by_policy(&policy, prepared),
        PolicyOutcome::Allowed { .. }
    ));
    let bench = bench(&policy_text_for_bench());
    assert!(ran(&mail(&bench, json!("a"))));
    assert!(!ran(&mail(&bench, json!("a"))));
}

fn policy_text_for_bench() -> String {
    policy(
        r#"{"id": "mail-cap", "tool": "send_email", "max": 1, "per": "minute", "over": "deny",
            "reason": "one a minute"}"#,
    )
}
