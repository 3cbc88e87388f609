//! The audit log says exactly what happened: every path through the controller, each with the
//! exact sequence of events it must leave (kind, and the action or outcome where there is one).
//! A path logged as another — a denial after approval as a rejection at preparation, say — fails
//! its row by name.

use crate::common;
use toolgate::approvals::ApprovalId;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolgate::approvals::ApprovalLimits;
use toolgate::audit::{AuditError, AuditEvent, AuditKind, AuditSink, MemoryAuditSink};
use toolgate::*;

use AuditKind::*;

/// One expected event: its kind, and the decision's action or the outcome's `is_error`.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Kind(AuditKind),
    Decided(PolicyAction),
    Ended { is_error: bool },
    Rejected,
}

fn seen(event: &AuditEvent) -> Seen {
    match event.kind {
        Decision => Seen::Decided(event.action.expect("a decision has an action")),
        ExecutionOutcome => Seen::Ended {
            is_error: event.is_error.expect("an outcome says how it ended"),
        },
        RejectedAtPreparation => {
            assert_eq!(event.is_error, Some(true));
            assert!(event.reason.is_some(), "a rejection says why");
            Seen::Rejected
        }
        kind => Seen::Kind(kind),
    }
}

/// A sink that records in memory and fails on one kind of event.
struct Sink {
    events: MemoryAuditSink,
    failing: Option<AuditKind>,
}

impl AuditSink for Sink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        if Some(event.kind) == self.failing {
            return Err(AuditError::new("disk full"));
        }
        self.events.record(event)
    }
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
}

struct World {
    controller: ToolController,
    sink: Arc<Sink>,
    runs: Arc<AtomicUsize>,
}

fn world(ttl: Option<Duration>, failing: Option<AuditKind>) -> World {
    let runs = Arc::new(AtomicUsize::new(0));
    let sink = Arc::new(Sink {
        events: MemoryAuditSink::new(),
        failing,
    });
    let controller = ToolController::new(
        registry([
            counted("allowed", schema(), &runs),
            counted("asked", schema(), &runs),
            counted("denied", schema(), &runs),
            failing_tool(),
        ]),
        policy(&["allowed", "fails"], &["asked"]),
    )
    .with_approval_limits(ApprovalLimits::default().with_time_to_live(ttl))
    .with_audit_sink(Arc::clone(&sink));
    World {
        controller,
        sink,
        runs,
    }
}

fn failing_tool() -> ToolDefinition {
    failing("fails", "the handler failed")
}

fn call(tool: &str, n: Value) -> ToolCall {
    ToolCall::new("c1", tool, json!({"n": n}))
}

fn ask(world: &World) -> ApprovalId {
    match world.controller.handle(call("asked", json!(1))) {
        Outcome::PendingApproval(request) => request.approval_id,
        other => panic!("asked must wait: {other:?}"),
    }
}

fn completed(outcome: Outcome) -> ToolResult {
    match outcome {
        Outcome::Completed(result) => result,
        other => panic!("expected a result: {other:?}"),
    }
}

