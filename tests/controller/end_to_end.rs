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

#[test]
fn one_approval_answered_from_8_threads_runs_exactly_once() {
    const THREADS: usize = 8;
    for round in 0..50 {
        let runs = Arc::new(AtomicUsize::new(0));
        let controller = Arc::new(ToolController::new(
            registry([counted("apply_patch", patch_schema(), &runs)]),
            policy(&[], &["apply_patch"]),
        ));
        let request = ask_request(
            &controller,
            ToolCall::new("c1", "apply_patch", json!({"patch": "+x"})),
        );
        let barrier = Arc::new(Barrier::new(THREADS));
        // Spawn all, then join all: joining inside the same iterator would serialize them.
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (controller, barrier) = (Arc::clone(&controller), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    controller.resolve(ApprovalResponse::approve(request.approval_id))
                })
            })
            .collect();
        let answers: Vec<_> = handles
            .into_iter()
            .map(|handle| handle.join().expect("no panic"))
            .collect();
        let successes = answers.iter().filter(|answer| answer.is_ok()).count();
        assert_eq!(successes, 1, "round {round}: {answers:?}");
        assert_eq!(run_count(&runs), 1, "round {round}");
        for answer in answers.iter().flatten() {
            assert_eq!(answer.call_id, "c1");
        }
    }
}

#[test]
fn panicking_handler_reaches_the_caller_and_the_controller_keeps_working() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([
            panicking("explode"),
            calculator(),
            counted("apply_patch", patch_schema(), &runs),
        ]),
        policy(&["calculator", "explode"], &["apply_patch"]),
    );
    let waiting = ask_request(
        &controller,
        ToolCall::new("w", "apply_patch", json!({"patch": "+"})),
    );

    let panicked = catch_unwind(AssertUnwindSafe(|| {
        controller.handle(ToolCall::new("boom", "explode", json!({})))
    }));
    let payload = panicked.expect_err("a panic is not dressed up as a tool result");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"handler defect"));

    // Next call works, and the approval that waited is still there and answerable.
    let result =
        completed(controller.handle(ToolCall::new("next", "calculator", json!({"a": 1, "b": 2}))));
    assert_eq!(result, ToolResult::ok("next", "3"));
    assert_eq!(controller.pending(), vec![waiting.clone()]);
    controller
        .replace_policy(policy(&["calculator"], &["apply_patch"]))
        .expect("the policy fits the tools");
    let result = controller
        .resolve(ApprovalResponse::approve(waiting.approval_id))
        .unwrap();
    assert_eq!(result, ToolResult::ok("w", "run 1"));
}

#[test]
fn panicking_approved_handler_consumes_its_approval() {
    let controller =
        ToolController::new(registry([panicking("explode")]), policy(&[], &["explode"]));
    let request = ask_request(&controller, ToolCall::new("c", "explode", json!({})));
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        controller.resolve(ApprovalResponse::approve(request.approval_id))
    }));
    assert!(panicked.is_err());
    // At most once: the approval was consumed before the handler ran.
    assert!(matches!(
        controller.resolve(ApprovalResponse::approve(request.approval_id)),
        Err(ApprovalError::NotPending { .. })
    ));
}

