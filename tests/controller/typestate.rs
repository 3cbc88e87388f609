//! The typestate from the outside: what the proof types implement and must never implement, and
//! the passing twin of each compile-fail case in `ui-tests/` (the legitimate path that does the
//! same thing through the gate).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use toolgate::ApprovalOutcome;
use toolgate::PolicyOutcome;
use toolgate::Staleness;

use crate::common::*;
use serde_json::{Value, json};
use static_assertions::{assert_impl_all, assert_not_impl_any};
use toolgate::approvals::{Answered, Approval, PendingApprovals};
use toolgate::*;

// Shared across threads.
assert_impl_all!(ToolController: Send, Sync);
assert_impl_all!(ToolRuntime: Send, Sync);
assert_impl_all!(ToolRegistry: Send, Sync);
assert_impl_all!(ToolDefinition: Send, Sync);
assert_impl_all!(PendingApprovals: Send, Sync);
assert_impl_all!(ToolPolicy: Send, Sync, Policy);
assert_impl_all!(PreparedToolCall: Send, Sync);
assert_impl_all!(Authorized<PreparedToolCall>: Send, Sync);

// The proof types can be neither duplicated, conjured nor read from outside (G1, G2, G3).
assert_not_impl_any!(Authorized<PreparedToolCall>: Clone, Copy, Default, serde::de::DeserializeOwned, From<PreparedToolCall>);
assert_not_impl_any!(PreparedToolCall: Clone, Copy, Default, serde::de::DeserializeOwned, From<ToolCall>);
assert_not_impl_any!(Approval: Clone, Copy, Default, serde::de::DeserializeOwned);
assert_not_impl_any!(Authorized<PreparedToolCall>: std::ops::DerefMut);

// The plain data is plain data.
assert_impl_all!(ToolCall: Clone, serde::Serialize, serde::de::DeserializeOwned);
assert_impl_all!(ToolResult: Clone, serde::Serialize, serde::de::DeserializeOwned);
assert_impl_all!(ToolSpec: Clone, serde::Serialize, serde::de::DeserializeOwned);

fn runtime_with(runs: &Arc<AtomicUsize>) -> ToolRuntime {
    ToolRuntime::new(registry([counted("t", json!({"type": "object"}), runs)]))
}

/// Twin of `forge_prepared_literal`, `deserialize_prepared`, `execute_raw_call`: a raw call
/// becomes a `PreparedToolCall` only through `prepare`.
#[test]
fn prepare_is_the_way_to_a_prepared_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime_with(&runs);
    let call: ToolCall =
        serde_json::from_str(r#"{"call_id": "c1", "tool_name": "t", "arguments": {"k": 1}}"#)
            .unwrap();
    let prepared = runtime.prepare(call.clone()).unwrap();
    assert_eq!(prepared.call(), &call);
    assert_eq!(prepared.definition().spec().name, "t");
    assert_eq!(run_count(&runs), 0, "preparing runs nothing");
}

/// Twin of `forge_authorized_*`, `default_authorized`, `deserialize_authorized`,
/// `execute_prepared`, `execute_authorized_twice`, `clone_authorized`: the policy mints the
/// proof, and execute spends it once.
#[test]
fn the_policy_mints_and_execute_spends_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime_with(&runs);
    let allow = policy(&["t"], &[]);
    let prepared = runtime
        .prepare(ToolCall::new("c1", "t", json!({})))
        .unwrap();
    let PolicyOutcome::Allowed { authorized, .. } = Authorized::by_policy(&allow, prepared) else {
        panic!("t is allowed");
    };
    assert_eq!(runtime.execute(authorized), ToolResult::ok("c1", "run 1"));
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn the_policy_path_mints_nothing_on_ask_or_deny() {
    let runtime = runtime_with(&Arc::new(AtomicUsize::new(0)));
    let prepared = || {
        runtime
            .prepare(ToolCall::new("c1", "t", json!({})))
            .unwrap()
    };
    assert!(matches!(
        Authorized::by_policy(&policy(&[], &["t"]), prepared()),
        PolicyOutcome::NeedsApproval { .. }
    ));
    let PolicyOutcome::Denied { prepared, decision } =
        Authorized::by_policy(&policy(&[], &[]), prepared())
    else {
        panic!("t is not listed");
    };
    assert_eq!(decision.action, PolicyAction::Deny);
    assert_eq!(prepared.call_id(), "c1");
}

/// Twin of `mutate_authorized_arguments` and `mutate_prepared_arguments`: the content is
/// readable, and what runs is what was checked.
#[test]
fn authorized_content_is_readable_and_runs_unchanged() {
    let runtime = ToolRuntime::new(registry([ToolDefinition::new(
        ToolSpec::new("echo", "Echo.", json!({"type": "object"})),
        |args: &Value| -> Result<String, ToolError> { Ok(args.to_string()) },
    )
    .unwrap()]));
    let arguments = json!({"path": "/workspace/notes.txt"});
    let prepared = runtime
        .prepare(ToolCall::new("c1", "echo", arguments.clone()))
        .unwrap();
    assert_eq!(prepared.arguments(), &arguments);
    let PolicyOutcome::Allowed { authorized, .. } =
        Authorized::by_policy(&policy(&["echo"], &[]), prepared)
    else {
        panic!("echo is allowed");
    };
    assert_eq!(authorized.arguments(), &arguments);
    assert_eq!(runtime.execute(authorized).content, arguments.to_string());
}