type Scenario = (&'static str, fn() -> World, Vec<Seen>, usize);

fn held() -> Vec<Seen> {
    vec![
        Seen::Kind(CallReceived),
        Seen::Decided(PolicyAction::Ask),
        Seen::Kind(ApprovalRequested),
    ]
}

fn then(mut first: Vec<Seen>, rest: impl IntoIterator<Item = Seen>) -> Vec<Seen> {
    first.extend(rest);
    first
}

fn scenarios() -> Vec<Scenario> {
    vec![
        (
            "allow",
            || {
                let w = world(None, None);
                assert!(!completed(w.controller.handle(call("allowed", json!(1)))).is_error);
                w
            },
            vec![
                Seen::Kind(CallReceived),
                Seen::Decided(PolicyAction::Allow),
                Seen::Ended { is_error: false },
            ],
            1,
        ),
        (
            "allow, the handler reports a failure",
            || {
                let w = world(None, None);
                assert!(completed(w.controller.handle(call("fails", json!(1)))).is_error);
                w
            },
            vec![
                Seen::Kind(CallReceived),
                Seen::Decided(PolicyAction::Allow),
                Seen::Ended { is_error: true },
            ],
            0,
        ),
        (
            "deny",
            || {
                let w = world(None, None);
                assert!(completed(w.controller.handle(call("denied", json!(1)))).is_error);
                w
            },
            vec![Seen::Kind(CallReceived), Seen::Decided(PolicyAction::Deny)],
            0,
        ),
        (
            "unknown tool",
            || {
                let w = world(None, None);
                assert!(completed(w.controller.handle(call("nope", json!(1)))).is_error);
                w
            },
            vec![Seen::Kind(CallReceived), Seen::Rejected],
            0,
        ),
        (
            "invalid arguments",
            || {
                let w = world(None, None);
                assert!(completed(w.controller.handle(call("allowed", json!("x")))).is_error);
                w
            },
            vec![Seen::Kind(CallReceived), Seen::Rejected],
            0,
        ),
        (
            "ask, approve",
            || {
                let w = world(None, None);
                let id = ask(&w);
                let result = w.controller.resolve(ApprovalResponse::approve(id)).unwrap();
                assert!(!result.is_error, "{result:?}");
                w
            },
            then(
                held(),
                [
                    Seen::Kind(ApprovalApproved),
                    Seen::Decided(PolicyAction::Ask),
                    Seen::Ended { is_error: false },
                ],
            ),
            1,
        ),
        (
            "ask, approve edited arguments",
            || {
                let w = world(None, None);
                let id = ask(&w);
                let edited = ApprovalResponse::approve_edited(id, json!({"n": 2}));
                assert!(!w.controller.resolve(edited).unwrap().is_error);
                w
            },
            then(
                held(),
                [
                    Seen::Kind(ApprovalApproved),
                    Seen::Kind(ApprovalEdited),
                    Seen::Decided(PolicyAction::Ask),
                    Seen::Ended { is_error: false },
                ],
            ),
            1,
        ),
        (
            "ask, approve edited arguments that are invalid",
            || {
                let w = world(None, None);
                let id = ask(&w);
                let edited = ApprovalResponse::approve_edited(id, json!({"n": "two"}));
                assert!(w.controller.resolve(edited).unwrap().is_error);
                w
            },
            then(
                held(),
                [
                    Seen::Kind(ApprovalApproved),
                    Seen::Kind(ApprovalEdited),
                    Seen::Rejected,
                ],
            ),
            0,
        ),
        (
            "ask, reject",
            || {
                let w = world(None, None);
                let id = ask(&w);
                assert!(
                    w.controller
                        .resolve(ApprovalResponse::reject(id))
                        .unwrap()
                        .is_error
                );
                w
            },
            then(held(), [Seen::Kind(ApprovalRejected)]),
            0,
        ),
        (
            "ask, expire",
            || {
                let w = world(Some(Duration::ZERO), None);
                let id = ask(&w);
                assert!(
                    w.controller
                        .resolve(ApprovalResponse::approve(id))
                        .unwrap()
                        .is_error
                );
                w
            },
            then(held(), [Seen::Kind(ApprovalExpired)]),
            0,
        ),
        (
            "ask, revoke",
            || {
                let w = world(None, None);
                let id = ask(&w);
                assert!(w.controller.revoke(id).unwrap().is_error);
                w
            },
            then(held(), [Seen::Kind(ApprovalRevoked)]),
            0,
        ),
        (
            "ask, the tool's definition changes, approve: stale",
            || {
                let w = world(None, None);
                let id = ask(&w);
                let wider = json!({"type": "object", "properties": {"n": {"type": "number"}}});
                w.controller
                    .replace_registry(registry([counted("asked", wider, &w.runs)]))
                    .unwrap();
                let result = w.controller.resolve(ApprovalResponse::approve(id)).unwrap();
                assert!(result.content.contains("stale"), "{result:?}");
                w
            },
            then(
                held(),
                [Seen::Kind(ApprovalApproved), Seen::Kind(ApprovalStale)],
            ),
            0,
        ),
        (
            "ask, the tool is removed, approve: rejected at preparation",
            || {
                let w = world(None, None);
                let id = ask(&w);
                w.controller
                    .replace_registry(registry([counted("allowed", schema(), &w.runs)]))
                    .unwrap();
                let result = w.controller.resolve(ApprovalResponse::approve(id)).unwrap();
                assert!(result.content.contains("unknown tool"), "{result:?}");
                w
            },
            then(held(), [Seen::Kind(ApprovalApproved), Seen::Rejected]),
            0,
        ),
        (
            "ask, the policy now denies, approve: denied after approval",
            || {
                let w = world(None, None);
                let id = ask(&w);
                w.controller.replace_policy(policy(&[], &[])).unwrap();
                let result = w.controller.resolve(ApprovalResponse::approve(id)).unwrap();
                assert!(
                    result.content.starts_with("denied after approval"),
                    "{result:?}"
                );
                w
            },
            then(
                held(),
                [
                    Seen::Kind(ApprovalApproved),
                    Seen::Decided(PolicyAction::Deny),
                ],
            ),
            0,
        ),
        (
            "the audit log fails on the decision: not run",
            || {
                let w = world(None, Some(Decision));
                let result = completed(w.controller.handle(call("allowed", json!(1))));
                assert!(result.content.starts_with("not run: audit log unavailable"));
                w
            },
            vec![Seen::Kind(CallReceived)],
            0,
        ),
        (
            "the audit log fails on the request: not held, not run",
            || {
                let w = world(None, Some(ApprovalRequested));
                let result = completed(w.controller.handle(call("asked", json!(1))));
                assert!(result.content.starts_with("not run: audit log unavailable"));
                assert!(
                    w.controller.pending().is_empty(),
                    "an untraceable ask is revoked"
                );
                w
            },
            vec![Seen::Kind(CallReceived), Seen::Decided(PolicyAction::Ask)],
            0,
        ),
        (
            "the audit log fails on the approval: not run",
            || {
                let w = world(None, Some(ApprovalApproved));
                let id = ask(&w);
                let result = w.controller.resolve(ApprovalResponse::approve(id)).unwrap();
                assert!(result.content.starts_with("not run: audit log unavailable"));
                w
            },
            held(),
            0,
        ),
    ]
}

#[test]
fn every_path_leaves_exactly_its_audit_sequence() {
    let mut failures = Vec::new();
    let scenarios = scenarios();
    for (name, run, expected, expected_runs) in &scenarios {
        let world = run();
        let got: Vec<Seen> = world.sink.events.events().iter().map(seen).collect();
        if &got != expected {
            failures.push(format!(
                "{name}:\n  expected {expected:?}\n  got      {got:?}"
            ));
        }
        if run_count(&world.runs) != *expected_runs {
            failures.push(format!(
                "{name}: {} handler run(s), expected {expected_runs}",
                run_count(&world.runs)
            ));
        }
        // Every event of one path is about the same call.
        assert!(
            world.sink.events.events().iter().all(|e| e.call_id == "c1"),
            "{name}"
        );
    }
    assert!(scenarios.len() >= 17);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
