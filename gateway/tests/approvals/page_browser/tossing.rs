//! Cookie tossing in a real browser: a page on another port of the same host (cookies are not
//! kept apart by port) sets the approval page's cookie name to a session of its own. With a longer
//! path the browser sends both cookies: the page says so, both sessions end, and signing in again
//! works. With the same path the cookie is replaced: the page notices that the session behind it
//! is not the one it signed in with and signs out instead of working as someone else.

use super::*;

use std::io::{Read as _, Write as _};

/// Serves, on a port of its own, one page that sets `cookie` the two ways a page can: its
/// response's `Set-Cookie` (which may replace even an `HttpOnly` cookie of the same name and
/// path) and its script; returns its port.
fn sibling_page(cookie: String) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = format!(
                "<!doctype html><title>sibling</title><script>document.cookie = {cookie:?}; document.title = 'tossed';</script>"
            );
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: {cookie}; HttpOnly\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// Eve's own session on the page, signed in with her key: the cookie's value.
async fn eve_session(admin: u16) -> String {
    let body = json!({"credential": EVE_KEY}).to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", admin)).unwrap();
    write!(
        stream,
        "POST /approvals/api/login HTTP/1.1\r\nHost: 127.0.0.1:{admin}\r\nOrigin: http://127.0.0.1:{admin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let cookie = reply
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: toolgate_approvals="))
        .unwrap_or_else(|| panic!("a session cookie: {reply}"));
    cookie.split(';').next().unwrap().to_owned()
}

async fn visit_sibling(browser: &Client, port: u16) {
    browser
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    until(
        "the sibling page's script",
        async || browser.title().await.unwrap(),
        |title| title == "tossed",
    )
    .await;
}

async fn signin_error(browser: &Client) -> String {
    until(
        "the page signed out with a reason",
        async || {
            let state = browser
                .execute(
                    "return document.getElementById('signin').hidden ? '' : document.getElementById('signin-error').textContent",
                    vec![],
                )
                .await
                .unwrap();
            state.as_str().unwrap_or_default().to_owned()
        },
        |text| !text.is_empty(),
    )
    .await
}

async fn approver(browser: &Client) -> String {
    browser
        .find(Locator::Id("approver"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_cookie_tossed_from_a_sibling_port_signs_out_and_never_runs_as_its_owner() {
    let Some(python) = python() else { return };
    let Some(driver) = chromedriver() else { return };
    let setup = start_in("approval-page-tossing", Path::new(&python), &driver);
    let browser = browser(setup.driver_port).await;
    let page = format!("http://127.0.0.1:{}/approvals", setup.admin);

    // A longer path: the browser sends Eve's cookie first, then Alice's.
    sign_in(&browser, setup.admin, ALICE_KEY).await;
    assert_eq!(approver(&browser).await, "alice");
    let eve = eve_session(setup.admin).await;
    let sibling = sibling_page(format!("toolgate_approvals={eve}; path=/approvals/api"));
    visit_sibling(&browser, sibling).await;
    browser.goto(&page).await.unwrap();
    let error = signin_error(&browser).await;
    assert!(error.contains("two session cookies"), "{error}");
    // Both cookies were cleared, so signing in again holds.
    sign_in(&browser, setup.admin, ALICE_KEY).await;
    browser.goto(&page).await.unwrap();
    browser
        .wait()
        .for_element(Locator::Css("#who:not([hidden])"))
        .await
        .unwrap();
    assert_eq!(approver(&browser).await, "alice");

    // The same path: Eve's cookie replaces Alice's. The tab pinned Alice's session.
    let eve = eve_session(setup.admin).await;
    let sibling = sibling_page(format!("toolgate_approvals={eve}; path=/approvals"));
    visit_sibling(&browser, sibling).await;
    browser.goto(&page).await.unwrap();
    let error = signin_error(&browser).await;
    assert!(
        error.contains("session behind this page changed"),
        "{error}"
    );
    // Eve's session was ended with it: a reload asks for a sign-in, it does not adopt hers.
    assert!(
        browser
            .find(Locator::Css("#who:not([hidden])"))
            .await
            .is_err(),
        "not shown as signed in as anyone"
    );
    sign_in(&browser, setup.admin, ALICE_KEY).await;
    assert_eq!(approver(&browser).await, "alice");
    browser.close().await.unwrap();
}
