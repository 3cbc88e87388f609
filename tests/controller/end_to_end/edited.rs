//! Edited approvals end to end: the edited arguments run, and are validated and decided like any
//! call's.

use super::*;

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
