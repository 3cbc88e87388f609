//! A page session never outlives the credential that opened it: a token's end cuts the page's
//! session lifetime (cookie and server side alike), a token already past its end opens nothing,
//! and a key with no end of its own gets the page's whole lifetime.

use std::time::{Duration, SystemTime};

use toolgate::approval_page::Authenticate;

use super::*;

/// `short` ends 1.5 s from sign-in, `stale` ended a second ago, `key` has no end.
struct Tokens;

impl Authenticate for Tokens {
    fn authenticate(&self, credential: &str) -> Option<Principal> {
        self.authenticate_until(credential)
            .map(|(principal, _)| principal)
    }

    fn authenticate_until(&self, credential: &str) -> Option<(Principal, Option<SystemTime>)> {
        let now = SystemTime::now();
        let ends = match credential {
            "short" => Some(now + Duration::from_millis(1500)),
            "stale" => Some(now - Duration::from_secs(1)),
            "key" => None,
            _ => return None,
        };
        Some((Principal::new("bob", ["security"]), ends))
    }
}

fn max_age(reply: &Reply) -> u64 {
    let cookie = reply.headers[header::SET_COOKIE].to_str().unwrap();
    cookie
        .split("; ")
        .find_map(|attribute| attribute.strip_prefix("Max-Age="))
        .expect("the cookie says how long it lasts")
        .parse()
        .unwrap()
}

#[test]
fn a_page_session_ends_when_the_token_that_opened_it_ends() {
    let fixture = fixture();
    let router = ApprovalPage::new(Arc::clone(&fixture.controller), Tokens)
        .with_allowed_hosts(["127.0.0.1:9"])
        .router();
    let request = hold(&fixture.controller, "prod");
    block(async {
        let login = |credential: &str| {
            post(
                "/approvals/api/login",
                None,
                None,
                json!({ "credential": credential }),
            )
        };
        let whole = send(&router, login("key")).await;
        assert_eq!(whole.status, StatusCode::OK);
        assert_eq!(
            max_age(&whole),
            8 * 60 * 60,
            "a key gets the page's lifetime"
        );

        let stale = send(&router, login("stale")).await;
        assert_eq!(stale.status, StatusCode::UNAUTHORIZED, "{:?}", stale.body);
        assert!(
            stale.body["error"].as_str().unwrap().contains("expired"),
            "{:?}",
            stale.body
        );
        assert!(!stale.headers.contains_key(header::SET_COOKIE));

        let short = send(&router, login("short")).await;
        assert_eq!(short.status, StatusCode::OK);
        let age = max_age(&short);
        assert!(
            (1..=2).contains(&age),
            "cut at the token's end, not 8 hours: {age} s"
        );
        let cookie = short.headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        let csrf = short.body["csrf"].as_str().unwrap().to_owned();
        let now = send(&router, get_as("/approvals/api/session", &cookie, &csrf)).await;
        assert_eq!(now.status, StatusCode::OK, "valid while the token is");

        // The browser may keep the cookie (a clock skew, a tampered Max-Age): the server's own
        // expiry is what refuses.
        tokio::time::sleep(Duration::from_millis(1700)).await;
        let later = send(&router, get_as("/approvals/api/session", &cookie, &csrf)).await;
        assert_eq!(later.status, StatusCode::UNAUTHORIZED, "{:?}", later.body);
        let answer = send(
            &router,
            post(
                "/approvals/api/answer",
                Some(&cookie),
                Some(&csrf),
                json!({"id": request.approval_id.to_string(), "digest": request.digest, "verdict": "approve"}),
            ),
        )
        .await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{:?}", answer.body);
    });
    assert_eq!(
        fixture.controller.pending().len(),
        1,
        "the call still waits"
    );
    assert_eq!(run_count(&fixture.runs), 0);
}
