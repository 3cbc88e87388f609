//! Who may answer an ask: an ask rule's `approvers` (ids, groups, four eyes) are checked before an
//! answer takes the request — a refused approver leaves it waiting and runs nothing — and again by
//! the policy in force when the approved call is re-decided.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use toolgate::approvals::ApprovalError;
use toolgate::policy::Layers;

use crate::common::*;
use serde_json::json;
use toolgate::audit::{AuditKind, MemoryAuditSink};
use toolgate::decision::{ApproverRefusal, Approvers};
use toolgate::rules::RuleConfig;
use toolgate::*;

const POLICY: &str = r#"{"rules": [
  {"id": "deploy-asks", "tool": "deploy", "action": "ask", "reason": "a deploy needs security's yes",
   "approvers": {"groups": ["security"], "four_eyes": true}}
]}"#;

fn controller(policy: &str) -> (ToolController, Arc<AtomicUsize>, Arc<MemoryAuditSink>) {
    let runs = Arc::default();
    let registry = registry([counted(
        "deploy",
        json!({"type": "object", "properties": {"env": {"type": "string"}}}),
        &runs,
    )]);
    let policy = RulePolicy::from_json(policy, &registry).unwrap();
    let audit = Arc::new(MemoryAuditSink::new());
    let controller = ToolController::new(registry, policy).with_audit_sink(audit.clone());
    (controller, runs, audit)
}

fn held(controller: &ToolController, asker: Option<&Principal>) -> ApprovalRequest {
    let mut call = ToolCall::new("c1", "deploy", json!({"env": "prod"}));
    call.principal = asker.cloned().map(Arc::new);
    match controller.handle(call) {
        Outcome::PendingApproval(request) => request,
        Outcome::Completed(result) => panic!("expected an ask, got {result:?}"),
    }
}

