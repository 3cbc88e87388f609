//! Cookie tossing: a page on another port of the same host sets the page's cookie name with a
//! longer path, so the browser sends two. The page refuses such a request, ends both sessions and
//! clears the cookie under every path it could have been given; a read or an answer whose CSRF
//! token is not the session's (a page whose cookie was replaced under it) is refused too.

use super::*;

/// Two cookies of the page's name, spelled one way: Bob's and Eve's into `Cookie` headers.
type Spelling = dyn Fn(&str, &str) -> Vec<String>;

fn with_cookies(path: &str, cookies: &[&str], csrf: &str) -> Request<Body> {
    let mut request = Request::get(path)
        .header(header::HOST, "127.0.0.1:9")
        .header("x-toolgate-csrf", csrf);
    for cookie in cookies {
        request = request.header(header::COOKIE, *cookie);
    }
    request.body(Body::empty()).unwrap()
}

#[test]
fn two_session_cookies_end_both_sessions_and_clear_every_path() {
    let fixture = fixture();
    block(async {
        let (bob, bob_csrf) = sign_in(&fixture.router, "bob-key").await;
        // The spellings of two: one header in both orders, two headers, spaces around `=`.
        let spellings: Vec<Box<Spelling>> = vec![
            Box::new(|bob, eve| vec![format!("{eve}; {bob}")]),
            Box::new(|bob, eve| vec![format!("{bob}; {eve}")]),
            Box::new(|bob, eve| vec![bob.to_owned(), eve.to_owned()]),
            Box::new(|bob, eve| {
                vec![format!(
                    "{bob}; toolgate_approvals = {}",
                    eve.split_once('=').unwrap().1
                )]
            }),
        ];
        for (index, spelled) in spellings.iter().enumerate() {
            let (bob, bob_csrf) = if index == 0 {
                (bob.clone(), bob_csrf.clone())
            } else {
                sign_in(&fixture.router, "bob-key").await
            };
            let (eve, _) = sign_in(&fixture.router, "eve-key").await;
            let cookies = spelled(&bob, &eve);
            let cookies: Vec<&str> = cookies.iter().map(String::as_str).collect();
            for path in ["/approvals/api/pending", "/approvals/api/session"] {
                let reply = send(&fixture.router, with_cookies(path, &cookies, &bob_csrf)).await;
                assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{index} {path}");
                assert!(
                    reply.body["error"]
                        .as_str()
                        .unwrap()
                        .contains("two session cookies"),
                    "{:?}",
                    reply.body
                );
                let cleared: Vec<&str> = reply
                    .headers
                    .get_all(header::SET_COOKIE)
                    .iter()
                    .map(|value| value.to_str().unwrap())
                    .collect();
                // Every path a tossed cookie could be sent to these routes under.
                for under in [
                    "Path=/;",
                    "Path=/approvals;",
                    "Path=/approvals/api;",
                    "Path=/approvals/api/pending;",
                ] {
                    assert!(
                        cleared.iter().any(|c| c.starts_with("toolgate_approvals=;")
                            && c.contains(under)
                            && c.contains("Max-Age=0")),
                        "{under} not cleared: {cleared:?}"
                    );
                }
                assert_eq!(cleared.len(), 12);
            }
            // Both sessions ended: neither cookie alone works any more.
            for alone in [bob.as_str(), eve.as_str()] {
                let reply = send(&fixture.router, get("/approvals/api/session", Some(alone))).await;
                assert_eq!(
                    reply.status,
                    StatusCode::UNAUTHORIZED,
                    "{alone} still signed in"
                );
            }
        }
        // Signing in again works.
        let (bob, bob_csrf) = sign_in(&fixture.router, "bob-key").await;
        let reply = send(
            &fixture.router,
            get_as("/approvals/api/pending", &bob, &bob_csrf),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK);
    });
}

#[test]
fn a_page_whose_cookie_was_replaced_reads_and_answers_nothing() {
    let fixture = fixture();
    let request = hold(&fixture.controller, "prod");
    block(async {
        let (_bob, bob_csrf) = sign_in(&fixture.router, "bob-key").await;
        // Eve's cookie replaced Bob's (same name and path); Bob's page still holds his token.
        let (eve, _) = sign_in(&fixture.router, "eve-key").await;
        for path in [
            "/approvals/api/pending",
            "/approvals/api/answered",
            "/approvals/api/audit",
        ] {
            let reply = send(&fixture.router, get_as(path, &eve, &bob_csrf)).await;
            assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path}");
            // No token at all: the same.
            let reply = send(&fixture.router, get(path, Some(&eve))).await;
            assert_eq!(
                reply.status,
                StatusCode::FORBIDDEN,
                "{path} without a token"
            );
        }
        let answer = send(
            &fixture.router,
            post(
                "/approvals/api/answer",
                Some(&eve),
                Some(&bob_csrf),
                json!({"id": request.approval_id.to_string(), "digest": request.digest, "verdict": "reject"}),
            ),
        )
        .await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN);
        assert_eq!(fixture.controller.pending().len(), 1, "still waiting");
        // The session route tells the page who the cookie is, token and all: the page compares
        // it with the token it pinned at sign-in (tested in the browser).
        let reply = send(&fixture.router, get("/approvals/api/session", Some(&eve))).await;
        assert_eq!(reply.body["approver"], "eve");
    });
}
