#![cfg(feature = "approval-page")]
//! The approval page's JSON API, driven straight through its router: sign-in, the whole
//! arguments, answers that run once, and every refusal (no session, no CSRF token, another
//! origin, a stale page, an approver the rule does not name).

mod cookies;
mod credential_lifetime;
mod sign_in_links;
mod who_sees_what;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::common::*;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use toolgate::approval_page::ApprovalPage;
use toolgate::*;
use tower::ServiceExt as _;

const POLICY: &str = r#"{"rules": [
  {"id": "deploy-asks", "tool": "deploy", "action": "ask", "reason": "a deploy <b>needs</b> security",
   "approvers": {"groups": ["security"], "four_eyes": true}}
]}"#;

struct Fixture {
    router: axum::Router,
    controller: Arc<ToolController>,
    runs: Arc<AtomicUsize>,
}

fn fixture() -> Fixture {
    fixture_with(POLICY)
}

fn fixture_with(policy: &str) -> Fixture {
    let runs = Arc::default();
    let registry = registry([counted(
        "deploy",
        json!({"type": "object", "properties": {"env": {"type": "string"}}}),
        &runs,
    )]);
    let policy = RulePolicy::from_json(policy, &registry).unwrap();
    let controller = Arc::new(ToolController::new(registry, policy));
    let page = ApprovalPage::new(
        Arc::clone(&controller),
        |credential: &str| match credential {
            "alice-key" => Some(Principal::new("alice", ["security"])),
            "bob-key" => Some(Principal::new("bob", ["security"])),
            "eve-key" => Some(Principal::new("eve", ["dev"])),
            _ => None,
        },
    )
    .with_allowed_hosts(["127.0.0.1:9"]);
    Fixture {
        router: page.router(),
        controller,
        runs,
    }
}

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Value,
}

