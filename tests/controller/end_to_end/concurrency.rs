//! The controller under concurrency and panics: one approval answered from eight threads, panicking
//! handlers, every result keeping its call id, threads handling, answering and replacing at once,
//! and controllers side by side on one thread.

use super::*;

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
