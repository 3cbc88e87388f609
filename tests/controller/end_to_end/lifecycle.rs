//! An approval's lifecycle end to end: expiry, revocation, the cap on pending requests, and what
//! the pending list shows.

use super::*;

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
