//! Async handlers: the same typestate and guarantees, on any executor.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolgate::PolicyOutcome;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::*;

fn async_tool(name: &str, runs: &Arc<AtomicUsize>) -> ToolDefinition {
    let runs = Arc::clone(runs);
    ToolDefinition::new_async(
        ToolSpec::new(
            name,
            "Waits, then echoes.",
            json!({"type": "object", "required": ["x"]}),
        ),
        move |args: Value| {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                let echoed = WokenLater::new(args["x"].to_string()).await;
                if echoed == "\"fail\"" {
                    Err(ToolError::new("remote said no"))
                } else {
                    Ok(format!("run {run}: {echoed}"))
                }
            }
        },
    )
    .expect("schema compiles")
}

#[test]
fn handle_async_awaits_the_handler_on_any_executor() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([async_tool("fetch", &runs)]),
        policy(&["fetch"], &[]),
    );
    let outcome = block_on(controller.handle_async(ToolCall::new("c1", "fetch", json!({"x": 1}))));
    assert_eq!(
        outcome,
        Outcome::Completed(ToolResult::ok("c1", "run 1: 1"))
    );
    let failed =
        block_on(controller.handle_async(ToolCall::new("c2", "fetch", json!({"x": "fail"}))));
    assert_eq!(
        failed,
        Outcome::Completed(ToolResult::error("c2", "remote said no"))
    );
}

#[test]
fn handle_async_keeps_every_check() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([
            async_tool("fetch", &runs),
            async_tool("upload", &runs),
            async_tool("shell", &runs),
        ]),
        policy(&["fetch"], &["upload"]),
    );
    let run = |call| block_on(controller.handle_async(call));
    assert!(matches!(
        run(ToolCall::new("a", "fetch", json!({}))),
        Outcome::Completed(ToolResult { is_error: true, .. })
    ));
    assert!(matches!(
        run(ToolCall::new("b", "nope", json!({"x": 1}))),
        Outcome::Completed(ToolResult { is_error: true, .. })
    ));
    assert!(matches!(
        run(ToolCall::new("c", "shell", json!({"x": 1}))),
        Outcome::Completed(ToolResult { is_error: true, .. })
    ));
    let Outcome::PendingApproval(request) = run(ToolCall::new("d", "upload", json!({"x": 2})))
    else {
        panic!("upload asks");
    };
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing ran before approval"
    );
    let result =
        block_on(controller.resolve_async(ApprovalResponse::approve(request.approval_id))).unwrap();
    assert_eq!(result, ToolResult::ok("d", "run 1: 2"));
    assert!(
        block_on(controller.resolve_async(ApprovalResponse::approve(request.approval_id))).is_err()
    );
}

#[test]
fn blocking_handle_drives_an_async_handler_to_completion() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([async_tool("fetch", &runs)]),
        policy(&["fetch"], &[]),
    );
    let outcome = controller.handle(ToolCall::new("c1", "fetch", json!({"x": "y"})));
    assert_eq!(
        outcome,
        Outcome::Completed(ToolResult::ok("c1", "run 1: \"y\""))
    );
}

#[test]
fn execute_async_runs_blocking_handlers_too() {
    let runtime = ToolRuntime::new(registry([calculator()]));
    let prepared = runtime
        .prepare(ToolCall::new("c", "calculator", json!({"a": 2, "b": 3})))
        .unwrap();
    let PolicyOutcome::Allowed { authorized, .. } =
        Authorized::by_policy(&policy(&["calculator"], &[]), prepared)
    else {
        panic!("allowed");
    };
    assert_eq!(
        block_on(runtime.execute_async(authorized)),
        ToolResult::ok("c", "5")
    );
}

#[test]
fn async_futures_are_send_so_any_runtime_can_spawn_them() {
    fn assert_send<T: Send>(_: &T) {}
    let controller = ToolController::new(registry([calculator()]), policy(&["calculator"], &[]));
    let handle = controller.handle_async(ToolCall::new("c", "calculator", json!({"a": 1, "b": 1})));
    assert_send(&handle);
    let id = "0123456789abcdef0123456789abcdef".parse().unwrap();
    let resolve = controller.resolve_async(ApprovalResponse::approve(id));
    assert_send(&resolve);
    assert!(block_on(resolve).is_err());
    assert_eq!(
        block_on(handle),
        Outcome::Completed(ToolResult::ok("c", "2"))
    );
}

#[test]
fn a_panicking_async_handler_reaches_the_caller_and_poisons_nothing() {
    let boom = ToolDefinition::new_async(
        ToolSpec::new("boom", "Panics.", json!({"type": "object"})),
        |_: Value| async { panic!("async handler defect") },
    )
    .unwrap();
    let controller = ToolController::new(
        registry([boom, calculator()]),
        policy(&["boom", "calculator"], &[]),
    );
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        block_on(controller.handle_async(ToolCall::new("c", "boom", json!({}))))
    }));
    assert!(panicked.is_err());
    let next = block_on(controller.handle_async(ToolCall::new(
        "n",
        "calculator",
        json!({"a": 1, "b": 2}),
    )));
    assert_eq!(next, Outcome::Completed(ToolResult::ok("n", "3")));
}
