//! Who answers from the shell: with identities, the principal a key proves, judged by the rule's
//! approvers; and only the credentials the page would take.

use super::*;

/// A command with `VAR` set to `key` in its environment.
fn approvals_with_key(
    args: &[&str],
    config: &std::path::Path,
    key: &str,
) -> (bool, String, String) {
    let output = std::process::Command::new(GATEWAY)
        .arg("approvals")
        .args(args)
        .arg("--config")
        .arg(config)
        .env("TOOLGATE_TEST_APPROVER_KEY", key)
        .output()
        .expect("run approvals");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn with_identities_the_shell_answers_as_the_principal_a_key_proves_and_the_rules_approvers_judge_it()
 {
    let work = Work::new("approvals-cli-keys");
    let clients = format!(
        "[audit]\njsonl = \"audit.jsonl\"\n\
         [[clients]]\nid = \"bob\"\ngroups = [\"security\"]\napi_key_sha256 = \"{}\"\n\
         [[clients]]\nid = \"eve\"\ngroups = [\"dev\"]\napi_key_sha256 = \"{}\"\n",
        support::sha256("bob-key"),
        support::sha256("eve-key"),
    );
    let config = work.asking_config(&clients);
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "echo-asks", "tool": "h__echo", "action": "ask", "reason": "security checks",
            "approvers": {"groups": ["security"]}}]}"#,
    );
    let client = serve(&config).await;
    let (message, _) = call(&client, "h__echo", json!({"text": "held"})).await;
    let id = held_id(&message);
    let _ = client.cancel().await;
    let key_env = ["--key-env", "TOOLGATE_TEST_APPROVER_KEY"];

    // A name alone proves nothing where the config names identities.
    let (ok, _, errors) = approvals_with_key(&["approve", &id, "--as", "bob"], &config, "");
    assert!(!ok && errors.contains("pass --key-env VAR"), "{errors}");
    let (ok, _, errors) = approvals_with_key(
        &["approve", &id, key_env[0], key_env[1]],
        &config,
        "no-such-key",
    );
    assert!(!ok && errors.contains("names nobody"), "{errors}");
    let (ok, _, errors) = approvals_with_key(
        &["approve", &id, key_env[0], key_env[1], "--as", "mallory"],
        &config,
        "bob-key",
    );
    assert!(!ok && errors.contains("your key names \"bob\""), "{errors}");
    // Eve's key is real, but she is not in security: refused, nothing ran, still waiting.
    let (ok, _, errors) = approvals_with_key(
        &["approve", &id, key_env[0], key_env[1]],
        &config,
        "eve-key",
    );
    assert!(
        !ok && errors.contains("not among the approvers"),
        "{errors}"
    );
    assert!(errors.contains("nothing ran"), "{errors}");
    let (_, listed, _) = approvals(&["list"], &config);
    assert!(listed.contains(&id), "{listed}");
    assert!(work.recorded().is_empty());

    let (ok, answered, errors) = approvals_with_key(
        &[
            "approve",
            &id,
            key_env[0],
            key_env[1],
            "--note",
            "checked the text",
        ],
        &config,
        "bob-key",
    );
    assert!(ok, "{answered}{errors}");
    assert!(
        answered.contains("approved by bob: h__echo ran once"),
        "{answered}"
    );
    assert_eq!(work.recorded(), ["echo"]);
    let approved = work
        .read("audit.jsonl")
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("an entry"))
        .find(|entry| entry["event"]["kind"] == "approval_approved")
        .expect("the approval's event");
    assert_eq!(approved["event"]["approver"], "bob");
    assert_eq!(approved["event"]["note"], "checked the text");
}

/// The shell signs in whoever the page would, no one else: a client marked `page_sign_in = false`
/// (a model's key) answers nothing, and with `[oauth.page] credential_sign_in = false` no typed
/// key or token does — and none of it starts an upstream or runs anything.
#[tokio::test]
async fn the_shell_takes_only_the_credentials_the_page_would() {
    let work = Work::new("approvals-cli-page-identities");
    let clients = format!(
        "[audit]\njsonl = \"audit.jsonl\"\n\
         [[clients]]\nid = \"bob\"\ngroups = [\"security\"]\napi_key_sha256 = \"{}\"\n\
         [[clients]]\nid = \"agent\"\ngroups = [\"security\"]\napi_key_sha256 = \"{}\"\npage_sign_in = false\n",
        support::sha256("bob-key"),
        support::sha256("agent-key"),
    );
    let config = work.asking_config(&clients);
    let client = serve(&config).await;
    let (message, _) = call(&client, "h__echo", json!({"text": "held"})).await;
    let id = held_id(&message);
    let _ = client.cancel().await;
    let key_env = ["--key-env", "TOOLGATE_TEST_APPROVER_KEY"];
    let (ok, _, errors) = approvals_with_key(
        &["approve", &id, key_env[0], key_env[1]],
        &config,
        "agent-key",
    );
    assert!(!ok && errors.contains("who may answer"), "{errors}");
    assert!(work.recorded().is_empty());

    // Approvers sign in at the provider only: the shell takes no key at all.
    let admin = support::free_port();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}[listen]\nadmin = \"127.0.0.1:{admin}\"\n\
             [oauth]\nresource = \"https://gw.example.com/mcp\"\n\
             [[oauth.issuers]]\nissuer = \"https://login.example.com\"\nid_prefix = \"sso:\"\n\
             [oauth.page]\nclient_id = \"approvals\"\n\
             redirect_url = \"https://gw-admin.example.com/approvals/oauth/callback\"\n\
             credential_sign_in = false\n"
        ),
    )
    .unwrap();
    let (ok, _, errors) = approvals_with_key(
        &["approve", &id, key_env[0], key_env[1]],
        &config,
        "bob-key",
    );
    assert!(
        !ok && errors.contains("answer on the approval page"),
        "{errors}"
    );
    assert!(work.recorded().is_empty());
}
