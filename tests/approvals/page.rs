#![cfg(feature = "approval-page")]
//! The approval page's JSON API, driven straight through its router: sign-in, the whole
//! arguments, answers that run once, and every refusal (no session, no CSRF token, another
//! origin, a stale page, an approver the rule does not name).

mod audit_view;
mod cookies;
mod credential_lifetime;
mod refusals;
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
