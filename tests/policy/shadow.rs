//! Shadow mode: the enforced policy decides every call unchanged; the candidate's differences are
//! counted exactly, by rule, and recorded in the audit log.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;
use toolgate::policy::Shadow;

use crate::common::*;
use serde_json::json;
use toolgate::audit::{AuditKind, MemoryAuditSink};
use toolgate::definition::BoxFuture;
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

#[test]
fn shadow_panicking_candidate_still_returns_enforced_decision() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["a"]);
    let candidate = |_: &PreparedToolCall| -> PolicyDecision { panic!("candidate bug") };
    let shadow = Shadow::new(
        ToolPolicy::new(["a"], Vec::<String>::new()).unwrap(),
        candidate,
    );
    let runtime = ToolRuntime::new(reg);
    let prepared = runtime
        .prepare(ToolCall::new("c", "a", json!({})))
        .unwrap_or_else(|_| panic!("prepares"));
    let decided = catch_unwind(AssertUnwindSafe(|| shadow.decide(&prepared).action));
    assert_eq!(
        decided.ok(),
        Some(PolicyAction::Allow),
        "a candidate under trial must not change what the enforced policy returns"
    );
}

#[test]
fn shadow_with_async_check_counts_each_call_once() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["a"]);
    let shadow = Arc::new(Shadow::new(
        ToolPolicy::new(["a"], Vec::<String>::new()).unwrap(),
        ToolPolicy::new(Vec::<String>::new(), ["a"]).unwrap(),
    ));
    let check = |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(async { PolicyDecision::allow(Reason::from_static("ok")) })
    };
    let controller = ToolController::try_new(reg, Arc::clone(&shadow))
        .unwrap()
        .with_async_check(check, Duration::from_secs(1));
    assert!(ran(&controller.handle(ToolCall::new("c", "a", json!({})))));
    let report = shadow.report();
    assert_eq!(
        (report.calls, report.differing),
        (1, 1),
        "one call must be counted once"
    );
}

fn shadowed(sink: &Arc<MemoryAuditSink>) -> ToolController {
    // The enforced policy allows the calculator; the candidate on trial would deny everything.
    let shadow = Shadow::new(policy(&["calculator"], &[]), policy(&[], &[]))
        .with_audit_sink(Arc::clone(sink));
    ToolController::new(registry([calculator()]), shadow)
}

#[test]
fn shadow_difference_event_names_both_decisions() {
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = shadowed(&sink);
    let Outcome::Completed(result) =
        controller.handle(ToolCall::new("c", "calculator", json!({"a": 1, "b": 2})))
    else {
        panic!("the enforced policy allows it");
    };
    assert_eq!(result, ToolResult::ok("c", "3"));
    let events = sink.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].kind, AuditKind::ShadowDifference);
    assert_eq!(events[0].call_id, "c");
    assert_eq!(
        events[0].reason.as_deref(),
        Some("the candidate policy would deny this call where the enforced one decided allow")
    );
}

#[test]
fn shadow_candidate_that_denies_a_tool_does_not_hide_it() {
    let controller = shadowed(&Arc::new(MemoryAuditSink::new()));
    let listed: Vec<String> = controller
        .listed_specs()
        .into_iter()
        .map(|spec| spec.name)
        .collect();
    assert_eq!(listed, ["calculator"]);
}

#[test]
fn shadow_hides_what_the_enforced_policy_denies_outright() {
    // The enforced policy denies every calculator call; the candidate would allow them.
    let shadow = Shadow::new(policy(&[], &[]), policy(&["calculator"], &[]));
    let controller = ToolController::new(registry([calculator()]), shadow);
    assert!(controller.listed_specs().is_empty());
    assert_eq!(controller.specs().len(), 1);
}
