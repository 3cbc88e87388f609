//! The controller end to end: every path a call can take, approvals under change and under
//! concurrency, and the panic boundary.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Barrier};
use std::thread;
use toolgate::approvals::ApprovalError;
use toolgate::approvals::ApprovalId;

use crate::common::*;
use serde_json::json;
use toolgate::approvals::ApprovalLimits;
use toolgate::*;

fn ask_request(controller: &ToolController, call: ToolCall) -> ApprovalRequest {
    match controller.handle(call) {
        Outcome::PendingApproval(request) => request,
        other => panic!("expected an approval request, got {other:?}"),
    }
}

fn completed(outcome: Outcome) -> ToolResult {
    match outcome {
        Outcome::Completed(result) => result,
        other => panic!("expected a result, got {other:?}"),
    }
}

#[test]
fn allowed_call_runs_and_keeps_its_id() {
    let controller = ToolController::new(registry([calculator()]), policy(&["calculator"], &[]));
    let result = completed(controller.handle(ToolCall::new(
        "call_1",
        "calculator",
        json!({"a": 40, "b": 2}),
    )));
    assert_eq!(result, ToolResult::ok("call_1", "42"));
}

#[test]
fn unknown_tool_is_an_error_result_with_the_call_id() {
    let controller = ToolController::new(registry([calculator()]), policy(&["calculator"], &[]));
    let result =
        completed(controller.handle(ToolCall::new("call_9", "delete_everything", json!({}))));
    assert_eq!(
        result,
        ToolResult::error("call_9", "unknown tool: delete_everything")
    );
}

#[test]
fn unknown_tool_name_is_quoted_bounded_and_escaped() {
    let controller = ToolController::new(registry([calculator()]), policy(&["calculator"], &[]));
    let long = format!("x\n{}", "y".repeat(1_000_000));
    let result = completed(controller.handle(ToolCall::new("c", long, json!({}))));
    assert!(result.is_error);
    assert!(result.content.len() < 300, "{} bytes", result.content.len());
    assert!(
        result.content.starts_with("unknown tool: x\\ny"),
        "{}",
        result.content
    );
}

#[test]
fn invalid_arguments_list_every_violation_without_values() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("calculator", calculator_schema(), &runs)]),
        policy(&["calculator"], &[]),
    );
    let result = completed(controller.handle(ToolCall::new(
        "call_2",
        "calculator",
        json!({"a": "sk-SECRET-TOKEN", "extra": "sk-OTHER-SECRET"}),
    )));
    assert!(result.is_error);
    assert_eq!(result.call_id, "call_2");
    assert!(!result.content.contains("SECRET"), "{}", result.content);
    for expected in [
        "invalid arguments for calculator: 3 violations",
        "at \"/a\" (type)",
        "at \"\" (required)",
        "at \"\" (additionalProperties)",
    ] {
        assert!(
            result.content.contains(expected),
            "{expected:?} in {}",
            result.content
        );
    }
    assert_eq!(run_count(&runs), 0, "handler ran on invalid arguments");
}

#[test]
fn denied_and_unlisted_tools_do_not_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("shell", json!({"type": "object"}), &runs)]),
        policy(&[], &[]),
    );
    let result = completed(controller.handle(ToolCall::new("c", "shell", json!({}))));
    assert!(result.is_error);
    assert_eq!(result.call_id, "c");
    assert!(
        result.content.contains("default deny"),
        "{}",
        result.content
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn custom_policy_deny_reason_reaches_the_model() {
    let runs = Arc::new(AtomicUsize::new(0));
    let deny_all =
        |_: &PreparedToolCall| PolicyDecision::deny(Reason::from_static("maintenance window"));
    let controller = ToolController::new(registry([counted("t", json!({}), &runs)]), deny_all);
    let result = completed(controller.handle(ToolCall::new("c", "t", json!({}))));
    assert_eq!(result, ToolResult::error("c", "denied: maintenance window"));
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn handler_failure_becomes_an_error_result_with_the_call_id() {
    let controller = ToolController::new(
        registry([failing("read_file", "file not found")]),
        policy(&["read_file"], &[]),
    );
    let result = completed(controller.handle(ToolCall::new("call_3", "read_file", json!({}))));
    assert_eq!(result, ToolResult::error("call_3", "file not found"));
}

#[test]
fn ask_holds_the_call_until_approved_then_runs_it_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    );
    let call = ToolCall::new("c1", "apply_patch", json!({"patch": "+x"}));
    let request = ask_request(&controller, call.clone());
    assert_eq!(request.call, call);
    assert_eq!(request.reason.as_str(), "tool requires user confirmation");
    assert_eq!(run_count(&runs), 0, "ask must not run the handler");
    assert_eq!(controller.pending(), vec![request.clone()]);

    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert_eq!(result, ToolResult::ok("c1", "run 1"));
    assert!(controller.pending().is_empty());
    assert_eq!(
        controller.resolve(ApprovalResponse::approve(request.approval_id)),
        Err(ApprovalError::NotPending {
            approval_id: request.approval_id
        })
    );
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn reject_gives_an_error_result_and_a_later_approve_is_refused() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    );
    let request = ask_request(
        &controller,
        ToolCall::new("c7", "apply_patch", json!({"patch": ""})),
    );
    let result = controller
        .resolve(ApprovalResponse::reject(request.approval_id))
        .unwrap();
    assert!(result.is_error);
    assert_eq!(result.call_id, "c7");
    assert!(result.content.starts_with("rejected"), "{}", result.content);
    assert!(matches!(
        controller.resolve(ApprovalResponse::approve(request.approval_id)),
        Err(ApprovalError::NotPending { .. })
    ));
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn unknown_approval_id_is_an_error_value_not_a_result() {
    let controller = ToolController::new(registry([calculator()]), policy(&[], &["calculator"]));
    let forged: ApprovalId = "00000000000000000000000000000000".parse().unwrap();
    assert_eq!(
        controller.resolve(ApprovalResponse::approve(forged)),
        Err(ApprovalError::NotPending {
            approval_id: forged
        })
    );
}

