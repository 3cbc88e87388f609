//! Who sees what on the page: a call's asker (a model's own client key signed in here) cannot
//! answer it unless a rule says so; whoever may not answer a call sees that it waits and why, not
//! its arguments; a result is shown only to whoever answered; sign-ins pause after 10 failures.

use super::*;

const NO_APPROVERS: &str = r#"{"rules": [
  {"id": "deploy-asks", "tool": "deploy", "action": "ask", "reason": "a deploy needs a yes"}
]}"#;

fn answer_as(cookie: &str, csrf: &str, request: &ApprovalRequest) -> Request<Body> {
    post(
        "/approvals/api/answer",
        Some(cookie),
        Some(csrf),
        json!({"id": request.approval_id.to_string(), "digest": request.digest, "verdict": "approve"}),
    )
}

#[test]
fn the_asker_cannot_answer_its_own_call_on_the_page_unless_a_rule_allows_it() {
    let fixture = fixture_with(NO_APPROVERS);
    let request = hold(&fixture.controller, "prod"); // asked by alice
    block(async {
        let (alice, alice_csrf) = sign_in(&fixture.router, "alice-key").await;
        let listed = send(
            &fixture.router,
            get_as("/approvals/api/pending", &alice, &alice_csrf),
        )
        .await;
        let shown = &listed.body["pending"][0];
        assert_eq!(shown["may_answer"], false);
        assert!(
            shown["why_not"]
                .as_str()
                .unwrap()
                .contains("asked for this call")
        );
        assert_eq!(
            shown["arguments"],
            Value::Null,
            "not shown to whoever may not answer"
        );
        let own = send(&fixture.router, answer_as(&alice, &alice_csrf, &request)).await;
        assert_eq!(own.status, StatusCode::FORBIDDEN, "{:?}", own.body);
        assert_eq!(fixture.controller.pending().len(), 1, "still waiting");
        assert_eq!(run_count(&fixture.runs), 0);

        // Eve (no rule names approvers) may answer, and only she sees the result.
        let (eve, eve_csrf) = sign_in(&fixture.router, "eve-key").await;
        let listed = send(
            &fixture.router,
            get_as("/approvals/api/pending", &eve, &eve_csrf),
        )
        .await;
        assert_eq!(listed.body["pending"][0]["may_answer"], true);
        assert!(listed.body["pending"][0]["arguments"].is_string());
        let ran = send(&fixture.router, answer_as(&eve, &eve_csrf, &request)).await;
        assert_eq!(ran.status, StatusCode::OK, "{:?}", ran.body);
        assert_eq!(run_count(&fixture.runs), 1);
        let hers = send(
            &fixture.router,
            get_as("/approvals/api/answered", &eve, &eve_csrf),
        )
        .await;
        assert_eq!(hers.body["answered"].as_array().unwrap().len(), 1);
        // Two calls of one tool told apart: the approval id, who asked and when.
        let entry = &hers.body["answered"][0];
        assert_eq!(entry["id"], request.approval_id.to_string());
        assert_eq!(entry["asked_by"], "alice");
        assert_eq!(entry["requested_at_ms"], request.requested_at_ms);
        let theirs = send(
            &fixture.router,
            get_as("/approvals/api/answered", &alice, &alice_csrf),
        )
        .await;
        assert_eq!(
            theirs.body["answered"],
            json!([]),
            "a result only to whoever answered"
        );
    });

    // A rule that lets the asker answer: she may.
    let fixture = fixture_with(
        r#"{"rules": [{"id": "deploy-asks", "tool": "deploy", "action": "ask", "reason": "confirm",
            "approvers": {"allow_self": true}}]}"#,
    );
    let request = hold(&fixture.controller, "prod");
    block(async {
        let (alice, alice_csrf) = sign_in(&fixture.router, "alice-key").await;
        let ran = send(&fixture.router, answer_as(&alice, &alice_csrf, &request)).await;
        assert_eq!(ran.status, StatusCode::OK, "{:?}", ran.body);
        assert_eq!(run_count(&fixture.runs), 1);
    });
}

#[test]
fn sign_ins_pause_after_ten_failures_in_a_minute() {
    let fixture = fixture();
    block(async {
        let login = |credential: &str| {
            post(
                "/approvals/api/login",
                None,
                None,
                json!({"credential": credential}),
            )
        };
        for attempt in 0..10 {
            let reply = send(&fixture.router, login(&format!("wrong-{attempt}"))).await;
            assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
        }
        // Paused: even a good key is not tried now.
        for credential in ["wrong-10", "bob-key"] {
            let reply = send(&fixture.router, login(credential)).await;
            assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS, "{credential}");
            assert!(
                reply.body["error"].as_str().unwrap().contains("paused for"),
                "{:?}",
                reply.body
            );
        }
    });
}

/// A reload naming other approvers: whoever it no longer names sees the call waiting and why,
/// not its arguments, and an answer from them is refused with the call still waiting — the one
/// it names answers it (an independent attack: the former approver's answer ended the call).
#[test]
fn an_approver_a_reload_no_longer_names_neither_reads_nor_ends_the_call() {
    let named = |ids: &str| {
        format!(
            r#"{{"rules": [{{"id": "deploy-asks", "tool": "deploy", "action": "ask",
                "reason": "a deploy needs a yes", "approvers": {{"ids": {ids}}}}}]}}"#
        )
    };
    let fixture = fixture_with(&named(r#"["eve", "bob"]"#));
    let request = hold(&fixture.controller, "prod");
    let registry = registry([counted(
        "deploy",
        json!({"type": "object", "properties": {"env": {"type": "string"}}}),
        &fixture.runs,
    )]);
    fixture
        .controller
        .replace_policy(RulePolicy::from_json(&named(r#"["bob"]"#), &registry).unwrap())
        .unwrap();
    block(async {
        let (eve, eve_csrf) = sign_in(&fixture.router, "eve-key").await;
        let listed = send(
            &fixture.router,
            get_as("/approvals/api/pending", &eve, &eve_csrf),
        )
        .await;
        let shown = &listed.body["pending"][0];
        assert_eq!(shown["may_answer"], false, "{shown}");
        assert_eq!(shown["arguments"], Value::Null);
        let refused = send(&fixture.router, answer_as(&eve, &eve_csrf, &request)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{:?}", refused.body);
        assert_eq!(fixture.controller.pending().len(), 1, "still waiting");
        let (bob, bob_csrf) = sign_in(&fixture.router, "bob-key").await;
        let listed = send(
            &fixture.router,
            get_as("/approvals/api/pending", &bob, &bob_csrf),
        )
        .await;
        assert_eq!(listed.body["pending"][0]["may_answer"], true);
        let ran = send(&fixture.router, answer_as(&bob, &bob_csrf, &request)).await;
        assert_eq!(ran.status, StatusCode::OK, "{:?}", ran.body);
    });
    assert_eq!(run_count(&fixture.runs), 1);
}
