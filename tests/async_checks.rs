//! Issue 15, item 5: async checks. A check is asked only about calls no synchronous rule decides,
//! its decision is taken in `handle`, `handle_async` and `resolve`, and a check that does not
//! decide within its timeout denies the call (fail closed) without any async runtime.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use toolgate::definition::BoxFuture;
use toolgate::*;

const RULES: &str = r#"{"rules": [
  {"id": "ws", "tool": "read_file", "action": "allow", "reason": "workspace",
   "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}},
  {"id": "secrets", "tool": "read_file", "action": "deny", "reason": "secrets stay secret",
   "when": {"path_glob": {"pointer": "/path", "pattern": "/work/secrets/**"}}}
]}"#;

fn controller(runs: &Arc<AtomicUsize>) -> ToolController {
    let tools = registry([counted(
        "read_file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        runs,
    )]);
    let policy = RulePolicy::from_json(RULES, &tools).expect("loads");
    ToolController::try_new(tools, policy).expect("fits")
}

/// A check answering `decision`, counting how often it is asked.
fn answering(decision: PolicyDecision, asked: &Arc<AtomicUsize>) -> impl AsyncPolicy + 'static {
    let asked = Arc::clone(asked);
    move |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        asked.fetch_add(1, Ordering::SeqCst);
        let decision = decision.clone();
        // Pending once and woken from another thread, like a remote service's reply.
        Box::pin(async move { WokenLater::new(decision).await })
    }
}

fn read(path: &str) -> ToolCall {
    ToolCall::new("c", "read_file", json!({"path": path}))
}

fn completed(outcome: Outcome) -> ToolResult {
    match outcome {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(request) => panic!("unexpected ask: {request:?}"),
    }
}

#[test]
fn async_checks_decide_only_what_no_rule_decides() {
    let (runs, asked) = (Arc::default(), Arc::default());
    let allow = PolicyDecision::allow(Reason::from_static("the classifier found nothing"));
    let controller =
        controller(&runs).with_async_check(answering(allow, &asked), Duration::from_secs(5));
    // Decided by rules: the check is never asked.
    assert!(!completed(controller.handle(read("/work/a"))).is_error);
    let denied = completed(controller.handle(read("/work/secrets/k")));
    assert!(denied.content.contains("secrets stay secret"), "{denied:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    // Left undecided (the default deny is a fallback): the check decides, sync and async alike.
    assert!(!completed(controller.handle(read("/etc/hosts"))).is_error);
    assert!(!completed(block_on(controller.handle_async(read("/etc/hosts")))).is_error);
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    assert_eq!(run_count(&runs), 3);
}

#[test]
fn async_checks_a_denial_from_the_check_is_a_denial() {
    let (runs, asked) = (Arc::default(), Arc::default());
    let deny = PolicyDecision::deny(Reason::from_static("the classifier flagged it"));
    let controller =
        controller(&runs).with_async_check(answering(deny, &asked), Duration::from_secs(5));
    for result in [
        completed(controller.handle(read("/etc/shadow"))),
        completed(block_on(controller.handle_async(read("/etc/shadow")))),
    ] {
        assert!(result.is_error && result.content.contains("the classifier flagged it"));
    }
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn async_checks_that_never_decide_time_out_closed() {
    let runs = Arc::default();
    let never = |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(std::future::pending())
    };
    let controller = controller(&runs).with_async_check(never, Duration::from_millis(50));
    let started = Instant::now();
    for result in [
        completed(controller.handle(read("/etc/hosts"))),
        completed(block_on(controller.handle_async(read("/etc/hosts")))),
    ] {
        assert!(result.is_error, "{result:?}");
        assert!(
            result.content.contains("did not decide within 50 ms"),
            "{result:?}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(run_count(&runs), 0);
    // Calls the rules decide never wait for the check.
    assert!(!completed(controller.handle(read("/work/a"))).is_error);
}

#[test]
fn async_checks_an_ask_is_asked_and_checked_again_on_resolve() {
    let (runs, asked) = (Arc::default(), Arc::default());
    let ask = PolicyDecision::ask(Reason::from_static("the classifier is unsure"));
    let controller =
        controller(&runs).with_async_check(answering(ask, &asked), Duration::from_secs(5));
    let Outcome::PendingApproval(request) = controller.handle(read("/etc/hosts")) else {
        panic!("the check asked");
    };
    assert_eq!(request.reason.as_str(), "the classifier is unsure");
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .expect("pending");
    assert!(!result.is_error, "{result:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 2, "asked again on resolve");
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn async_checks_a_check_that_turns_to_deny_wins_over_the_approval() {
    let runs = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    // Asks the first time, denies afterwards (the remote service changed its mind).
    let check = move |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        let first = counter.fetch_add(1, Ordering::SeqCst) == 0;
        Box::pin(async move {
            if first {
                PolicyDecision::ask(Reason::from_static("unsure"))
            } else {
                PolicyDecision::deny(Reason::from_static("now flagged"))
            }
        })
    };
    let controller = controller(&runs).with_async_check(check, Duration::from_secs(5));
    let Outcome::PendingApproval(request) = controller.handle(read("/etc/hosts")) else {
        panic!("the check asked");
    };
    let result = block_on(controller.resolve_async(ApprovalResponse::approve(request.approval_id)))
        .expect("pending");
    assert!(
        result.is_error && result.content.contains("now flagged"),
        "{result:?}"
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn async_checks_the_handle_future_stays_send() {
    fn send<T: Send>(_: &T) {}
    let controller = controller(&Arc::default());
    let future = controller.handle_async(read("/etc/hosts"));
    send(&future);
}