#[test]
fn schema_changed_while_waiting_makes_the_approval_stale() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    );
    let request = ask_request(
        &controller,
        ToolCall::new("c1", "apply_patch", json!({"patch": "+x"})),
    );

    // The tool now also requires `path`, which the waiting call lacks.
    let stricter = json!({
        "type": "object",
        "properties": {"patch": {"type": "string"}, "path": {"type": "string"}},
        "required": ["patch", "path"]
    });
    controller
        .replace_registry(registry([counted("apply_patch", stricter, &runs)]))
        .expect("the policy fits the tools");

    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(result.is_error);
    assert_eq!(result.call_id, "c1");
    // The person approved the call against the old schema; the approval does not carry over.
    assert!(
        result.content.contains("stale approval"),
        "{}",
        result.content
    );
    assert_eq!(run_count(&runs), 0);
    // Consumed regardless: the same id cannot be tried again after fixing the schema.
    assert!(
        controller
            .resolve(ApprovalResponse::approve(request.approval_id))
            .is_err()
    );
}

#[test]
fn schema_changed_while_waiting_but_still_valid_runs_the_new_handler() {
    let old_runs = Arc::new(AtomicUsize::new(0));
    let new_runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &old_runs)]),
        policy(&[], &["apply_patch"]),
    );
    let request = ask_request(
        &controller,
        ToolCall::new("c1", "apply_patch", json!({"patch": "+x"})),
    );
    controller
        .replace_registry(registry([counted(
            "apply_patch",
            patch_schema(),
            &new_runs,
        )]))
        .expect("the policy fits the tools");
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(!result.is_error);
    assert_eq!((run_count(&old_runs), run_count(&new_runs)), (0, 1));
}

#[test]
fn policy_changed_to_deny_while_waiting_wins_over_the_approval() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    );
    let request = ask_request(
        &controller,
        ToolCall::new("c1", "apply_patch", json!({"patch": "+x"})),
    );
    controller
        .replace_policy(policy(&[], &[]))
        .expect("the policy fits the tools");
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert_eq!(
        result,
        ToolResult::error(
            "c1",
            "denied after approval: tool is not allowed by policy (default deny)"
        )
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn policy_changed_to_allow_while_waiting_still_runs_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    );
    let request = ask_request(
        &controller,
        ToolCall::new("c1", "apply_patch", json!({"patch": "+x"})),
    );
    controller
        .replace_policy(policy(&["apply_patch"], &[]))
        .expect("the policy fits the tools");
    assert!(
        !controller
            .resolve(ApprovalResponse::approve(request.approval_id))
            .unwrap()
            .is_error
    );
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn tool_removed_while_waiting_is_an_unknown_tool() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs), calculator()]),
        policy(&["calculator"], &["apply_patch"]),
    );
    let request = ask_request(
        &controller,
        ToolCall::new("c1", "apply_patch", json!({"patch": "+x"})),
    );
    controller
        .replace_registry(registry([calculator()]))
        .expect("the policy fits the tools");
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert_eq!(result, ToolResult::error("c1", "unknown tool: apply_patch"));
    assert_eq!(run_count(&runs), 0);
}

mod concurrency;
mod edited;
mod lifecycle;
