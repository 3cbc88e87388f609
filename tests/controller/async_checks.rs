//! Async checks. A check is asked only about calls no synchronous rule decides,
//! its decision is taken in `handle`, `handle_async` and `resolve`, and a check that does not
//! decide within its timeout denies the call (fail closed) without any async runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use toolgate::policy::AsyncPolicy;
use toolgate::policy::Layers;

use crate::common::*;
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

// Issue 21, item 1: the timeout covers the check from the moment it is asked. Each way a check
// can spend its time — blocking in `decide` before it returns its future, blocking inside a
// poll, answering after it was woken too late — ends in a denial once the timeout has passed,
// whatever the check answers; one within its time is still heard (the control).

const SLOW: Duration = Duration::from_millis(300);
const TIMEOUT: Duration = Duration::from_millis(60);

/// Allows, after blocking its thread for `SLOW` in `decide`, before returning the future.
fn blocks_before_its_future(_: &PreparedToolCall) -> BoxFuture<'static, PolicyDecision> {
    std::thread::sleep(SLOW);
    Box::pin(async { PolicyDecision::allow(Reason::from_static("late but yes")) })
}

/// Allows, after blocking its thread for `SLOW` inside its first poll.
fn blocks_in_its_first_poll(_: &PreparedToolCall) -> BoxFuture<'static, PolicyDecision> {
    Box::pin(async {
        std::thread::sleep(SLOW);
        PolicyDecision::allow(Reason::from_static("late but yes"))
    })
}

/// Allows, after waiting once (woken from another thread) and then blocking for `SLOW`.
fn blocks_in_a_later_poll(_: &PreparedToolCall) -> BoxFuture<'static, PolicyDecision> {
    Box::pin(async {
        WokenLater::new(()).await;
        std::thread::sleep(SLOW);
        PolicyDecision::allow(Reason::from_static("late but yes"))
    })
}

type Check = fn(&PreparedToolCall) -> BoxFuture<'static, PolicyDecision>;

const LATE_CHECKS: [(&str, Check); 3] = [
    ("blocks before its future", blocks_before_its_future),
    ("blocks in its first poll", blocks_in_its_first_poll),
    ("blocks in a later poll", blocks_in_a_later_poll),
];

fn assert_timed_out(result: &ToolResult, how: &str) {
    assert!(result.is_error, "{how}: {result:?}");
    assert!(
        result.content.contains("did not decide within 60 ms"),
        "{how}: {result:?}"
    );
}

#[test]
fn async_check_timeout_covers_every_late_answer_in_handle() {
    for (how, check) in LATE_CHECKS {
        let runs = Arc::default();
        let controller = controller(&runs).with_async_check(check, TIMEOUT);
        assert_timed_out(&completed(controller.handle(read("/etc/hosts"))), how);
        assert_eq!(run_count(&runs), 0, "{how}: nothing ran");
    }
}

#[test]
fn async_check_timeout_covers_every_late_answer_in_handle_async() {
    for (how, check) in LATE_CHECKS {
        let runs = Arc::default();
        let controller = controller(&runs).with_async_check(check, TIMEOUT);
        let result = completed(block_on(controller.handle_async(read("/etc/hosts"))));
        assert_timed_out(&result, how);
        assert_eq!(run_count(&runs), 0, "{how}: nothing ran");
    }
}

/// Asks at once the first time; the re-check on resolve is late in the way `late` is.
fn asks_then(late: Check) -> impl AsyncPolicy + 'static {
    let asked = AtomicUsize::new(0);
    move |call: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        if asked.fetch_add(1, Ordering::SeqCst) == 0 {
            Box::pin(async { PolicyDecision::ask(Reason::from_static("unsure")) })
        } else {
            late(call)
        }
    }
}

#[test]
fn async_check_timeout_covers_every_late_answer_in_the_re_check() {
    for (how, late) in LATE_CHECKS {
        for asynchronously in [false, true] {
            let runs = Arc::default();
            let controller = controller(&runs).with_async_check(asks_then(late), TIMEOUT);
            let Outcome::PendingApproval(request) = controller.handle(read("/etc/hosts")) else {
                panic!("{how}: the check asked");
            };
            let response = ApprovalResponse::approve(request.approval_id);
            let result = if asynchronously {
                block_on(controller.resolve_async(response))
            } else {
                controller.resolve(response)
            }
            .expect("pending");
            assert_timed_out(&result, how);
            assert_eq!(run_count(&runs), 0, "{how}: the approval ran nothing");
        }
    }
}