/// Twin of `policy_mints_authorized`: a user policy returns a decision, and the gate acts on it.
#[test]
fn a_user_policy_decides_on_validated_arguments() {
    struct SmallNumbersOnly;
    impl Policy for SmallNumbersOnly {
        fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
            match call.arguments()["a"].as_i64() {
                Some(a) if a < 100 => PolicyDecision::allow(Reason::from_static("small")),
                _ => PolicyDecision::deny(Reason::from_static("a must be below 100")),
            }
        }
    }
    let controller = ToolController::new(registry([calculator()]), SmallNumbersOnly);
    assert_eq!(
        controller.handle(ToolCall::new("c1", "calculator", json!({"a": 1, "b": 2}))),
        Outcome::Completed(ToolResult::ok("c1", "3"))
    );
    assert_eq!(
        controller.handle(ToolCall::new("c2", "calculator", json!({"a": 500, "b": 2}))),
        Outcome::Completed(ToolResult::error("c2", "denied: a must be below 100"))
    );
}

/// Twin of `forge_approval_literal`: only `PendingApprovals::answer` yields an `Approval`, and the
/// approval path re-checks it.
#[test]
fn approvals_come_from_answers_and_are_rechecked() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime_with(&runs);
    let pending = PendingApprovals::new();
    let request = pending
        .request(
            runtime
                .prepare(ToolCall::new("c1", "t", json!({})))
                .unwrap(),
            Reason::from_static("needs a person"),
        )
        .unwrap();
    let Answered::Approved(approval) = pending
        .answer(ApprovalResponse::approve(request.approval_id))
        .unwrap()
    else {
        panic!("approved");
    };
    assert_eq!(approval.request(), &request);
    // The current policy denies: the approval is spent and nothing runs.
    let outcome = Authorized::by_approval(&runtime, &policy(&[], &[]), approval);
    assert!(
        matches!(&outcome, ApprovalOutcome::Denied { decision, .. } if decision.action == PolicyAction::Deny),
        "{outcome:?}"
    );
    let denied = outcome.into_authorized().unwrap_err();
    assert!(
        denied.content.starts_with("denied after approval"),
        "{}",
        denied.content
    );
    assert_eq!(run_count(&runs), 0);
}

/// The approval binds to what was approved: a request altered after it was made, or approved
/// under a tool definition that has since changed, is denied without running.
#[test]
fn approvals_bind_to_the_call_and_definition_digests() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime_with(&runs);
    let pending = PendingApprovals::new();
    let hold = |arguments: Value| {
        let prepared = runtime
            .prepare(ToolCall::new("c1", "t", arguments))
            .unwrap();
        pending
            .request(prepared, Reason::from_static("needs a person"))
            .unwrap()
    };
    let approve = |request: &ApprovalRequest| match pending
        .answer(ApprovalResponse::approve(request.approval_id))
        .unwrap()
    {
        Answered::Approved(approval) => approval,
        other => panic!("expected an approval, got {other:?}"),
    };
    // Same meaning, same digest; another value, another digest.
    let first = hold(json!({"n": 1, "s": "x"}));
    let same = hold(serde_json::from_str(r#"{"s": "x", "n": 1.0}"#).unwrap());
    let other = hold(json!({"n": 2, "s": "x"}));
    assert_eq!(first.digest, same.digest);
    assert_ne!(first.digest, other.digest);
    assert!(first.digest_matches());
    let mut altered = first.clone();
    altered.call.arguments = json!({"n": 1, "s": "/etc/shadow"});
    assert!(!altered.digest_matches());

    let ask = policy(&[], &["t"]);
    let authorized = Authorized::by_approval(&runtime, &ask, approve(&first))
        .into_authorized()
        .unwrap();
    assert_eq!(runtime.execute(authorized).call_id, "c1");

    // The tool's definition changes while `other` waits: stale, denied, not run.
    let changed = ToolRuntime::new(registry([counted(
        "t",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        &runs,
    )]));
    let outcome = Authorized::by_approval(&changed, &ask, approve(&other));
    assert!(
        matches!(
            outcome,
            ApprovalOutcome::Stale {
                staleness: Staleness::DefinitionChanged,
                ..
            }
        ),
        "{outcome:?}"
    );
    let stale = outcome.into_authorized().unwrap_err();
    assert!(
        stale.content.contains("stale approval"),
        "{}",
        stale.content
    );
    let _ = approve(&same);
    assert_eq!(run_count(&runs), 1);
}
