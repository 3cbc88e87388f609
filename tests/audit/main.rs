//! The audit log: what is recorded on every path, that it never holds argument values, that a
//! call whose record fails does not run, and that the JSON Lines chain exposes tampering.

#[path = "../support/common.rs"]
mod common;
mod event_details;
mod sequences;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use common::*;
use serde_json::json;
use toolgate::approvals::ApprovalLimits;
use toolgate::audit::{AuditError, AuditEvent, AuditKind, AuditSink, MemoryAuditSink};
use toolgate::*;

fn kinds(sink: &MemoryAuditSink) -> Vec<AuditKind> {
    sink.events().iter().map(|event| event.kind).collect()
}

fn audited(runs: &Arc<AtomicUsize>, sink: Arc<dyn AuditSink>) -> ToolController {
    ToolController::new(
        registry([calculator(), counted("apply_patch", patch_schema(), runs)]),
        policy(&["calculator"], &["apply_patch"]),
    )
    .with_audit_sink(sink)
}

/// What re-checking a decision needs is in its events: the tool definition's digest (from the
/// call's resolution on, also on the approval path), the policy's digest, the principal.
#[test]
fn events_name_the_definition_the_call_was_judged_against() {
    use AuditKind::*;
    let sink = Arc::new(MemoryAuditSink::new());
    let runs = Arc::default();
    let controller = audited(&runs, sink.clone());
    let digest = |tool: &str| {
        registry([calculator(), counted("apply_patch", patch_schema(), &runs)])
            .resolve(tool)
            .unwrap()
            .digest()
            .to_owned()
    };
    let _ = controller.handle(ToolCall::new("c1", "calculator", json!({"a": 1, "b": 2})));
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c2", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("held")
    };
    let _ = controller.resolve(ApprovalResponse::approve(request.approval_id));
    let _ = controller.handle(ToolCall::new("c3", "nope", json!({})));
    for event in sink.events() {
        let expected = match (event.kind, event.tool.as_str()) {
            (CallReceived, _) | (_, "nope") => None,
            (_, tool) => Some(digest(tool)),
        };
        assert_eq!(event.definition_digest, expected, "{event:?}");
    }
}