fn refusal(error: ApprovalError) -> ApproverRefusal {
    match error {
        ApprovalError::ApproverRefused { refusal, .. } => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn alice() -> Principal {
    Principal::new("alice", ["security", "dev"])
}

#[test]
fn only_a_named_approver_other_than_the_asker_can_answer_and_a_refusal_leaves_the_call_waiting() {
    let (controller, runs, audit) = controller(POLICY);
    let request = held(&controller, Some(&alice()));
    assert_eq!(
        request.approvers.len(),
        1,
        "the rule's approvers travel with the request"
    );
    let id = request.approval_id;

    // Nobody identified, an outsider, the asker herself: each refused, for its own reason, and
    // for a reject as much as for an approve.
    let answers = [
        (ApprovalResponse::approve(id), "identified"),
        (
            ApprovalResponse::approve(id).by_principal(Principal::new("eve", ["dev"])),
            "not among the approvers",
        ),
        (
            ApprovalResponse::reject(id).by_principal(Principal::new("eve", ["dev"])),
            "not among the approvers",
        ),
        (
            ApprovalResponse::approve(id).by_principal(alice()),
            "four eyes",
        ),
        // An id is not a group: "security" named as a principal id is still not in the group.
        (ApprovalResponse::approve(id).by("security"), "not among"),
    ];
    for (answer, says) in answers {
        let error = controller.resolve(answer).unwrap_err();
        assert!(error.to_string().contains(says), "{error}");
        assert_eq!(run_count(&runs), 0);
        assert_eq!(
            controller.pending().len(),
            1,
            "a refused answer takes nothing"
        );
    }

    let bob = Principal::new("bob", ["security"]);
    let result = controller
        .resolve(
            ApprovalResponse::approve(id)
                .by_principal(bob)
                .with_note("checked the diff"),
        )
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(run_count(&runs), 1);
    let approved = audit
        .events()
        .into_iter()
        .find(|event| event.kind == AuditKind::ApprovalApproved)
        .unwrap();
    assert_eq!(approved.approver.as_deref(), Some("bob"));
    assert_eq!(approved.note.as_deref(), Some("checked the diff"));
    // Answered once: a second answer, even by a rightful approver, finds nothing.
    let again = ApprovalResponse::approve(id).by_principal(Principal::new("carol", ["security"]));
    assert!(matches!(
        controller.resolve(again),
        Err(ApprovalError::NotPending { .. })
    ));
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn four_eyes_on_a_call_made_for_nobody_admits_no_approver() {
    let (controller, runs, _) = controller(POLICY);
    let request = held(&controller, None);
    let answer = ApprovalResponse::approve(request.approval_id)
        .by_principal(Principal::new("bob", ["security"]));
    assert_eq!(
        refusal(controller.resolve(answer).unwrap_err()),
        ApproverRefusal::UnknownAsker
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn every_applying_ask_rule_names_its_approvers_not_only_the_deciding_one() {
    // "a-plain" decides (smaller id), but "b-security" applies too: its approvers still bind.
    let (controller, runs, _) = controller(
        r#"{"rules": [
      {"id": "a-plain", "tool": "deploy", "action": "ask", "reason": "confirm"},
      {"id": "b-security", "tool": "deploy", "action": "ask", "reason": "prod needs security",
       "when": {"equals": {"pointer": "/env", "value": "prod"}},
       "approvers": {"ids": ["sam"]}}
    ]}"#,
    );
    let request = held(&controller, Some(&alice()));
    let id = request.approval_id;
    assert!(matches!(
        refusal(
            controller
                .resolve(ApprovalResponse::approve(id).by("bob"))
                .unwrap_err()
        ),
        ApproverRefusal::NotAnApprover { .. }
    ));
    assert!(
        !controller
            .resolve(ApprovalResponse::approve(id).by("sam"))
            .unwrap()
            .is_error
    );
    assert_eq!(run_count(&runs), 1);

    // On staging only the plain rule applies: anyone may answer.
    let mut call = ToolCall::new("c2", "deploy", json!({"env": "staging"}));
    call.principal = Some(Arc::new(alice()));
    let Outcome::PendingApproval(request) = controller.handle(call) else {
        panic!("an ask");
    };
    assert!(request.approvers.is_empty());
}

#[test]
fn a_policy_naming_approvers_after_the_call_was_held_is_checked_at_the_re_decision() {
    let (controller, runs, audit) = controller(
        r#"{"rules": [{"id": "asks", "tool": "deploy", "action": "ask", "reason": "confirm"}]}"#,
    );
    let request = held(&controller, Some(&alice()));
    let registry = registry([counted(
        "deploy",
        json!({"type": "object", "properties": {"env": {"type": "string"}}}),
        &Arc::default(),
    )]);
    controller
        .replace_policy(RulePolicy::from_json(POLICY, &registry).unwrap())
        .unwrap();
    // Held before: the request names no approvers, but the policy in force (security's yes)
    // refuses Eve before her answer takes it — the call keeps waiting (an independent attack:
    // her answer ended it, and security could no longer answer).
    let eve = Principal::new("eve", ["dev"]);
    let events = audit.events().len();
    let refused = controller
        .resolve(ApprovalResponse::approve(request.approval_id).by_principal(eve.clone()))
        .unwrap_err();
    assert!(matches!(
        refusal(refused),
        ApproverRefusal::NotAnApprover { .. }
    ));
    let rejected = controller
        .resolve(ApprovalResponse::reject(request.approval_id).by_principal(eve))
        .unwrap_err();
    assert!(matches!(
        refusal(rejected),
        ApproverRefusal::NotAnApprover { .. }
    ));
    assert_eq!(run_count(&runs), 0);
    assert_eq!(audit.events().len(), events, "nothing was answered");
    // Someone the policy in force names answers it, and it runs.
    let bob = Principal::new("bob", ["security"]);
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id).by_principal(bob))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(run_count(&runs), 1);
    let kinds: Vec<AuditKind> = audit.events().iter().map(|event| event.kind).collect();
    assert!(
        kinds.ends_with(&[
            AuditKind::ApprovalApproved,
            AuditKind::Decision,
            AuditKind::ExecutionOutcome
        ]),
        "{kinds:?}"
    );
}

#[test]
fn layers_that_each_ask_each_bind_the_answer() {
    let runs = Arc::default();
    let registry = registry([counted("deploy", json!({"type": "object"}), &runs)]);
    let layer = |id: &str, group: &str| {
        let rule = RuleConfig::new(id, "deploy", PolicyAction::Ask, "confirm")
            .approved_by(Approvers::groups([group]));
        RulePolicy::new(rules::PolicyConfig::new([rule]), &registry).unwrap()
    };
    let layers = Layers::new()
        .layer("org", layer("org", "security"))
        .unwrap()
        .layer("team", layer("team", "ops"))
        .unwrap();
    let controller = ToolController::new(registry, layers);
    let request = match controller.handle(ToolCall::new("c", "deploy", json!({}))) {
        Outcome::PendingApproval(request) => request,
        Outcome::Completed(result) => panic!("{result:?}"),
    };
    let id = request.approval_id;
    for groups in [vec!["security"], vec!["ops"]] {
        let answer = ApprovalResponse::approve(id).by_principal(Principal::new("x", groups));
        assert!(controller.resolve(answer).is_err());
    }
    let both = Principal::new("x", ["ops", "security"]);
    assert!(
        !controller
            .resolve(ApprovalResponse::approve(id).by_principal(both))
            .unwrap()
            .is_error
    );
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn approvers_are_checked_at_load() {
    let registry = registry([counted(
        "deploy",
        json!({"type": "object"}),
        &Arc::default(),
    )]);
    let problems = |rule: &str| {
        let text = format!(r#"{{"rules": [{rule}]}}"#);
        match RulePolicy::from_json(&text, &registry) {
            Ok(_) => String::new(),
            Err(error) => error.to_string(),
        }
    };
    let on_allow = problems(
        r#"{"id": "a", "tool": "deploy", "action": "allow", "reason": "r", "approvers": {"groups": ["s"]}}"#,
    );
    assert!(
        on_allow.contains("approvers: only") && on_allow.contains("only an ask rule"),
        "{on_allow}"
    );
    let empty = problems(
        r#"{"id": "a", "tool": "deploy", "action": "ask", "reason": "r", "approvers": {}}"#,
    );
    assert!(empty.contains("would change nothing"), "{empty}");
    let twice = problems(
        r#"{"id": "a", "tool": "deploy", "action": "ask", "reason": "r", "approvers": {"groups": ["s", "s"]}}"#,
    );
    assert!(twice.contains("approvers.groups[1]"), "{twice}");
    let blank = problems(
        r#"{"id": "a", "tool": "deploy", "action": "ask", "reason": "r", "approvers": {"ids": ["a b"]}}"#,
    );
    assert!(blank.contains("approvers.ids[0]"), "{blank}");
    let unknown = problems(
        r#"{"id": "a", "tool": "deploy", "action": "ask", "reason": "r", "approvers": {"group": ["s"]}}"#,
    );
    assert!(unknown.contains("group"), "{unknown}");
    assert_eq!(
        problems(
            r#"{"id": "a", "tool": "deploy", "action": "ask", "reason": "r", "approvers": {"four_eyes": true}}"#
        ),
        ""
    );
}

#[test]
fn a_held_request_says_when_it_was_held_and_when_it_expires() {
    let (controller, _, _) = controller(POLICY);
    let controller = controller.with_approval_limits(
        toolgate::approvals::ApprovalLimits::default()
            .with_time_to_live(Some(std::time::Duration::from_secs(90))),
    );
    let request = held(&controller, Some(&alice()));
    assert!(request.requested_at_ms > 1_700_000_000_000);
    assert_eq!(
        request.expires_at_ms,
        Some(request.requested_at_ms + 90_000)
    );
    // The store keeps both, and the approvers.
    assert_eq!(controller.pending(), vec![request]);
}

#[test]
fn a_note_is_kept_whole_up_to_2000_characters_with_hidden_characters_shown() {
    let (controller, _, audit) = controller(POLICY);
    let bob = || Principal::new("bob", ["security"]);
    let note = format!("{}\u{202e}\n", "n".repeat(1_990));
    let request = held(&controller, Some(&alice()));
    controller
        .resolve(
            ApprovalResponse::approve(request.approval_id)
                .by_principal(bob())
                .with_note(note),
        )
        .unwrap();
    let long = "é".repeat(2_500);
    let request = held(&controller, Some(&alice()));
    controller
        .resolve(
            ApprovalResponse::reject(request.approval_id)
                .by_principal(bob())
                .with_note(long),
        )
        .unwrap();
    let notes: Vec<String> = audit
        .events()
        .into_iter()
        .filter_map(|event| event.note)
        .collect();
    assert_eq!(
        notes[0],
        format!("{}\\u{{202e}}\\u{{a}}", "n".repeat(1_990))
    );
    assert!(notes[1].starts_with(&"é".repeat(2_000)));
    assert!(
        notes[1].contains("[cut: 500 of 2500 characters not kept; sha256:"),
        "{}",
        &notes[1][3_990..]
    );
}

/// The library's own approval path, without a controller: `Authorized::by_approval` builds no
/// proof for an answer the approvers in force do not admit — those the request was held for and
/// those the policy now names — so a caller that holds calls through a bare `PendingApprovals`
/// cannot skip the approver check the policy asks for.
#[test]
fn by_approval_mints_no_proof_for_an_answer_the_policy_in_force_does_not_admit() {
    use toolgate::ApprovalOutcome;
    use toolgate::approvals::{Answered, PendingApprovals};
    let runs = Arc::default();
    let registry = registry([counted(
        "deploy",
        json!({"type": "object", "properties": {"env": {"type": "string"}}}),
        &runs,
    )]);
    let runtime = ToolRuntime::new(registry);
    let policy = RulePolicy::from_json(POLICY, runtime.registry()).unwrap();
    let bob = Principal::new("bob", ["security"]);
    let eve = Principal::new("eve", ["dev"]);
    // (who answered, what the re-decision must say): the request names no approvers (held
    // through `request`, not `request_for`), so every answer takes it; the policy decides.
    let cases: [(Option<Principal>, Option<&str>); 4] = [
        (None, Some("identified approver")),
        (Some(eve.clone()), Some("not among the approvers")),
        (Some(alice()), Some("four eyes")),
        (Some(bob.clone()), None),
    ];
    for (approver, refused) in cases {
        let pending = PendingApprovals::new();
        let mut call = ToolCall::new("c1", "deploy", json!({"env": "prod"}));
        call.principal = Some(Arc::new(alice()));
        let prepared = runtime.prepare(call).unwrap();
        let request = pending
            .request(prepared, Reason::new("confirm").unwrap())
            .unwrap();
        let mut response = ApprovalResponse::approve(request.approval_id);
        if let Some(approver) = approver.clone() {
            response = response.by_principal(approver);
        }
        let Answered::Approved(approval) = pending.answer(response).unwrap() else {
            panic!("the request names no approvers: any answer takes it");
        };
        assert_eq!(approval.approver(), approver.as_ref());
        let outcome = Authorized::by_approval(&runtime, &policy, approval);
        match (refused, outcome) {
            (None, ApprovalOutcome::Allowed { authorized, .. }) => {
                assert!(!runtime.execute(authorized).is_error);
            }
            (Some(why), ApprovalOutcome::NotAnApprover { refusal, .. }) => {
                assert!(refusal.to_string().contains(why), "{approver:?}: {refusal}");
            }
            (expected, other) => panic!("{approver:?}: expected {expected:?}, got {other:?}"),
        }
        // Spent either way: a second answer finds nothing.
        assert!(
            pending
                .answer(ApprovalResponse::approve(request.approval_id))
                .is_err()
        );
    }
    assert_eq!(run_count(&runs), 1, "only bob's answer ran the call");

    // What the model reads for a refused answer names why, and says nothing ran.
    let pending = PendingApprovals::new();
    let mut call = ToolCall::new("c2", "deploy", json!({"env": "prod"}));
    call.principal = Some(Arc::new(alice()));
    let request = pending
        .request(
            runtime.prepare(call).unwrap(),
            Reason::new("confirm").unwrap(),
        )
        .unwrap();
    let Answered::Approved(approval) = pending
        .answer(ApprovalResponse::approve(request.approval_id).by_principal(eve))
        .unwrap()
    else {
        panic!("taken");
    };
    let result = Authorized::by_approval(&runtime, &policy, approval)
        .into_authorized()
        .unwrap_err();
    assert_eq!(result.call_id, "c2");
    assert!(result.is_error);
    assert!(result.content.contains("did not run"), "{}", result.content);
    assert_eq!(run_count(&runs), 1);
}
