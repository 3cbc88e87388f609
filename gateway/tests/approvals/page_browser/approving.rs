//! A person approves a held call in the browser and it runs once: Eve, outside the rule's group,
//! and Alice, the asker under four eyes, cannot answer; Bob sees the whole call as text, live
//! without a reload; a stale second tab and a request without the CSRF token are refused; rejecting
//! runs nothing; the audit view names the approver; no argument value reaches a URL the page
//! requests or a line the gateway logs; and a call held across a gateway restart runs once.

use super::*;

/// The card for `id` shows no arguments, and its buttons and note are off.
async fn cannot_answer(browser: &Client, id: &str) {
    let card = browser.wait().for_element(card(id)).await.unwrap();
    assert!(
        card.find(Locator::Css(".arguments")).await.is_err(),
        "arguments shown"
    );
    for control in ["button.approve", "button.reject", ".note"] {
        let element = card.find(Locator::Css(control)).await.unwrap();
        assert!(!element.is_enabled().await.unwrap(), "{control} enabled");
    }
}

#[tokio::test]
async fn a_person_approves_a_held_call_in_the_browser_and_it_runs_once() {
    let Some(python) = python() else { return };
    let Some(driver) = chromedriver() else { return };
    let mut setup = start(Path::new(&python), &driver);
    let alice = agent(setup.mcp, ALICE_KEY).await;
    let approve_me = hold(&alice, "prod").await;
    let reject_me = hold(&alice, "staging").await;
    let own = hold(&alice, "canary").await;

    // Never on the MCP listener: there the path does not exist, with a key or without.
    let http = reqwest::Client::new();
    for key in [None, Some(ALICE_KEY)] {
        let mut request = http.get(format!("http://127.0.0.1:{}/approvals", setup.mcp));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let status = request.send().await.unwrap().status();
        assert!(status == 401 || status == 404, "{status}");
    }

    let browser = browser(setup.driver_port).await;
    // Eve is not in security: she sees that the calls wait and why, not their arguments, and
    // cannot answer them (the buttons are off; the API refuses her, `tests/approvals/page.rs`).
    sign_in(&browser, setup.admin, EVE_KEY).await;
    let cannot = text_in(&browser, &approve_me, ".cannot").await;
    assert!(cannot.contains("not among the approvers"), "{cannot}");
    cannot_answer(&browser, &approve_me).await;
    browser
        .find(Locator::Id("logout"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();

    // Alice asked: under four eyes she cannot approve her own call.
    sign_in(&browser, setup.admin, ALICE_KEY).await;
    let cannot = text_in(&browser, &own, ".cannot").await;
    assert!(cannot.contains("four eyes"), "{cannot}");
    cannot_answer(&browser, &own).await;
    browser
        .find(Locator::Id("logout"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert!(deploys(&setup.work).is_empty());

    // Bob: the whole call, as text.
    sign_in(&browser, setup.admin, BOB_KEY).await;
    let arguments = text_in(&browser, &approve_me, "pre.arguments").await;
    assert!(
        arguments.contains(HOSTILE_NOTES.replace('"', "\\\"").as_str()),
        "{arguments}"
    );
    assert!(arguments.contains("\"env\": \"prod\""), "{arguments}");
    let description = text_in(&browser, &approve_me, ".description").await;
    assert!(
        description.contains("<script>") && description.contains("<b>now</b>"),
        "{description}"
    );
    let reason = text_in(&browser, &approve_me, ".reason").await;
    assert_eq!(
        reason,
        "a deploy needs a <i>second</i> person from security"
    );
    assert_eq!(text_in(&browser, &approve_me, ".principal").await, "alice");
    assert_eq!(text_in(&browser, &approve_me, ".upstream").await, "p");

    // Live: a call held while the page is open appears without a reload, all of it (far more
    // than the 2,000 characters an MCP question shows).
    let long_env = format!("region-{}-end", "x".repeat(5_000));
    let live = hold(&alice, &long_env).await;
    let arguments = text_in(&browser, &live, "pre.arguments").await;
    assert!(arguments.contains(&long_env), "the whole value, not cut");
    // Nothing from the arguments or the description became an element or ran.
    let injected = browser
        .execute("return document.querySelectorAll('article img, article script, article b, article i').length", vec![])
        .await
        .unwrap();
    assert_eq!(injected, json!(0));
    assert!(!browser.title().await.unwrap().contains("pwned"));

    // A second tab, opened before the approval.
    let first = browser.window().await.unwrap();
    let second = browser.new_window(true).await.unwrap().handle;
    browser.switch_to_window(second.clone()).await.unwrap();
    browser
        .goto(&format!("http://127.0.0.1:{}/approvals", setup.admin))
        .await
        .unwrap();
    browser.wait().for_element(card(&approve_me)).await.unwrap();
    let stale_digest = text_in(&browser, &approve_me, "dd.digest:last-of-type").await;

    browser.switch_to_window(first).await.unwrap();
    let outcome = answer(&browser, &approve_me, "approve", "checked the target").await;
    assert!(
        outcome.contains("Approved by bob: it ran once"),
        "{outcome}"
    );
    let result = text_in(&browser, &approve_me, "pre.result").await;
    assert!(result.contains("deployed to prod"), "{result}");
    assert_eq!(deploys(&setup.work), ["prod"]);

    // The second tab: its page still shows the call; approving it again is refused (the request
    // is no longer waiting), and the live list marks it answered elsewhere.
    browser.switch_to_window(second).await.unwrap();
    let stale = browser
        .execute(
            "const [id, digest] = arguments; return fetch('/approvals/api/session').then(r => r.json()).then(s => \
             fetch('/approvals/api/answer', {method: 'POST', headers: {'content-type': 'application/json', 'x-toolgate-csrf': s.csrf}, \
             body: JSON.stringify({id, digest, verdict: 'approve'})})).then(r => r.status)",
            vec![json!(approve_me), json!(stale_digest)],
        )
        .await
        .unwrap();
    assert_eq!(stale, json!(409));
    until(
        "the stale tab to mark the call answered",
        async || text_in(&browser, &approve_me, ".outcome").await,
        |text| text.contains("No longer waiting"),
    )
    .await;
    // Without the CSRF token, the same session's request is refused.
    let no_token = browser
        .execute(
            "return fetch('/approvals/api/answer', {method: 'POST', headers: {'content-type': 'application/json'}, \
             body: JSON.stringify({id: arguments[0], digest: 'x', verdict: 'reject'})}).then(r => r.status)",
            vec![json!(reject_me)],
        )
        .await
        .unwrap();
    assert_eq!(no_token, json!(403));

    // Reject: nothing runs.
    let outcome = answer(&browser, &reject_me, "reject", "").await;
    assert!(
        outcome.contains("Rejected by bob: it did not run"),
        "{outcome}"
    );
    assert_eq!(
        deploys(&setup.work),
        ["prod"],
        "approved once, rejected never"
    );

    // The audit view: the chain verifies, and the approval names Bob and his note.
    browser
        .find(Locator::Id("audit-refresh"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // Waited for by what the refresh brings: the view loaded before the approval verifies too,
    // and a loaded machine showed it (without the approval) before the refresh had answered.
    let view = until(
        "the audit view with the approval",
        async || {
            let text_of = async |id| {
                browser
                    .find(Locator::Id(id))
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap()
            };
            format!("{}\n{}", text_of("chain").await, text_of("audit").await)
        },
        |text| text.contains("approval_approved"),
    )
    .await;
    assert!(view.starts_with("Chain verifies"), "{view}");
    assert!(view.contains("checked the target"), "{view}");
    let audit = setup.work.read("audit.jsonl");
    assert!(
        !audit.contains("pwned-by-arguments"),
        "no argument value in the audit log"
    );
    // No argument value in any URL the page requested, nor in a line the gateway logged.
    let urls = browser
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name).concat([location.href])",
            vec![],
        )
        .await
        .unwrap();
    let urls = urls.to_string();
    assert!(urls.contains("/approvals/api/pending"), "{urls}");
    for value in ["pwned", "region-", "staging", "canary"] {
        assert!(!urls.contains(value), "{value} in {urls}");
        assert!(
            !setup.work.read("gateway.log").contains(value),
            "{value} in the gateway's log"
        );
    }

    // A call held, the gateway restarted in between: the page lists it after the restart, with
    // all its arguments, and approving it runs it once.
    let across = hold(&alice, "after-restart").await;
    let _ = alice.cancel().await;
    setup.restart();
    browser
        .goto(&format!("http://127.0.0.1:{}/approvals", setup.admin))
        .await
        .unwrap();
    // Sessions live in the process: after a restart the person signs in again.
    sign_in(&browser, setup.admin, BOB_KEY).await;
    let arguments = text_in(&browser, &across, "pre.arguments").await;
    assert!(arguments.contains("after-restart"), "{arguments}");
    let outcome = answer(&browser, &across, "approve", "").await;
    assert!(
        outcome.contains("Approved by bob: it ran once"),
        "{outcome}"
    );
    assert_eq!(deploys(&setup.work), ["prod", "after-restart"]);
    let alice = agent(setup.mcp, ALICE_KEY).await;

    if let Some(path) = std::env::var_os("TOOLGATE_PAGE_SCREENSHOT") {
        screenshot(&browser, setup.admin, &alice, Path::new(&path)).await;
    }
    let _ = browser.close().await;
    let _ = alice.cancel().await;
}

/// A screenshot of the page with one call waiting, for the README.
async fn screenshot(
    browser: &Client,
    admin: u16,
    alice: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    path: &Path,
) {
    let id = hold(alice, "prod").await;
    browser
        .goto(&format!("http://127.0.0.1:{admin}/approvals"))
        .await
        .unwrap();
    browser.wait().for_element(card(&id)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let png = browser.screenshot().await.unwrap();
    std::fs::write(path, png).unwrap();
}