#[test]
fn every_path_is_recorded_in_order() {
    use AuditKind::*;
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = audited(&Arc::default(), sink.clone());

    let _ = controller.handle(ToolCall::new("c1", "calculator", json!({"a": 1, "b": 2})));
    assert_eq!(kinds(&sink), [CallReceived, Decision, ExecutionOutcome]);
    let _ = controller.handle(ToolCall::new("c2", "nope", json!({})));
    assert_eq!(kinds(&sink)[3..], [CallReceived, RejectedAtPreparation]);

    let Outcome::PendingApproval(approved) =
        controller.handle(ToolCall::new("c3", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    controller
        .resolve(ApprovalResponse::approve(approved.approval_id))
        .unwrap();
    assert_eq!(
        kinds(&sink)[5..],
        [
            CallReceived,
            Decision,
            ApprovalRequested,
            ApprovalApproved,
            Decision,
            ExecutionOutcome
        ]
    );
    let Outcome::PendingApproval(rejected) =
        controller.handle(ToolCall::new("c4", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    controller
        .resolve(ApprovalResponse::reject(rejected.approval_id))
        .unwrap();
    let Outcome::PendingApproval(revoked) =
        controller.handle(ToolCall::new("c5", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    controller.revoke(revoked.approval_id).unwrap();
    let tail: Vec<AuditKind> = kinds(&sink).into_iter().rev().take(5).collect();
    assert_eq!(
        tail,
        [
            ApprovalRevoked,
            ApprovalRequested,
            Decision,
            CallReceived,
            ApprovalRejected
        ]
    );

    let events = sink.events();
    let answered = events.iter().find(|e| e.kind == ApprovalApproved).unwrap();
    assert_eq!(answered.approval_id, Some(approved.approval_id));
    assert_eq!(answered.call_id, "c3");
    assert_eq!(answered.tool, "apply_patch");
    let outcome = events.iter().find(|e| e.kind == ExecutionOutcome).unwrap();
    assert_eq!(outcome.is_error, Some(false));
    let decision = events.iter().find(|e| e.kind == Decision).unwrap();
    assert_eq!(decision.action, Some(PolicyAction::Allow));
}

#[test]
fn expiry_is_recorded() {
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = audited(&Arc::default(), sink.clone()).with_approval_limits(
        ApprovalLimits::default().with_time_to_live(Some(std::time::Duration::ZERO)),
    );
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert_eq!(kinds(&sink).last(), Some(&AuditKind::ApprovalExpired));
}

#[test]
fn events_carry_digests_never_argument_values() {
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = audited(&Arc::default(), sink.clone());
    let secret = json!({"patch": "password=hunter2-SECRET"});
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c", "apply_patch", secret.clone()))
    else {
        panic!("asks");
    };
    controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    let _ = controller.handle(ToolCall::new(
        "d",
        "calculator",
        json!({"a": "SECRET-in-invalid", "b": 1}),
    ));
    let written = serde_json::to_string(&sink.events()).unwrap();
    assert!(
        !written.contains("SECRET") && !written.contains("hunter2"),
        "{written}"
    );
    let events = sink.events();
    // The first call's events each commit to its arguments with a salt of their own: no two
    // commitments alike, none the bare digest a reader could confirm a guess against.
    let first = &events[..3];
    for event in first {
        assert!(event.argument_commitment.starts_with("salted-sha256:"));
        assert!(
            event
                .salt()
                .unwrap()
                .opens(&event.argument_commitment, &secret)
        );
        assert!(
            !event
                .salt()
                .unwrap()
                .opens(&event.argument_commitment, &json!({"patch": "guess"}))
        );
        assert_eq!(event.argument_digest, None);
    }
    assert_ne!(first[0].argument_commitment, first[1].argument_commitment);
    assert_ne!(first[1].argument_commitment, first[2].argument_commitment);
    assert!(
        !written.contains(&first[0].salt().unwrap().to_hex()),
        "a salt is never serialized"
    );
}

#[test]
fn rule_decisions_carry_rule_id_and_policy_digest() {
    let sink = Arc::new(MemoryAuditSink::new());
    let tools = || registry([calculator()]);
    let rules = RulePolicy::from_json(
        r#"{"rules": [{"id": "small-sums", "tool": "calculator", "action": "allow", "reason": "small numbers",
            "when": {"range": {"pointer": "/a", "max": 100}}}]}"#,
        &tools(),
    )
    .unwrap();
    let digest = rules.digest().to_owned();
    let controller = ToolController::new(tools(), rules).with_audit_sink(sink.clone());
    let _ = controller.handle(ToolCall::new("c", "calculator", json!({"a": 1, "b": 2})));
    let decision = sink
        .events()
        .into_iter()
        .find(|e| e.kind == AuditKind::Decision)
        .unwrap();
    assert_eq!(decision.rule_id.as_deref(), Some("small-sums"));
    assert_eq!(decision.policy_digest.as_deref(), Some(digest.as_str()));
}

/// A sink that fails on one kind of event.
struct FailingOn(AuditKind, MemoryAuditSink);

impl AuditSink for FailingOn {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        if event.kind == self.0 {
            return Err(AuditError::new("disk full"));
        }
        self.1.record(event)
    }
}

#[test]
fn a_failed_record_keeps_the_handler_from_running() {
    for failing in [AuditKind::CallReceived, AuditKind::Decision] {
        let runs = Arc::new(AtomicUsize::new(0));
        let controller = ToolController::new(
            registry([counted("t", json!({"type": "object"}), &runs)]),
            policy(&["t"], &[]),
        )
        .with_audit_sink(FailingOn(failing, MemoryAuditSink::new()));
        let result = match controller.handle(ToolCall::new("c", "t", json!({}))) {
            Outcome::Completed(result) => result,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            result,
            ToolResult::error("c", "not run: audit log unavailable: disk full")
        );
        assert_eq!(run_count(&runs), 0, "{failing:?}");
    }
}

#[test]
fn an_approval_that_cannot_be_recorded_is_not_handed_out_or_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let requested = audited(
        &runs,
        Arc::new(FailingOn(
            AuditKind::ApprovalRequested,
            MemoryAuditSink::new(),
        )),
    );
    let outcome = requested.handle(ToolCall::new("c", "apply_patch", json!({"patch": "+"})));
    assert!(
        matches!(
            outcome,
            Outcome::Completed(ToolResult { is_error: true, .. })
        ),
        "{outcome:?}"
    );
    assert!(
        requested.pending().is_empty(),
        "the untraceable request was withdrawn"
    );

    let approved = audited(
        &runs,
        Arc::new(FailingOn(
            AuditKind::ApprovalApproved,
            MemoryAuditSink::new(),
        )),
    );
    let Outcome::PendingApproval(request) =
        approved.handle(ToolCall::new("c", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    let result = approved
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(
        result.content.starts_with("not run: audit log unavailable"),
        "{result:?}"
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn an_edited_approval_records_both_digests() {
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = audited(&Arc::default(), sink.clone());
    let Outcome::PendingApproval(request) = controller.handle(ToolCall::new(
        "c",
        "apply_patch",
        json!({"patch": "proposed"}),
    )) else {
        panic!("asks");
    };
    controller
        .resolve(ApprovalResponse::approve_edited(
            request.approval_id,
            json!({"patch": "edited"}),
        ))
        .unwrap();
    let events = sink.events();
    let approved = events
        .iter()
        .find(|e| e.kind == AuditKind::ApprovalApproved)
        .unwrap();
    let edited = events
        .iter()
        .find(|e| e.kind == AuditKind::ApprovalEdited)
        .unwrap();
    let received = events
        .iter()
        .find(|e| e.kind == AuditKind::CallReceived)
        .unwrap();
    let opens = |event: &toolgate::audit::AuditEvent, arguments: serde_json::Value| {
        event
            .salt()
            .unwrap()
            .opens(&event.argument_commitment, &arguments)
    };
    assert!(opens(received, json!({"patch": "proposed"})));
    assert!(opens(approved, json!({"patch": "proposed"})));
    assert!(opens(edited, json!({"patch": "edited"})));
    assert!(!opens(edited, json!({"patch": "proposed"})));
    let outcome = events.last().unwrap();
    assert_eq!(outcome.kind, AuditKind::ExecutionOutcome);
    assert!(
        opens(outcome, json!({"patch": "edited"})),
        "the edited call is what ran"
    );
}

/// Which events a handler's run waits for: a sink that tells `record` from `record_deferred`.
#[derive(Default)]
struct ByMethod {
    durable: std::sync::Mutex<Vec<(AuditKind, String)>>,
    deferred: std::sync::Mutex<Vec<(AuditKind, String)>>,
}

impl AuditSink for ByMethod {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        self.durable
            .lock()
            .unwrap()
            .push((event.kind, event.call_id.clone()));
        Ok(())
    }

    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        self.deferred
            .lock()
            .unwrap()
            .push((event.kind, event.call_id.clone()));
        Ok(())
    }
}

#[test]
fn only_the_events_a_run_depends_on_are_recorded_durably() {
    use AuditKind::*;
    let sink = Arc::new(ByMethod::default());
    let runs = Arc::default();
    let controller = audited(&runs, sink.clone());
    // Allowed, denied (unknown to the policy), held then approved, held then rejected.
    let _ = controller.handle(ToolCall::new(
        "allowed",
        "calculator",
        json!({"a": 1, "b": 2}),
    ));
    let _ = controller.handle(ToolCall::new("invalid", "calculator", json!({"a": "x"})));
    let Outcome::PendingApproval(approved) =
        controller.handle(ToolCall::new("held", "apply_patch", json!({"patch": "+"})))
    else {
        panic!("asks");
    };
    controller
        .resolve(ApprovalResponse::approve(approved.approval_id))
        .unwrap();
    let Outcome::PendingApproval(rejected) = controller.handle(ToolCall::new(
        "refused",
        "apply_patch",
        json!({"patch": "-"}),
    )) else {
        panic!("asks");
    };
    controller
        .resolve(ApprovalResponse::reject(rejected.approval_id))
        .unwrap();
    assert_eq!(
        *sink.durable.lock().unwrap(),
        [
            (Decision, "allowed".to_owned()),
            (ApprovalRequested, "held".to_owned()),
            (Decision, "held".to_owned()),
            (ApprovalRequested, "refused".to_owned())
        ]
    );
    let deferred = sink.deferred.lock().unwrap().clone();
    let of = |id: &str| -> Vec<AuditKind> {
        deferred
            .iter()
            .filter(|(_, call)| call == id)
            .map(|(kind, _)| *kind)
            .collect()
    };
    assert_eq!(of("allowed"), [CallReceived, ExecutionOutcome]);
    assert_eq!(of("invalid"), [CallReceived, RejectedAtPreparation]);
    assert_eq!(
        of("held"),
        [CallReceived, Decision, ApprovalApproved, ExecutionOutcome]
    );
    assert_eq!(of("refused"), [CallReceived, Decision, ApprovalRejected]);
}

// ---- the JSON Lines file ----------------------------------------------------------------------

/// The hash-chained file: tampering, one spelling per line, torn tails, one writer, bounded ids.
mod file;

/// Entry point for the child processes of `file::writers` and `file::torn`; with no role set it
/// is not a child and does nothing.
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var("TOOLGATE_AUDIT_CHILD_ROLE") else {
        return;
    };
    let path = std::path::PathBuf::from(std::env::var("TOOLGATE_AUDIT_FILE").unwrap());
    let name = std::env::var("TOOLGATE_AUDIT_NAME").unwrap();
    match role.as_str() {
        "writer" => file::writers::child_writer(&path, &name),
        "crash_writer" => file::torn::child_crash_writer(&path, &name),
        "acknowledging_writer" => file::durable::child_acknowledging_writer(&path, &name),
        "limited_writer" => file::full_disk::child_limited_writer(&path, &name),
        other => panic!("unknown child role {other}"),
    }
}
