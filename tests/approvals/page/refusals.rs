//! Answers refused, the call left waiting: from the asker, an outsider or with a changed digest,
//! malformed, or to a request that expired first.

use super::*;

#[test]
fn the_asker_an_outsider_and_a_changed_digest_are_refused_and_the_call_keeps_waiting() {
    block(async {
        let fixture = fixture();
        let request = hold(&fixture.controller, "prod");
        let answer = |digest: &str| json!({"id": request.approval_id.to_string(), "digest": digest, "verdict": "approve"});
        let (alice, alice_csrf) = sign_in(&fixture.router, "alice-key").await;
        let listed = send(
            &fixture.router,
            get_as("/approvals/api/pending", &alice, &alice_csrf),
        )
        .await;
        assert_eq!(listed.body["pending"][0]["may_answer"], false);
        // Digests of arguments Alice may not read would let her test guesses offline.
        assert!(listed.body["pending"][0]["digest"].is_null());
        assert!(listed.body["pending"][0]["definition_digest"].is_null());
        assert!(
            listed.body["pending"][0]["why_not"]
                .as_str()
                .unwrap()
                .contains("four eyes")
        );
        let own = send(
            &fixture.router,
            post(
                "/approvals/api/answer",
                Some(&alice),
                Some(&alice_csrf),
                answer(&request.digest),
            ),
        )
        .await;
        assert_eq!(own.status, StatusCode::FORBIDDEN);
        assert!(
            own.body["error"].as_str().unwrap().contains("four eyes"),
            "{:?}",
            own.body
        );

        let (eve, eve_csrf) = sign_in(&fixture.router, "eve-key").await;
        let outsider = send(
            &fixture.router,
            post(
                "/approvals/api/answer",
                Some(&eve),
                Some(&eve_csrf),
                answer(&request.digest),
            ),
        )
        .await;
        assert_eq!(outsider.status, StatusCode::FORBIDDEN);
        // Who answers is checked before the digest: a wrong guess is refused the same way, so
        // the answer says nothing of the arguments.
        let wrong_guess = "sha256:".to_owned() + &"1".repeat(64);
        let guessed = send(
            &fixture.router,
            post(
                "/approvals/api/answer",
                Some(&eve),
                Some(&eve_csrf),
                answer(&wrong_guess),
            ),
        )
        .await;
        assert_eq!(guessed.status, StatusCode::FORBIDDEN);
        assert_eq!(guessed.body, outsider.body);
        // Eve's token does not work with Alice's session, nor the reverse.
        let crossed = send(
            &fixture.router,
            post(
                "/approvals/api/answer",
                Some(&alice),
                Some(&eve_csrf),
                answer(&request.digest),
            ),
        )
        .await;
        assert_eq!(crossed.status, StatusCode::FORBIDDEN);

        let (bob, bob_csrf) = sign_in(&fixture.router, "bob-key").await;
        let wrong = "sha256:".to_owned() + &"0".repeat(64);
        let stale = send(
            &fixture.router,
            post(
                "/approvals/api/answer",
                Some(&bob),
                Some(&bob_csrf),
                answer(&wrong),
            ),
        )
        .await;
        assert_eq!(stale.status, StatusCode::CONFLICT);
        assert_eq!(
            (run_count(&fixture.runs), fixture.controller.pending().len()),
            (0, 1)
        );

        // Signed out: the session's cookie opens nothing any more.
        let out = send(
            &fixture.router,
            post(
                "/approvals/api/logout",
                Some(&bob),
                Some(&bob_csrf),
                json!({}),
            ),
        )
        .await;
        assert_eq!(out.status, StatusCode::OK);
        assert_eq!(
            send(
                &fixture.router,
                get_as("/approvals/api/pending", &bob, &bob_csrf)
            )
            .await
            .status,
            StatusCode::UNAUTHORIZED
        );

        // Rejecting is an answer too: by a rightful approver, nothing runs and the call is gone.
        let (bob, bob_csrf) = sign_in(&fixture.router, "bob-key").await;
        let reject = json!({"id": request.approval_id.to_string(), "digest": request.digest, "verdict": "reject"});
        let rejected = send(
            &fixture.router,
            post("/approvals/api/answer", Some(&bob), Some(&bob_csrf), reject),
        )
        .await;
        assert_eq!(rejected.status, StatusCode::OK);
        assert_eq!(
            (run_count(&fixture.runs), fixture.controller.pending().len()),
            (0, 0)
        );
    });
}

#[test]
fn malformed_answers_are_refused() {
    block(async {
        let fixture = fixture();
        let (bob, csrf) = sign_in(&fixture.router, "bob-key").await;
        for body in [
            json!({"id": "not-an-id", "digest": "d", "verdict": "approve"}),
            json!({"id": "0123456789abcdef0123456789abcdef", "digest": "d", "verdict": "maybe"}),
            json!({"id": "0123456789abcdef0123456789abcdef", "digest": "d", "verdict": "approve", "extra": 1}),
            json!({"id": "0123456789abcdef0123456789abcdef", "digest": "d", "verdict": "approve", "note": "n".repeat(2_001)}),
        ] {
            let reply = send(
                &fixture.router,
                post("/approvals/api/answer", Some(&bob), Some(&csrf), body),
            )
            .await;
            assert!(reply.status.is_client_error(), "{:?}", reply.status);
        }
        let unknown =
            json!({"id": "0123456789abcdef0123456789abcdef", "digest": "d", "verdict": "approve"});
        let reply = send(
            &fixture.router,
            post("/approvals/api/answer", Some(&bob), Some(&csrf), unknown),
        )
        .await;
        assert_eq!(reply.status, StatusCode::CONFLICT);
    });
}

/// An answer to a request that expired first changed nothing: the page says so (409) and does not
/// list it among the person's answers — whatever the digest or who sent it.
#[test]
fn an_answer_to_an_expired_request_is_refused_as_expired() {
    block(async {
        let runs = Arc::default();
        let registry = registry([counted(
            "deploy",
            json!({"type": "object", "properties": {"env": {"type": "string"}}}),
            &runs,
        )]);
        let policy = RulePolicy::from_json(POLICY, &registry).unwrap();
        let clock = Arc::new(toolgate::clock::ManualClock::new(1_000));
        let controller = Arc::new(
            ToolController::new(registry, policy)
                .with_clock(Arc::clone(&clock))
                .with_approval_limits(
                    toolgate::approvals::ApprovalLimits::default()
                        .with_time_to_live(Some(std::time::Duration::from_secs(60))),
                ),
        );
        let page = ApprovalPage::new(Arc::clone(&controller), |credential: &str| {
            (credential == "bob-key").then(|| Principal::new("bob", ["security"]))
        })
        .with_allowed_hosts(["127.0.0.1:9"]);
        let router = page.router();
        let request = hold(&controller, "prod");
        clock.advance(std::time::Duration::from_secs(61));
        let (bob, bob_csrf) = sign_in(&router, "bob-key").await;
        let answer = json!({"id": request.approval_id.to_string(), "digest": request.digest, "verdict": "approve"});
        let reply = send(
            &router,
            post("/approvals/api/answer", Some(&bob), Some(&bob_csrf), answer),
        )
        .await;
        assert_eq!(reply.status, StatusCode::CONFLICT, "{:?}", reply.body);
        assert!(
            reply.body["error"].as_str().unwrap().contains("expired"),
            "{:?}",
            reply.body
        );
        let answered = send(&router, get_as("/approvals/api/answered", &bob, &bob_csrf)).await;
        assert_eq!(answered.body["answered"], json!([]));
        assert_eq!(run_count(&runs), 0);
    });
}
