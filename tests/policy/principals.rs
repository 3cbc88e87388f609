//! Rules that name principals: they apply only to calls made for their callers, are checked at
//! load, and the caller is recorded in every audit event.

use std::sync::Arc;

use crate::common::*;
use serde_json::json;
use toolgate::audit::{AuditEvent, AuditKind, AuditSink};
use toolgate::*;

fn tools() -> ToolRegistry {
    let runs = Arc::default();
    registry([counted(
        "deploy",
        json!({"type": "object", "properties": {"env": {"type": "string"}}}),
        &runs,
    )])
}

const POLICY: &str = r#"{"rules": [
  {"id": "ops", "tool": "deploy", "action": "allow", "reason": "ops deploy",
   "principals": {"groups": ["ops"]}},
  {"id": "bob-staging", "tool": "deploy", "action": "allow", "reason": "bob deploys staging",
   "principals": {"ids": ["bob"]}, "when": {"equals": {"pointer": "/env", "value": "staging"}}},
  {"id": "no-prod-for-interns", "tool": "deploy", "action": "deny", "reason": "interns do not deploy prod",
   "principals": {"groups": ["interns"]}, "when": {"equals": {"pointer": "/env", "value": "prod"}}},
  {"id": "others-ask", "tool": "deploy", "action": "ask", "reason": "a person confirms",
   "principals": {"groups": ["developers"]}}
]}"#;

fn decision(caller: Option<Principal>, env: &str) -> (PolicyAction, Option<String>) {
    let registry = tools();
    let policy = RulePolicy::from_json(POLICY, &registry).unwrap();
    let runtime = ToolRuntime::new(registry);
    let mut call = ToolCall::new("c", "deploy", json!({"env": env}));
    call.principal = caller.map(Arc::new);
    let prepared = runtime.prepare(call).unwrap();
    let decision = policy.decide(&prepared);
    (decision.action, decision.rule_id.map(|id| id.to_string()))
}

#[test]
fn a_rule_naming_principals_applies_only_to_their_calls() {
    let ops = Principal::new("carol", ["ops"]);
    let bob = Principal::new("bob", Vec::<String>::new());
    let dave = Principal::new("dave", ["developers"]);
    let intern = Principal::new("ivan", ["interns", "ops"]);
    let stranger = Principal::new("eve", Vec::<String>::new());
    assert_eq!(
        decision(Some(ops), "prod"),
        (PolicyAction::Allow, Some("ops".into()))
    );
    assert_eq!(
        decision(Some(bob.clone()), "staging"),
        (PolicyAction::Allow, Some("bob-staging".into()))
    );
    // Bob's own rule is for staging; on prod no rule is his.
    assert_eq!(decision(Some(bob), "prod"), (PolicyAction::Deny, None));
    assert_eq!(
        decision(Some(dave), "staging"),
        (PolicyAction::Ask, Some("others-ask".into()))
    );
    // An ask for one of the caller's groups wins over an allow for the caller's id, as any ask
    // wins over any allow.
    assert_eq!(
        decision(Some(Principal::new("bob", ["developers"])), "staging"),
        (PolicyAction::Ask, Some("others-ask".into()))
    );
    // A deny for one group wins over an allow for another the caller is also in.
    assert_eq!(
        decision(Some(intern), "prod"),
        (PolicyAction::Deny, Some("no-prod-for-interns".into()))
    );
    // Nobody's rule: default deny. No principal at all: the same.
    assert_eq!(decision(Some(stranger), "prod"), (PolicyAction::Deny, None));
    assert_eq!(decision(None, "prod"), (PolicyAction::Deny, None));
    // The id is not a group and a group is not an id.
    assert_eq!(
        decision(Some(Principal::new("ops", ["bob"])), "staging"),
        (PolicyAction::Deny, None)
    );
}

#[test]
fn a_deny_for_some_callers_does_not_hide_the_tool_from_everyone() {
    let registry = tools();
    let policy = RulePolicy::from_json(
        r#"{"rules": [
          {"id": "no", "tool": "deploy", "action": "deny", "reason": "no", "principals": {"groups": ["interns"]}},
          {"id": "yes", "tool": "deploy", "action": "allow", "reason": "yes"}
        ]}"#,
        &registry,
    )
    .unwrap();
    assert!(!policy.denies_every_call("deploy"));
    // Nor does it shadow the allow, nor repeat a rule for other callers.
    RulePolicy::from_json(
        r#"{"rules": [
          {"id": "a", "tool": "deploy", "action": "allow", "reason": "a", "principals": {"ids": ["a"]}},
          {"id": "b", "tool": "deploy", "action": "allow", "reason": "b", "principals": {"ids": ["b"]}}
        ]}"#,
        &registry,
    )
    .expect("two rules for two callers are not repeats");
}

