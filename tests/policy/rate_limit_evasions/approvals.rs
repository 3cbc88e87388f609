//! Approvals: edited, rejected and revoked calls, and an ask a person waived, against the caps.

use super::*;

#[test]
fn approval_edited_arguments_are_counted_under_the_edited_key() {
    let bench = bench_with(ONE_PER_RECIPIENT_CI, ASK_MAIL);
    let first = held(send(&bench, "send_email", json!({"to": "alice"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve_edited(
            first.approval_id,
            json!({"to": "bob"}),
        ))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    // bob's slot is taken, alice's is not.
    let to_bob = held(send(&bench, "send_email", json!({"to": "BOB"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve(to_bob.approval_id))
        .unwrap();
    assert!(result.is_error && result.content.contains("per-recipient"));
    let to_alice = held(send(&bench, "send_email", json!({"to": "alice"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve(to_alice.approval_id))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    // An edit onto a full key is denied: a person's edit does not waive a deny cap.
    let again = held(send(&bench, "send_email", json!({"to": "carol"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve_edited(
            again.approval_id,
            json!({"to": "Alice"}),
        ))
        .unwrap();
    assert!(result.is_error, "{result:?}");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
}

#[test]
fn approval_rejected_and_revoked_calls_take_no_slot() {
    let bench = bench_with(ONE_PER_RECIPIENT_CI, ASK_MAIL);
    let rejected = held(send(&bench, "send_email", json!({"to": "bob"})));
    let revoked = held(send(&bench, "send_email", json!({"to": "bob"})));
    let approved = held(send(&bench, "send_email", json!({"to": "bob"})));
    let result = bench
        .controller
        .resolve(ApprovalResponse::reject(rejected.approval_id))
        .unwrap();
    assert!(result.is_error);
    bench.controller.revoke(revoked.approval_id).unwrap();
    let result = bench
        .controller
        .resolve(ApprovalResponse::approve(approved.approval_id))
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 1);
}

#[test]
fn approval_over_ask_waived_by_a_person_still_meets_a_deny_cap() {
    let limits = r#"{"id": "soft", "tool": "deploy__web", "max": 1, "per": "hour", "over": "ask",
            "reason": "more deploys need a person"},
        {"id": "hard", "tool": "deploy__web", "max": 2, "per": "hour", "over": "deny",
            "reason": "never more than two an hour"}"#;
    let bench = bench(limits);
    assert!(ran(&send(&bench, "deploy__web", json!({}))));
    let second = held(send(&bench, "deploy__web", json!({})));
    let third = held(send(&bench, "deploy__web", json!({})));
    assert!(
        !bench
            .controller
            .resolve(ApprovalResponse::approve(second.approval_id))
            .unwrap()
            .is_error
    );
    let late = bench
        .controller
        .resolve(ApprovalResponse::approve(third.approval_id))
        .unwrap();
    assert!(late.is_error && late.content.contains("hard"), "{late:?}");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
}