async fn send(router: &axum::Router, request: Request<Body>) -> Reply {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

fn get(path: &str, cookie: Option<&str>) -> Request<Body> {
    let mut request = Request::get(path).header(header::HOST, "127.0.0.1:9");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    request.body(Body::empty()).unwrap()
}

/// A read as the page makes it: the session's cookie and its CSRF token.
fn get_as(path: &str, cookie: &str, csrf: &str) -> Request<Body> {
    Request::get(path)
        .header(header::HOST, "127.0.0.1:9")
        .header(header::COOKIE, cookie)
        .header("x-toolgate-csrf", csrf)
        .body(Body::empty())
        .unwrap()
}

fn post(path: &str, cookie: Option<&str>, csrf: Option<&str>, body: Value) -> Request<Body> {
    let mut request = Request::post(path)
        .header(header::HOST, "127.0.0.1:9")
        .header(header::ORIGIN, "http://127.0.0.1:9")
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    if let Some(csrf) = csrf {
        request = request.header("x-toolgate-csrf", csrf);
    }
    request.body(Body::from(body.to_string())).unwrap()
}

/// Signs in; the cookie to send and the CSRF token.
async fn sign_in(router: &axum::Router, credential: &str) -> (String, String) {
    let reply = send(
        router,
        post(
            "/approvals/api/login",
            None,
            None,
            json!({"credential": credential}),
        ),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let cookie = reply.headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/approvals"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    let pair = cookie.split(';').next().unwrap().to_owned();
    (pair, reply.body["csrf"].as_str().unwrap().to_owned())
}

fn hold(controller: &ToolController, env: &str) -> ApprovalRequest {
    let call = ToolCall::new("c1", "deploy", json!({ "env": env }))
        .with_principal(Principal::new("alice", ["security"]));
    match controller.handle(call) {
        Outcome::PendingApproval(request) => request,
        Outcome::Completed(result) => panic!("{result:?}"),
    }
}

fn block<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Runtime::new().unwrap().block_on(future)
}

#[test]
fn the_page_is_static_and_served_under_a_strict_policy() {
    block(async {
        let fixture = fixture();
        let page = fixture
            .router
            .clone()
            .oneshot(get("/approvals", None))
            .await
            .unwrap();
        let csp = page.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.starts_with("default-src 'none'") && csp.contains("script-src 'self'"));
        assert!(csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe"));
        assert_eq!(page.headers()[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(page.headers()[header::CACHE_CONTROL], "no-store");
        let html = page.into_body().collect().await.unwrap().to_bytes();
        let html = String::from_utf8(html.to_vec()).unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("style="),
            "no inline script or style"
        );
        // Another Host (DNS rebinding): refused.
        let mut rebound = get("/approvals", None);
        rebound
            .headers_mut()
            .insert(header::HOST, "evil.example:9".parse().unwrap());
        assert_eq!(
            send(&fixture.router, rebound).await.status,
            StatusCode::FORBIDDEN
        );
    });
}

#[test]
fn a_signed_in_approver_sees_the_whole_call_and_approving_runs_it_once() {
    block(async {
        let fixture = fixture();
        let long = "x".repeat(10_000) + "<script>alert(1)</script>";
        let request = hold(&fixture.controller, &long);
        assert_eq!(
            send(
                &fixture.router,
                post(
                    "/approvals/api/login",
                    None,
                    None,
                    json!({"credential": "nope"})
                )
            )
            .await
            .status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            send(&fixture.router, get("/approvals/api/pending", None))
                .await
                .status,
            StatusCode::UNAUTHORIZED
        );

        let (bob, bob_csrf) = sign_in(&fixture.router, "bob-key").await;
        let listed = send(
            &fixture.router,
            get_as("/approvals/api/pending", &bob, &bob_csrf),
        )
        .await;
        let shown = &listed.body["pending"][0];
        assert_eq!(shown["id"], request.approval_id.to_string());
        assert_eq!(shown["principal"], "alice");
        assert_eq!(
            shown["reason"], "a deploy <b>needs</b> security",
            "as data, unescaped JSON"
        );
        assert_eq!(shown["digest"], request.digest);
        assert_eq!(shown["may_answer"], true);
        let arguments: Value = serde_json::from_str(shown["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments["env"], long, "the whole value, not cut");

        let answer = json!({"id": request.approval_id.to_string(), "digest": request.digest, "verdict": "approve", "note": "looked at it"});
        // No CSRF token, a wrong one, another origin: refused, nothing ran, still waiting.
        for refused in [
            post("/approvals/api/answer", Some(&bob), None, answer.clone()),
            post(
                "/approvals/api/answer",
                Some(&bob),
                Some(&"0".repeat(64)),
                answer.clone(),
            ),
            {
                let mut cross = post(
                    "/approvals/api/answer",
                    Some(&bob),
                    Some(&bob_csrf),
                    answer.clone(),
                );
                cross
                    .headers_mut()
                    .insert(header::ORIGIN, "http://evil.example".parse().unwrap());
                cross
            },
        ] {
            assert_eq!(
                send(&fixture.router, refused).await.status,
                StatusCode::FORBIDDEN
            );
        }
        // A state change by GET does not exist.
        let by_get = send(&fixture.router, get("/approvals/api/answer", Some(&bob))).await;
        assert_eq!(by_get.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(
            (run_count(&fixture.runs), fixture.controller.pending().len()),
            (0, 1)
        );

        let approved = send(
            &fixture.router,
            post(
                "/approvals/api/answer",
                Some(&bob),
                Some(&bob_csrf),
                answer.clone(),
            ),
        )
        .await;
        assert_eq!(approved.status, StatusCode::OK, "{:?}", approved.body);
        assert_eq!(
            (
                approved.body["by"].as_str(),
                approved.body["is_error"].as_bool()
            ),
            (Some("bob"), Some(false))
        );
        assert_eq!(run_count(&fixture.runs), 1);
        // The same answer again (a second tab, a double click): the call is no longer waiting.
        let again = send(
            &fixture.router,
            post("/approvals/api/answer", Some(&bob), Some(&bob_csrf), answer),
        )
        .await;
        assert_eq!(again.status, StatusCode::CONFLICT);
        assert_eq!(run_count(&fixture.runs), 1);
        let answered = send(
            &fixture.router,
            get_as("/approvals/api/answered", &bob, &bob_csrf),
        )
        .await;
        assert_eq!(answered.body["answered"][0]["by"], "bob");
    });
}

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

#[cfg(feature = "postgres")]
use crate::postgres_support;

/// The page's audit view of a PostgreSQL chain: the last events, oldest first, and whether the
/// chain verifies — which an edited row breaks.
#[cfg(feature = "postgres")]
#[test]
fn a_postgres_chain_is_shown_with_its_verification() {
    use toolgate::approval_page::AuditView as _;
    use toolgate::audit::AuditKind;
    let Some(url) = postgres_support::server_url() else {
        return;
    };
    let db = postgres_support::Db::new(&url, "page_audit");
    let sink = db.sink("page");
    let registry = registry([counted(
        "deploy",
        json!({"type": "object"}),
        &Arc::default(),
    )]);
    let writer = Arc::new(db.sink("writer"));
    let controller = ToolController::new(registry, policy(&["deploy"], &[]))
        .with_audit_sink(Arc::clone(&writer));
    for index in 0..5 {
        let outcome = controller.handle(ToolCall::new(format!("c{index}"), "deploy", json!({})));
        assert!(matches!(outcome, Outcome::Completed(result) if !result.is_error));
    }
    // The last outcome is recorded deferred: committed within 50 ms, or now.
    toolgate::audit::AuditSink::sync(&*writer).unwrap();
    let snapshot = sink.snapshot(4).unwrap();
    assert!(snapshot.verified, "{}", snapshot.chain);
    assert_eq!(snapshot.events.len(), 4);
    assert_eq!(
        snapshot.events.last().unwrap().kind,
        AuditKind::ExecutionOutcome
    );
    assert_eq!(snapshot.events.last().unwrap().call_id, "c4");
    db.admin()
        .batch_execute("UPDATE toolgate_audit SET event = replace(event, 'c1', 'c9') WHERE seq = 4")
        .unwrap();
    let broken = sink.snapshot(4).unwrap();
    assert!(
        !broken.verified && !broken.chain.is_empty(),
        "{}",
        broken.chain
    );
}

/// What the page adds for a gateway: the upstream a tool comes from, the arguments in the
/// canonical form the digest covers, `Secure` cookies when asked for, and an audit chain that no
/// longer verifies shown as such.
#[test]
fn the_page_names_the_upstream_shows_canonical_arguments_and_a_broken_chain() {
    use toolgate::approval_page::{AuditView as _, JsonlAuditView};
    use toolgate::audit::JsonlAuditSink;
    block(async {
        let dir = std::env::temp_dir().join(format!("toolgate-page-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("audit.jsonl");
        let registry = registry([counted(
            "files__write",
            json!({"type": "object"}),
            &Arc::default(),
        )]);
        let policy = RulePolicy::from_json(
            r#"{"rules": [{"id": "w", "tool": "files__write", "action": "ask", "reason": "writes"}]}"#,
            &registry,
        )
        .unwrap();
        let controller = Arc::new(
            ToolController::new(registry, policy)
                .with_audit_sink(JsonlAuditSink::open(&log).unwrap()),
        );
        let router = ApprovalPage::new(Arc::clone(&controller), |credential: &str| {
            (credential == "sam-key").then(|| Principal::new("sam", ["ops"]))
        })
        .with_upstream_of(|tool: &str| tool.split_once("__").map(|(up, _)| up.to_owned()))
        .with_secure_cookies()
        .with_audit(JsonlAuditView::new(&log))
        .router();
        let call = ToolCall::new("c1", "files__write", json!({"z": 1.0, "a": [2.50, 1e2]}));
        let Outcome::PendingApproval(request) = controller.handle(call) else {
            panic!("held")
        };

        let login = send(
            &router,
            post(
                "/approvals/api/login",
                None,
                None,
                json!({"credential": "sam-key"}),
            ),
        )
        .await;
        let cookie = login.headers[header::SET_COOKIE].to_str().unwrap();
        // Over HTTPS the browser keeps it only as sent: Secure, for the whole host, no Domain.
        assert!(
            cookie.starts_with("__Host-toolgate_approvals=")
                && cookie.contains("; Secure")
                && cookie.contains("; Path=/;")
                && !cookie.contains("Domain"),
            "{cookie}"
        );
        let cookie = cookie.split(';').next().unwrap().to_owned();
        let csrf = login.body["csrf"].as_str().unwrap().to_owned();
        let listed = send(&router, get_as("/approvals/api/pending", &cookie, &csrf)).await;
        let shown = &listed.body["pending"][0];
        assert_eq!(shown["id"], request.approval_id.to_string());
        assert_eq!(shown["upstream"], "files");
        // Keys in order, each number in its one spelling: what the digest covers, laid out.
        assert_eq!(
            shown["arguments"],
            "{\n  \"a\": [\n    2.5,\n    100\n  ],\n  \"z\": 1\n}"
        );

        let view = JsonlAuditView::new(&log);
        let snapshot = view.snapshot(10).unwrap();
        assert!(snapshot.verified);
        assert!(!snapshot.events.is_empty());
        // Zeros reserved past the lines (`JsonlAuditSink::with_reserve`): the same entries shown.
        let lines = std::fs::read(&log).unwrap();
        let mut reserved = lines.clone();
        reserved.extend(vec![0; 1 << 20]);
        std::fs::write(&log, &reserved).unwrap();
        assert_eq!(view.snapshot(10).unwrap(), snapshot);
        std::fs::write(&log, &lines).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::write(&log, text.replacen("\"c1\"", "\"c2\"", 1)).unwrap();
        let broken = view.snapshot(10).unwrap();
        assert!(!broken.verified, "an edited entry breaks the chain");
        assert!(!broken.chain.is_empty());
        let audit = send(&router, get_as("/approvals/api/audit", &cookie, &csrf)).await;
        assert_eq!(
            audit.body["snapshot"]["verified"], false,
            "{:?}",
            audit.body
        );
        drop((router, controller));
        let _ = std::fs::remove_dir_all(&dir);
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