#[test]
fn every_result_keeps_its_call_id() {
    let controller = ToolController::new(
        registry([
            calculator(),
            failing("read_file", "file not found"),
            counted(
                "shell",
                json!({"type": "object"}),
                &Arc::new(AtomicUsize::new(0)),
            ),
            counted(
                "apply_patch",
                patch_schema(),
                &Arc::new(AtomicUsize::new(0)),
            ),
        ]),
        policy(&["calculator", "read_file"], &["apply_patch"]),
    );
    let direct = [
        ToolCall::new("id-allowed", "calculator", json!({"a": 1, "b": 1})),
        ToolCall::new("id-invalid", "calculator", json!({"a": 1})),
        ToolCall::new("id-unknown", "nope", json!({})),
        ToolCall::new("id-denied", "shell", json!({})),
        ToolCall::new("id-failed", "read_file", json!({})),
    ];
    for call in direct {
        let id = call.call_id.clone();
        assert_eq!(completed(controller.handle(call)).call_id, id);
    }
    let approved = ask_request(
        &controller,
        ToolCall::new("id-approved", "apply_patch", json!({"patch": ""})),
    );
    let rejected = ask_request(
        &controller,
        ToolCall::new("id-rejected", "apply_patch", json!({"patch": ""})),
    );
    let overridden = ask_request(
        &controller,
        ToolCall::new("id-overridden", "apply_patch", json!({"patch": ""})),
    );
    let answer = |response| controller.resolve(response).unwrap().call_id;
    assert_eq!(
        answer(ApprovalResponse::approve(approved.approval_id)),
        "id-approved"
    );
    assert_eq!(
        answer(ApprovalResponse::reject(rejected.approval_id)),
        "id-rejected"
    );
    controller
        .replace_policy(policy(&[], &[]))
        .expect("the policy fits the tools");
    assert_eq!(
        answer(ApprovalResponse::approve(overridden.approval_id)),
        "id-overridden"
    );
}

