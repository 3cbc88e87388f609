//! Approvers sign in to the page at the team's OpenID provider (a real one: `oidc-provider`),
//! in the browser: the page offers only the provider's link (typed credentials are turned off),
//! the click goes through the provider and back signed in as the account it names (under the
//! issuer's id prefix: the page also has an API-key client `alice`), with the groups its token
//! carries, and that person's approval runs the held call once.

use super::*;
use crate::support::node_dir;
use crate::support::oidc::Provider;

#[tokio::test]
async fn a_person_signs_in_at_the_provider_and_approves() {
    let Some(python) = python() else { return };
    let Some(driver) = chromedriver() else { return };
    let Some(node) = node_dir() else { return };
    let (mcp, admin) = (free_port(), free_port());
    let callback = format!("http://127.0.0.1:{admin}/approvals/oauth/callback");
    let provider_work = Work::new("approval-page-oidc-provider");
    let provider = Provider::start_with(&node, &provider_work, free_port(), "k1", &callback);
    let setup = start_with(
        "approval-page-oidc",
        Path::new(&python),
        &driver,
        (mcp, admin),
        &format!(
            "[oauth]\nresource = \"http://127.0.0.1:{mcp}/mcp\"\n\
             [[oauth.issuers]]\nissuer = \"{}\"\nid_prefix = \"sso:\"\n\
             [oauth.page]\nclient_id = \"page-public\"\nredirect_url = \"{callback}\"\n\
             label = \"Sign in with the team's provider\"\ncredential_sign_in = false\n",
            provider.issuer
        ),
    );
    let bob = agent(setup.mcp, BOB_KEY).await;
    let held = hold(&bob, "prod").await;

    let browser = browser(setup.driver_port).await;
    browser
        .goto(&format!("http://127.0.0.1:{admin}/approvals"))
        .await
        .unwrap();
    let link = browser
        .wait()
        .for_element(Locator::Css(
            "#signin:not([hidden]) #signin-links:not([hidden]) a",
        ))
        .await
        .unwrap();
    assert_eq!(
        link.text().await.unwrap(),
        "Sign in with the team's provider"
    );
    let form = browser.find(Locator::Id("signin-form")).await.unwrap();
    assert!(
        !form.is_displayed().await.unwrap(),
        "typed credentials are off"
    );
    link.click().await.unwrap();
    // Through the provider (it signs in its default account, alice) and back, signed in.
    browser
        .wait()
        .for_element(Locator::Css("#who:not([hidden])"))
        .await
        .unwrap();
    let url = browser.current_url().await.unwrap();
    assert_eq!(url.as_str(), format!("http://127.0.0.1:{admin}/approvals"));
    let approver = browser
        .find(Locator::Id("approver"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // The provider's alice, not the API-key client alice: one principal, one source.
    assert_eq!(approver, "sso:alice");
    let outcome = answer(&browser, &held, "approve", "signed in at the provider").await;
    assert!(outcome.contains("Approved by sso:alice"), "{outcome}");
    assert_eq!(deploys(&setup.work), ["prod"]);
    // The audit log names the approver the provider signed in.
    let audit = setup.work.read("audit.jsonl");
    assert!(audit.contains("\"approver\":\"sso:alice\""), "{audit}");
    browser.close().await.unwrap();
    drop(provider);
}
