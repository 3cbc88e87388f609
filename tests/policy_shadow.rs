//! Shadow mode: the enforced policy decides every call unchanged; the candidate's differences are
//! counted exactly, by rule, and recorded in the audit log.

#[path = "support/common.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use common::*;
use serde_json::json;
use toolgate::audit::{AuditKind, MemoryAuditSink};
use toolgate::*;

fn tools(runs: &Arc<AtomicUsize>) -> ToolRegistry {
    registry([counted(
        "shell",
        json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        runs,
    )])
}

const ENFORCED: &str = r#"{"rules": [
  {"id": "git", "tool": "shell", "action": "allow", "reason": "git",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}}
]}"#;

const CANDIDATE: &str = r#"{"rules": [
  {"id": "git", "tool": "shell", "action": "allow", "reason": "git",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}},
  {"id": "no-push", "tool": "shell", "action": "deny", "reason": "pushing is for people",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}},
  {"id": "ls", "tool": "shell", "action": "allow", "reason": "listing",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["ls"]}}}
]}"#;

/// (enforced action, enforced rule, candidate action, candidate rule, count).
type Pair = (
    PolicyAction,
    Option<String>,
    PolicyAction,
    Option<String>,
    u64,
);

#[test]
fn differences_are_counted_exactly_and_nothing_changes_for_the_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = tools(&runs);
    let sink = Arc::new(MemoryAuditSink::new());
    let shadow = Arc::new(
        Shadow::new(
            RulePolicy::from_json(ENFORCED, &registry).unwrap(),
            RulePolicy::from_json(CANDIDATE, &registry).unwrap(),
        )
        .with_audit_sink(Arc::clone(&sink)),
    );
    let controller = ToolController::try_new(registry, Arc::clone(&shadow)).unwrap();
    let commands: Vec<(&str, bool)> = vec![
        ("git status", true),  // both allow
        ("git push", true),    // enforced allows, candidate denies
        ("git push -f", true), // again
        ("ls -l", false),      // enforced denies (default), candidate allows
        ("rm -rf /", false),   // both deny
        ("git log", true),     // both allow
    ];
    for (command, runs_under_enforced) in &commands {
        let Outcome::Completed(result) =
            controller.handle(ToolCall::new("c", "shell", json!({"command": command})))
        else {
            panic!("no asks here");
        };
        assert_eq!(
            !result.is_error, *runs_under_enforced,
            "{command}: {result:?}"
        );
    }
    assert_eq!(
        run_count(&runs),
        4,
        "exactly what the enforced policy allows ran"
    );
    let report = shadow.report();
    assert_eq!(report.calls, 6);
    assert_eq!(report.differing, 3);
    let pairs: Vec<Pair> = report
        .differences
        .iter()
        .map(|(enforced, candidate, count)| {
            (
                enforced.action,
                enforced.rule_id.as_deref().map(str::to_owned),
                candidate.action,
                candidate.rule_id.as_deref().map(str::to_owned),
                *count,
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            (
                PolicyAction::Allow,
                Some("git".into()),
                PolicyAction::Deny,
                Some("no-push".into()),
                2
            ),
            (
                PolicyAction::Deny,
                None,
                PolicyAction::Allow,
                Some("ls".into()),
                1
            ),
        ]
    );
    let shadow_events: Vec<_> = sink
        .events()
        .into_iter()
        .filter(|event| event.kind == AuditKind::ShadowDifference)
        .collect();
    assert_eq!(shadow_events.len(), 3);
    assert_eq!(shadow_events[0].rule_id.as_deref(), Some("no-push"));
    assert_eq!(shadow_events[0].action, Some(PolicyAction::Deny));
}

#[test]
fn a_candidate_written_for_other_tools_is_refused() {
    let runs = Arc::default();
    let other = registry([counted(
        "shell",
        json!({"type": "object", "properties": {"cmd": {"type": "string"}}}),
        &runs,
    )]);
    let candidate = RulePolicy::from_json(
        r#"{"rules": [{"id": "x", "tool": "shell", "action": "allow", "reason": "r",
            "when": {"command_prefix": {"pointer": "/cmd", "prefix": ["ls"]}}}]}"#,
        &other,
    )
    .unwrap();
    let registry = tools(&runs);
    let enforced = RulePolicy::from_json(ENFORCED, &registry).unwrap();
    let error = ToolController::try_new(registry, Shadow::new(enforced, candidate)).unwrap_err();
    assert!(
        error.problems[0].place.starts_with("shadow candidate"),
        "{error}"
    );
}
