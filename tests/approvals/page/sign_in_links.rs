//! Ways to sign in that a route outside the page runs (the gateway's OpenID Connect sign-in): the
//! page lists them, may take no typed credential, and opens a session for whoever such a route
//! signed in — cut at the end of what signed them in, like a token's.

use std::time::{Duration, SystemTime};

use toolgate::approval_page::PageSessions;

use super::*;

fn page_with_link(credentials: bool) -> (axum::Router, PageSessions) {
    let fixture = fixture();
    let mut page = ApprovalPage::new(Arc::clone(&fixture.controller), |credential: &str| {
        (credential == "alice-key").then(|| Principal::new("alice", ["security"]))
    })
    .with_allowed_hosts(["127.0.0.1:9"])
    .with_sign_in_link("Sign in with Corp", "/approvals/oauth/start");
    if !credentials {
        page = page.without_credential_sign_in();
    }
    page.router_and_sessions()
}

#[test]
fn the_page_lists_its_ways_to_sign_in() {
    block(async {
        let plain = fixture();
        let reply = send(&plain.router, get("/approvals/api/sign-in", None)).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body, json!({"credential": true, "links": []}));
        let (router, _) = page_with_link(false);
        let reply = send(&router, get("/approvals/api/sign-in", None)).await;
        assert_eq!(
            reply.body,
            json!({"credential": false, "links": [
                {"label": "Sign in with Corp", "path": "/approvals/oauth/start"}
            ]})
        );
    });
}

#[test]
fn with_credentials_turned_off_a_key_opens_nothing() {
    block(async {
        let (router, _) = page_with_link(false);
        let reply = send(
            &router,
            post(
                "/approvals/api/login",
                None,
                None,
                json!({"credential": "alice-key"}),
            ),
        )
        .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{:?}", reply.body);
        assert!(reply.headers.get(header::SET_COOKIE).is_none());
        // Turned on (the default beside a link), the same key signs in.
        let (router, _) = page_with_link(true);
        sign_in(&router, "alice-key").await;
    });
}

#[test]
fn a_session_opened_for_a_route_lasts_until_its_sign_in_ends() {
    block(async {
        let (router, sessions) = page_with_link(false);
        assert_eq!(format!("{sessions:?}"), "PageSessions { .. }");
        let ends = SystemTime::now() + Duration::from_secs(90);
        let cookie = sessions
            .open(Principal::new("carol", ["security"]), Some(ends))
            .expect("a session");
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/approvals"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        let max_age: u64 = cookie
            .split("; ")
            .find_map(|attribute| attribute.strip_prefix("Max-Age="))
            .unwrap()
            .parse()
            .unwrap();
        // 89.99… seconds left: whole seconds, rounded up (the server's own expiry is exact).
        assert_eq!(max_age, 90, "cut at its end");
        let pair = cookie.split(';').next().unwrap();
        let reply = send(&router, get("/approvals/api/session", Some(pair))).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        assert_eq!(reply.body["approver"], "carol");
        assert_eq!(reply.body["groups"], json!(["security"]));
        // Something that ended already opens nothing.
        let ended = SystemTime::now() - Duration::from_secs(1);
        assert!(
            sessions
                .open(Principal::new("carol", ["security"]), Some(ended))
                .is_none()
        );
    });
}

#[test]
#[should_panic(expected = "a path on the page's own host")]
fn a_link_to_another_host_is_refused() {
    let fixture = fixture();
    let _ = ApprovalPage::new(Arc::clone(&fixture.controller), |_: &str| None)
        .with_sign_in_link("Elsewhere", "//evil.example/login");
}