#[test]
fn async_check_timeout_a_check_within_its_time_is_heard() {
    // The control: the same shapes, slow by less than the timeout, decide the call.
    let quick = |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        std::thread::sleep(Duration::from_millis(5));
        Box::pin(async {
            std::thread::sleep(Duration::from_millis(5));
            PolicyDecision::allow(Reason::from_static("quick yes"))
        })
    };
    let runs = Arc::default();
    let controller = controller(&runs).with_async_check(quick, Duration::from_secs(5));
    assert!(!completed(controller.handle(read("/etc/hosts"))).is_error);
    assert!(!completed(block_on(controller.handle_async(read("/etc/hosts")))).is_error);
    assert_eq!(run_count(&runs), 2);
}

// ---- against layers, rules and timeouts ------------------------------------------------------

fn allowing() -> impl AsyncPolicy {
    |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(async { PolicyDecision::allow(Reason::from_static("classifier ok")) })
    }
}

#[test]
fn async_allow_never_reaches_a_rule_ask_or_deny() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["a", "b"]);
    let policy = rule_policy(
        r#"{"rules": [{"id": "ask-a", "tool": "a", "action": "ask", "reason": "a asks"},
                      {"id": "deny-b", "tool": "b", "action": "deny", "reason": "b denied",
                       "when": {"path_within": {"pointer": "/path", "roots": ["/secret"]}}}]}"#,
        &reg,
    );
    let controller = ToolController::try_new(reg, policy)
        .unwrap()
        .with_async_check(allowing(), Duration::from_secs(1));
    assert!(matches!(
        controller.handle(ToolCall::new("c1", "a", json!({}))),
        Outcome::PendingApproval(_)
    ));
    for path in ["/secret/x", "/secret/../secret/x", "$HOME", "~/x"] {
        assert!(
            !ran(&controller.handle(ToolCall::new("c2", "b", json!({"path": path})))),
            "{path}"
        );
    }
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn async_check_that_finishes_after_the_timeout_fails_closed() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["a"]);
    let policy = rule_policy(r#"{"rules": []}"#, &reg);
    // The future blocks inside its poll past the deadline, then allows.
    let slow = |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(async {
            std::thread::sleep(Duration::from_millis(300));
            PolicyDecision::allow(Reason::from_static("late allow"))
        })
    };
    let controller = ToolController::try_new(reg, policy)
        .unwrap()
        .with_async_check(slow, Duration::from_millis(20));
    let outcome = controller.handle(ToolCall::new("c", "a", json!({})));
    assert!(
        !ran(&outcome),
        "an allow that came after the timeout was used"
    );
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn async_check_never_ready_times_out_closed() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["a"]);
    let policy = rule_policy(r#"{"rules": []}"#, &reg);
    let never = |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(std::future::pending())
    };
    let controller = ToolController::try_new(reg, policy)
        .unwrap()
        .with_async_check(never, Duration::from_millis(30));
    assert!(!ran(&controller.handle(ToolCall::new("c", "a", json!({})))));
}

#[test]
fn async_check_fallback_marked_allow_is_not_trusted_as_opinion_bypass() {
    // A layer whose only opinion is a deny must still deny when an async check allows.
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["a"]);
    let layers = Layers::new()
        .layer("open", ToolPolicy::default())
        .unwrap()
        .layer(
            "deny",
            rule_policy(
                r#"{"rules": [{"id": "d", "tool": "a", "action": "deny", "reason": "no"}]}"#,
                &reg,
            ),
        )
        .unwrap();
    let controller = ToolController::try_new(reg, layers)
        .unwrap()
        .with_async_check(allowing(), Duration::from_secs(1));
    assert!(!ran(&controller.handle(ToolCall::new("c", "a", json!({})))));
}