#[test]
fn principals_are_checked_at_load() {
    let registry = tools();
    for (principals, place, message) in [
        (
            json!({}),
            "(id \"r\").principals:",
            "names no id and no group",
        ),
        (
            json!({"groups": [""]}),
            "(id \"r\").principals.groups[0]",
            "1 to 256 bytes",
        ),
        (
            json!({"ids": ["x".repeat(257)]}),
            "(id \"r\").principals.ids[0]",
            "1 to 256 bytes",
        ),
        (
            json!({"groups": ["o\u{200b}ps"]}),
            "(id \"r\").principals.groups[0]",
            "invisible",
        ),
        (
            json!({"groups": ["ops team"]}),
            "(id \"r\").principals.groups[0]",
            "whitespace",
        ),
        (
            json!({"ids": ["a", "a"]}),
            "(id \"r\").principals.ids[1]",
            "named twice",
        ),
    ] {
        let text = json!({"rules": [{"id": "r", "tool": "deploy", "action": "allow", "reason": "r", "principals": principals}]});
        let error = RulePolicy::from_json(&text.to_string(), &registry).unwrap_err();
        let shown = error.to_string();
        assert!(
            shown.contains(place) && shown.contains(message),
            "{principals}: {shown}"
        );
    }
    let unknown = r#"{"rules": [{"id": "r", "tool": "deploy", "action": "allow", "reason": "r", "principals": {"roles": ["x"]}}]}"#;
    assert!(RulePolicy::from_json(unknown, &registry).is_err());
    // The bound is inclusive: 256 bytes load.
    let longest = json!({"rules": [{"id": "r", "tool": "deploy", "action": "allow", "reason": "r",
                                    "principals": {"ids": ["x".repeat(256)]}}]});
    assert!(RulePolicy::from_json(&longest.to_string(), &registry).is_ok());
}

#[derive(Default, Clone)]
struct Recorded(Arc<std::sync::Mutex<Vec<AuditEvent>>>);

impl AuditSink for Recorded {
    fn record(&self, event: &AuditEvent) -> Result<(), toolgate::audit::AuditError> {
        self.0.lock().unwrap().push(event.clone());
        Ok(())
    }
}

#[test]
fn every_audit_event_of_a_call_records_its_principal_and_the_debug_output_names_it() {
    let registry = tools();
    let policy = RulePolicy::from_json(POLICY, &registry).unwrap();
    let sink = Recorded::default();
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_audit_sink(sink.clone());
    let call = ToolCall::new("c1", "deploy", json!({"env": "prod"}))
        .with_principal(Principal::new("carol", ["ops"]));
    assert!(format!("{call:?}").contains("\"carol\""));
    let Outcome::Completed(result) = controller.handle(call) else {
        panic!("ops is allowed")
    };
    assert!(!result.is_error);
    let held = ToolCall::new("c2", "deploy", json!({"env": "prod"}))
        .with_principal(Principal::new("dave", ["developers"]));
    let Outcome::PendingApproval(request) = controller.handle(held) else {
        panic!("developers are asked")
    };
    assert_eq!(
        request.call.principal.as_ref().map(|p| p.id.as_str()),
        Some("dave")
    );
    controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    let events = sink.0.lock().unwrap();
    assert!(events.len() >= 5, "{}", events.len());
    for event in events.iter() {
        let expected = if event.call_id.contains("c1") {
            "carol"
        } else {
            "dave"
        };
        assert_eq!(
            event.principal.as_deref().map(|p| p.trim_matches('"')),
            Some(expected),
            "{event:?}"
        );
    }
}

#[test]
fn a_rule_built_in_code_for_groups_admits_their_members_only() {
    let registry = tools();
    use toolgate::rules::{PolicyConfig, PrincipalsConfig, RuleConfig};
    let config = PolicyConfig::new([RuleConfig::new(
        "ops-deploy",
        "deploy",
        PolicyAction::Allow,
        "ops deploy",
    )
    .for_principals(PrincipalsConfig::groups(["ops", "sre"]))]);
    let policy = RulePolicy::new(config, &registry).unwrap();
    let runtime = ToolRuntime::new(registry);
    let decide = |caller: Principal| {
        let call = ToolCall::new("c", "deploy", json!({"env": "prod"})).with_principal(caller);
        policy.decide(&runtime.prepare(call).unwrap()).action
    };
    assert_eq!(
        decide(Principal::new("carol", ["sre"])),
        PolicyAction::Allow
    );
    assert_eq!(
        decide(Principal::new("ops", ["dev"])),
        PolicyAction::Deny,
        "a group, not an id"
    );
    assert_eq!(
        decide(Principal::new("eve", Vec::<String>::new())),
        PolicyAction::Deny
    );
}

#[test]
fn the_approver_an_answer_names_is_recorded_on_its_event_and_only_there() {
    let registry = tools();
    let policy = RulePolicy::from_json(POLICY, &registry).unwrap();
    let sink = Recorded::default();
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_audit_sink(sink.clone());
    let hold = |id: &str| {
        let call = ToolCall::new(id, "deploy", json!({"env": "prod"}))
            .with_principal(Principal::new("dave", ["developers"]));
        let Outcome::PendingApproval(request) = controller.handle(call) else {
            panic!("developers are asked")
        };
        request.approval_id
    };
    let (approved, rejected, anonymous) = (hold("a"), hold("r"), hold("n"));
    controller
        .resolve(ApprovalResponse::approve(approved).by("olga"))
        .unwrap();
    controller
        .resolve(ApprovalResponse::reject(rejected).by("\"quoted\"\nname"))
        .unwrap();
    controller
        .resolve(ApprovalResponse::approve(anonymous))
        .unwrap();
    let events = sink.0.lock().unwrap();
    let answered: Vec<(String, AuditKind, Option<String>)> = events
        .iter()
        .filter(|event| {
            event.approver.is_some()
                || matches!(
                    event.kind,
                    AuditKind::ApprovalApproved | AuditKind::ApprovalRejected
                )
        })
        .map(|event| {
            (
                event.call_id.trim_matches('"').to_owned(),
                event.kind,
                event.approver.clone(),
            )
        })
        .collect();
    assert_eq!(
        answered,
        [
            (
                "a".to_owned(),
                AuditKind::ApprovalApproved,
                Some("olga".to_owned())
            ),
            (
                "r".to_owned(),
                AuditKind::ApprovalRejected,
                Some(r#"\"quoted\"\nname"#.to_owned())
            ),
            ("n".to_owned(), AuditKind::ApprovalApproved, None),
        ]
    );
}