#[test]
fn many_threads_handle_and_resolve_concurrently() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = Arc::new(ToolController::new(
        registry([calculator(), counted("apply_patch", patch_schema(), &runs)]),
        policy(&["calculator"], &["apply_patch"]),
    ));
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let controller = Arc::clone(&controller);
            thread::spawn(move || {
                for i in 0..100 {
                    let id = format!("{worker}-{i}");
                    let sum = completed(controller.handle(ToolCall::new(
                        id.clone(),
                        "calculator",
                        json!({"a": i, "b": worker}),
                    )));
                    assert_eq!(sum, ToolResult::ok(id.clone(), (i + worker).to_string()));
                    let request = ask_request(
                        &controller,
                        ToolCall::new(id.clone(), "apply_patch", json!({"patch": ""})),
                    );
                    let result = controller
                        .resolve(ApprovalResponse::approve(request.approval_id))
                        .unwrap();
                    assert_eq!(result.call_id, id);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("no panic");
    }
    assert_eq!(run_count(&runs), 400);
    assert!(controller.pending().is_empty());
}

#[test]
fn a_replacement_reaches_threads_that_already_handled_calls() {
    use std::sync::mpsc;
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = Arc::new(ToolController::new(
        registry([counted("t", json!({"type": "object"}), &runs)]),
        policy(&["t"], &[]),
    ));
    let (go, wait) = mpsc::channel::<()>();
    let (done, results) = mpsc::channel::<ToolResult>();
    let worker = {
        let controller = Arc::clone(&controller);
        thread::spawn(move || {
            for round in 0..3 {
                wait.recv().expect("main signals");
                let call = ToolCall::new(format!("round-{round}"), "t", json!({}));
                done.send(completed(controller.handle(call)))
                    .expect("main listens");
            }
        })
    };
    go.send(()).unwrap();
    assert!(
        !results.recv().unwrap().is_error,
        "allowed before the change"
    );
    controller
        .replace_policy(policy(&[], &[]))
        .expect("the policy fits the tools");
    go.send(()).unwrap();
    let denied = results.recv().unwrap();
    assert!(
        denied.content.contains("default deny"),
        "the worker saw the new policy: {denied:?}"
    );
    controller
        .replace_registry(registry([]))
        .expect("the policy fits the tools");
    go.send(()).unwrap();
    assert_eq!(
        results.recv().unwrap(),
        ToolResult::error("round-2", "unknown tool: t")
    );
    worker.join().unwrap();
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn many_controllers_on_one_thread_keep_their_own_policies() {
    // More controllers than a thread caches gates for, used in turn.
    let controllers: Vec<ToolController> = (0..20)
        .map(|i| {
            let allowed: &[&str] = if i % 2 == 0 { &["calculator"] } else { &[] };
            ToolController::new(registry([calculator()]), policy(allowed, &[]))
        })
        .collect();
    for round in 0..3 {
        for (i, controller) in controllers.iter().enumerate() {
            let result = completed(controller.handle(ToolCall::new(
                format!("{round}-{i}"),
                "calculator",
                json!({"a": 1, "b": 1}),
            )));
            assert_eq!(
                result.is_error,
                i % 2 == 1,
                "controller {i} round {round}: {result:?}"
            );
        }
    }
}

// ---- lifecycle: expiry, revocation, bounds -----------------------------------------------------

fn patch_controller(runs: &Arc<AtomicUsize>, limits: ApprovalLimits) -> ToolController {
    ToolController::new(
        registry([counted("apply_patch", patch_schema(), runs)]),
        policy(&[], &["apply_patch"]),
    )
    .with_approval_limits(limits)
}

fn patch_call(id: &str) -> ToolCall {
    ToolCall::new(id, "apply_patch", json!({"patch": "+x"}))
}

#[test]
fn an_expired_request_is_denied_whatever_the_answer() {
    let runs = Arc::new(AtomicUsize::new(0));
    let limits = ApprovalLimits::default().with_time_to_live(Some(std::time::Duration::ZERO));
    let controller = patch_controller(&runs, limits);
    let request = ask_request(&controller, patch_call("c1"));
    assert!(
        controller.pending().is_empty(),
        "expired requests are not listed"
    );
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(
        result.is_error && result.content.contains("expired"),
        "{result:?}"
    );
    assert_eq!(result.call_id, "c1");
    assert!(
        controller
            .resolve(ApprovalResponse::approve(request.approval_id))
            .is_err()
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn requests_within_their_time_to_live_are_answerable() {
    let runs = Arc::new(AtomicUsize::new(0));
    let limits =
        ApprovalLimits::default().with_time_to_live(Some(std::time::Duration::from_secs(3600)));
    let controller = patch_controller(&runs, limits);
    let request = ask_request(&controller, patch_call("c1"));
    assert_eq!(controller.pending().len(), 1);
    assert!(
        !controller
            .resolve(ApprovalResponse::approve(request.approval_id))
            .unwrap()
            .is_error
    );
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn a_revoked_request_cannot_be_answered() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = patch_controller(&runs, ApprovalLimits::default());
    let request = ask_request(&controller, patch_call("c4"));
    let result = controller.revoke(request.approval_id).unwrap();
    assert!(
        result.is_error && result.content.starts_with("revoked"),
        "{result:?}"
    );
    assert_eq!(result.call_id, "c4");
    assert_eq!(
        controller.resolve(ApprovalResponse::approve(request.approval_id)),
        Err(ApprovalError::NotPending {
            approval_id: request.approval_id
        })
    );
    assert!(controller.revoke(request.approval_id).is_err());
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn past_the_cap_a_new_ask_is_denied_with_a_reason() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = patch_controller(&runs, ApprovalLimits::default().with_max_pending(2));
    let first = ask_request(&controller, patch_call("c1"));
    let _second = ask_request(&controller, patch_call("c2"));
    let third = completed(controller.handle(patch_call("c3")));
    assert!(third.is_error, "{third:?}");
    assert_eq!(third.call_id, "c3");
    assert!(
        third
            .content
            .contains("too many calls are waiting for approval (limit 2)"),
        "{}",
        third.content
    );
    // Answering one makes room again.
    controller
        .resolve(ApprovalResponse::reject(first.approval_id))
        .unwrap();
    let _fourth = ask_request(&controller, patch_call("c4"));
    assert_eq!(controller.pending().len(), 2);
}

#[test]
fn expired_requests_make_room_under_the_cap() {
    let runs = Arc::new(AtomicUsize::new(0));
    let limits = ApprovalLimits::default()
        .with_max_pending(1)
        .with_time_to_live(Some(std::time::Duration::ZERO));
    let controller = patch_controller(&runs, limits);
    let _expired = ask_request(&controller, patch_call("c1"));
    let _next = ask_request(&controller, patch_call("c2"));
}

#[test]
fn pending_lists_the_full_call_reason_and_digest() {
    let controller = patch_controller(&Arc::default(), ApprovalLimits::default());
    let request = ask_request(&controller, patch_call("c1"));
    let listed = controller.pending();
    assert_eq!(listed, vec![request.clone()]);
    assert_eq!(listed[0].call, patch_call("c1"));
    assert!(listed[0].digest.starts_with("sha256:") && listed[0].digest_matches());
    assert_eq!(listed[0].reason.as_str(), "tool requires user confirmation");
}

// ---- edited approvals --------------------------------------------------------------------------

fn echo_patch(runs: &Arc<AtomicUsize>) -> ToolDefinition {
    let runs = Arc::clone(runs);
    ToolDefinition::new(
        ToolSpec::new("apply_patch", "Apply a patch.", patch_schema()),
        move |args: &serde_json::Value| -> Result<String, ToolError> {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(format!("applied {}", args["patch"]))
        },
    )
    .unwrap()
}

#[test]
fn an_edited_approval_runs_the_edited_arguments() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller =
        ToolController::new(registry([echo_patch(&runs)]), policy(&[], &["apply_patch"]));
    let request = ask_request(
        &controller,
        ToolCall::new("c1", "apply_patch", json!({"patch": "rm -rf"})),
    );
    let result = controller
        .resolve(ApprovalResponse::approve_edited(
            request.approval_id,
            json!({"patch": "+safe"}),
        ))
        .unwrap();
    assert_eq!(result, ToolResult::ok("c1", "applied \"+safe\""));
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn edited_arguments_are_validated_like_any_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller =
        ToolController::new(registry([echo_patch(&runs)]), policy(&[], &["apply_patch"]));
    let request = ask_request(
        &controller,
        ToolCall::new("c1", "apply_patch", json!({"patch": "+x"})),
    );
    let result = controller
        .resolve(ApprovalResponse::approve_edited(
            request.approval_id,
            json!({"patch": 7}),
        ))
        .unwrap();
    assert!(
        result
            .content
            .starts_with("invalid arguments for apply_patch"),
        "{result:?}"
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn edited_arguments_are_decided_like_any_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tools = || registry([echo_patch(&runs)]);
    let rules = RulePolicy::from_json(
        r#"{"rules": [
          {"id": "ask-patches", "tool": "apply_patch", "action": "ask", "reason": "patches change files"},
          {"id": "no-deletes", "tool": "apply_patch", "action": "deny", "reason": "deleting is for people",
           "when": {"glob": {"pointer": "/patch", "pattern": "*rm -rf*"}}}
        ]}"#,
        &tools(),
    );
    // An unconditional ask shadows nothing stricter; the deny rule stays live.
    let controller = ToolController::new(tools(), rules.unwrap());
    let request = ask_request(
        &controller,
        ToolCall::new("c1", "apply_patch", json!({"patch": "+x"})),
    );
    let result = controller
        .resolve(ApprovalResponse::approve_edited(
            request.approval_id,
            json!({"patch": "rm -rf /"}),
        ))
        .unwrap();
    assert_eq!(
        result,
        ToolResult::error("c1", "denied after approval: deleting is for people")
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn no_lock_is_held_while_a_handler_runs() {
    // The handler calls back into its own controller: it replaces the policy (the write lock),
    // lists approvals (the store's lock) and handles a nested call. Any lock held across the
    // handler would deadlock, which the timeout below turns into a failure.
    use std::sync::{OnceLock, mpsc};
    let slot: Arc<OnceLock<std::sync::Weak<ToolController>>> = Arc::new(OnceLock::new());
    let reentrant = {
        let slot = Arc::clone(&slot);
        ToolDefinition::new(
            ToolSpec::new(
                "reentrant",
                "Calls its own controller.",
                json!({"type": "object"}),
            ),
            move |_: &serde_json::Value| -> Result<String, ToolError> {
                let controller = slot
                    .get()
                    .and_then(std::sync::Weak::upgrade)
                    .expect("controller");
                controller
                    .replace_policy(policy(&["reentrant", "calculator"], &["apply_patch"]))
                    .expect("the policy fits the tools");
                let waiting = controller.pending().len();
                let nested = completed(controller.handle(ToolCall::new(
                    "inner",
                    "calculator",
                    json!({"a": 1, "b": 1}),
                )));
                Ok(format!("{waiting} waiting, nested {}", nested.content))
            },
        )
        .unwrap()
    };
    let controller = Arc::new(ToolController::new(
        registry([
            reentrant,
            calculator(),
            counted("apply_patch", patch_schema(), &Arc::default()),
        ]),
        policy(&["reentrant", "calculator"], &["apply_patch"]),
    ));
    slot.set(Arc::downgrade(&controller)).unwrap();
    let _ = ask_request(
        &controller,
        ToolCall::new("w", "apply_patch", json!({"patch": "+"})),
    );
    let (done, result) = mpsc::channel();
    let worker = Arc::clone(&controller);
    thread::spawn(move || {
        let outcome = worker.handle(ToolCall::new("outer", "reentrant", json!({})));
        let _ = done.send(outcome);
    });
    let outcome = result
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("a lock was held across the handler (deadlock)");
    assert_eq!(
        outcome,
        Outcome::Completed(ToolResult::ok("outer", "1 waiting, nested 2"))
    );
}

#[test]
fn handlers_may_call_replace_and_drop_controllers_on_their_own_thread() {
    // The sync `handle` lends the gate from this thread's cache for the whole call. A handler
    // that calls another controller (its gate is not cached yet), replaces its own controller's
    // policy, or drops a controller must see each controller's gate in force, never another's,
    // and leave the cache usable for the calls that follow.
    use std::sync::OnceLock;
    let own: Arc<OnceLock<std::sync::Weak<ToolController>>> = Arc::new(OnceLock::new());
    let other = Arc::new(ToolController::new(
        registry([calculator()]),
        policy(&["calculator"], &[]),
    ));
    let nesting = {
        let (own, other) = (Arc::clone(&own), Arc::clone(&other));
        ToolDefinition::new(
            ToolSpec::new("nesting", "Calls controllers.", json!({"type": "object"})),
            move |_: &serde_json::Value| -> Result<String, ToolError> {
                let own = own.get().and_then(std::sync::Weak::upgrade).expect("own");
                let sum = |controller: &ToolController, id: &str| {
                    completed(controller.handle(ToolCall::new(
                        id,
                        "calculator",
                        json!({"a": 2, "b": 3}),
                    )))
                };
                let from_other = sum(&other, "o1");
                // A third controller, made and dropped while the cache is lent.
                let third = ToolController::new(registry([calculator()]), policy(&[], &[]));
                let denied = sum(&third, "t1");
                drop(third);
                // Its own policy replaced mid-call: the nested call sees the new one.
                own.replace_policy(policy(&["nesting"], &[])).expect("fits");
                let from_own = sum(&own, "n1");
                Ok(format!(
                    "{} {} {}",
                    from_other.content, denied.is_error, from_own.is_error
                ))
            },
        )
        .unwrap()
    };
    let controller = Arc::new(ToolController::new(
        registry([nesting, calculator()]),
        policy(&["nesting", "calculator"], &[]),
    ));
    own.set(Arc::downgrade(&controller)).unwrap();
    let outcome = completed(controller.handle(ToolCall::new("outer", "nesting", json!({}))));
    assert_eq!(outcome, ToolResult::ok("outer", "5 true true"));
    // Afterwards, on the same thread: the replaced policy is in force (calculator denied), the
    // other controller still allows, and repeated calls keep giving the same answers.
    for _ in 0..3 {
        let own_call =
            completed(controller.handle(ToolCall::new("c", "calculator", json!({"a": 1, "b": 1}))));
        assert!(own_call.is_error, "{own_call:?}");
        let other_call =
            completed(other.handle(ToolCall::new("d", "calculator", json!({"a": 1, "b": 1}))));
        assert_eq!(other_call, ToolResult::ok("d", "2"));
    }
}
