//! A person answers a held call from a shell: `approvals list | show | approve | reject`, against
//! the durable store, with the gateway that held the call stopped in between. The approved call
//! runs once (the upstream's record proves it), a rejected one never, and the audit log names
//! the approver.

use crate::support;

use std::process::Output;

use serde_json::json;
use support::{ASKS_BECAUSE, GATEWAY, Work, call, serve};

fn approvals(args: &[&str], config: &std::path::Path) -> (Output, String, String) {
    let output = std::process::Command::new(GATEWAY)
        .arg("approvals")
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .expect("run approvals");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}

/// The approval id a held call's message names.
fn held_id(message: &str) -> String {
    let after = message
        .split("approval ")
        .nth(1)
        .unwrap_or_else(|| panic!("{message}"));
    after.split_whitespace().next().expect("an id").to_owned()
}

#[tokio::test]
async fn a_call_held_for_a_client_without_elicitation_is_approved_once_from_the_shell_after_the_gateway_stopped()
 {
    let work = Work::new("approvals-cli");
    // The log keeps zeros written ahead of its lines while the gateway runs; once it stops, the
    // file ends in its last line again (read line by line below).
    let config = work.asking_config("[audit]\njsonl = \"audit.jsonl\"\njsonl_reserve_mib = 1\n");
    // Longer than the question an MCP client is shown (2,000 characters): the shell shows all.
    let long = format!("{}END", "x".repeat(5_000));
    let client = serve(&config).await;
    let (message, is_error) = call(&client, "h__echo", json!({"text": long})).await;
    assert!(
        is_error && message.contains("waits for a person"),
        "{message}"
    );
    assert!(
        message.contains("(`toolgate-mcp-gateway approvals show ID --config"),
        "where to answer it: {message}"
    );
    let approve_me = held_id(&message);
    let (message, _) = call(&client, "h__echo", json!({"text": "reject me"})).await;
    let reject_me = held_id(&message);
    let reserved = |deadline: std::time::Instant| loop {
        let lines = toolgate::audit::verify_audit_file(work.path("audit.jsonl"))
            .expect("the live log verifies")
            .bytes;
        let len = std::fs::metadata(work.path("audit.jsonl")).unwrap().len();
        if len > lines || std::time::Instant::now() > deadline {
            return len > lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(
        reserved(std::time::Instant::now() + std::time::Duration::from_secs(10)),
        "zeros reserved past the live log's lines"
    );
    // While the gateway holds the JSON Lines audit log (one writer), the shell cannot run a call:
    // it says so, and nothing runs.
    let (output, _, errors) = approvals(&["approve", &approve_me, "--as", "olga"], &config);
    assert!(!output.status.success());
    assert!(
        errors.contains("audit.jsonl") && errors.contains("is locked by another writer"),
        "{errors}"
    );
    assert!(
        errors.contains("nothing ran") && errors.contains("still waits"),
        "{errors}"
    );
    assert!(
        errors.contains("no upstream was started") && !errors.contains("upstream starting"),
        "said before any upstream started: {errors}"
    );
    let _ = client.cancel().await;
    assert!(work.recorded().is_empty());

    let (output, listed, _) = approvals(&["list"], &config);
    assert!(output.status.success(), "{listed}");
    for id in [&approve_me, &reject_me] {
        assert!(
            listed.contains(&format!(
                "{id}  h__echo  asked by (no principal)  because {ASKS_BECAUSE}"
            )),
            "{listed}"
        );
    }
    let (output, shown, _) = approvals(&["show", &approve_me], &config);
    assert!(output.status.success(), "{shown}");
    assert!(
        shown.contains(&long),
        "every character of the arguments is shown"
    );
    let digest = shown
        .lines()
        .find_map(|line| line.strip_prefix("arguments digest:  "))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(digest.starts_with("sha256:"), "{shown}");

    // An answer for another call than the one read (the digest of the other held call) is not
    // taken: nothing runs and the call keeps waiting.
    let (_, other, _) = approvals(&["show", &reject_me], &config);
    let other_digest = other
        .lines()
        .find_map(|line| line.strip_prefix("arguments digest:  "))
        .unwrap_or_else(|| panic!("{other}"));
    assert_ne!(other_digest, digest);
    let (output, _, errors) = approvals(
        &[
            "approve",
            &approve_me,
            "--as",
            "olga",
            "--digest",
            other_digest,
        ],
        &config,
    );
    assert!(!output.status.success());
    assert!(
        errors.contains("holds another call than the digest you gave")
            && errors.contains("nothing ran")
            && errors.contains(&format!("approvals show {approve_me}")),
        "{errors}"
    );
    assert!(work.recorded().is_empty());
    let (_, listed, _) = approvals(&["list"], &config);
    assert!(
        listed.contains(approve_me.as_str()),
        "still waiting: {listed}"
    );

    let (output, answered, errors) = approvals(
        &["approve", &approve_me, "--as", "olga", "--digest", digest],
        &config,
    );
    assert!(output.status.success(), "{answered}{errors}");
    assert!(
        answered.contains("approved by olga: h__echo ran once"),
        "{answered}"
    );
    assert!(answered.contains("END"), "{answered}");
    assert_eq!(work.recorded(), ["echo"]);
    // Answered already: a second approval runs nothing.
    let (output, _, errors) = approvals(&["approve", &approve_me, "--as", "olga"], &config);
    assert!(!output.status.success());
    assert!(errors.contains("is not waiting"), "{errors}");
    let (output, answered, errors) = approvals(&["reject", &reject_me, "--as", "olga"], &config);
    assert!(output.status.success(), "{answered}{errors}");
    assert!(
        answered.contains("rejected by olga: h__echo did not run"),
        "{answered}"
    );
    assert_eq!(work.recorded(), ["echo"]);
    let (_, listed, _) = approvals(&["list"], &config);
    assert!(listed.contains("no call is waiting"), "{listed}");

    let audit = work.read("audit.jsonl");
    let answers: Vec<(String, String)> = audit
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("an entry"))
        .filter(|entry| entry["event"]["approver"].is_string())
        .map(|entry| {
            (
                entry["event"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                entry["event"]["approver"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("approval_approved".to_owned(), "olga".to_owned()),
            ("approval_rejected".to_owned(), "olga".to_owned())
        ],
        "{audit}"
    );
    // The answers' events keep the chain whole.
    let verified = std::process::Command::new(GATEWAY)
        .args(["audit", "verify"])
        .arg(work.path("audit.jsonl"))
        .output()
        .expect("verify");
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
}

#[test]
fn a_store_in_memory_or_a_bad_id_is_refused_with_what_to_do() {
    let work = Work::new("approvals-cli-refused");
    let config = work.hostile_config("serve", "[approvals]\nstore = \"memory\"\n");
    let (output, _, errors) = approvals(&["list"], &config);
    assert!(!output.status.success());
    assert!(
        errors
            .contains("approvals.store: \"memory\" keeps waiting calls inside the gateway process"),
        "{errors}"
    );
    let config = work.hostile_config("serve", "");
    let (output, _, errors) = approvals(&["show", "not-an-id"], &config);
    assert!(!output.status.success());
    assert!(
        errors.contains("\"not-an-id\" is not an approval id"),
        "{errors}"
    );
    for approver in ["", "two words", "line\nbreak"] {
        let (output, _, errors) = approvals(&["approve", "x", "--as", approver], &config);
        assert!(!output.status.success());
        assert!(
            errors.contains("name who answers in 1 to 256 bytes"),
            "{errors}"
        );
    }
}

/// Every POST the webhook receiver got: its `Authorization` header and its body.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

async fn receiver() -> (u16, Received) {
    let received = Received::default();
    let kept = std::sync::Arc::clone(&received);
    let router = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let kept = std::sync::Arc::clone(&kept);
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                kept.lock().expect("lock").push((auth, body));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (port, received)
}

#[tokio::test]
async fn each_held_call_is_posted_to_the_webhook_without_its_argument_values() {
    let (port, received) = receiver().await;
    let work = Work::new("approvals-webhook");
    let admin = support::free_port();
    let config = work.asking_config(&format!(
        "[approvals]\nwebhook_url = \"http://127.0.0.1:{port}/hook\"\nwebhook_bearer_token_env = \"TG_TEST_HOOK_TOKEN\"\n\
         [listen]\nstdio = true\nadmin = \"127.0.0.1:{admin}\"\n\
         [[clients]]\nid = \"sam\"\napi_key_sha256 = \"{}\"\n",
        support::sha256("sam-key")
    ));
    let mut command = tokio::process::Command::new(GATEWAY);
    command
        .args(["serve", "--config"])
        .arg(&config)
        .env("TG_TEST_HOOK_TOKEN", "tok-123");
    let transport = rmcp::transport::TokioChildProcess::new(command).expect("spawn");
    let client = rmcp::ServiceExt::serve((), transport)
        .await
        .expect("handshake");
    let (message, _) = call(&client, "h__echo", json!({"text": "s3cret-value"})).await;
    let id = held_id(&message);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while received.lock().expect("lock").is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let _ = client.cancel().await;
    let got = received.lock().expect("lock").clone();
    assert_eq!(got.len(), 1, "{got:?}");
    let (auth, body) = &got[0];
    assert_eq!(auth, "Bearer tok-123");
    assert!(!body.contains("s3cret-value"), "no argument value: {body}");
    let notice: serde_json::Value = serde_json::from_str(body).expect("JSON");
    assert_eq!(notice["event"], "approval_waiting");
    assert_eq!(notice["approval_id"], id.as_str());
    assert_eq!(notice["tool"], "h__echo");
    assert_eq!(notice["reason"], ASKS_BECAUSE);
    assert_eq!(
        notice["page"],
        format!("http://127.0.0.1:{admin}/approvals")
    );
    assert!(
        notice["answer"]
            .as_str()
            .is_some_and(|answer| answer.contains(&format!("approvals show {id} --config"))),
        "{notice}"
    );
}

#[tokio::test]
async fn an_unreachable_webhook_fails_no_call_and_the_approval_still_waits() {
    let nobody = support::free_port();
    let work = Work::new("approvals-webhook-down");
    let config = work.asking_config(&format!(
        "[approvals]\nwebhook_url = \"http://127.0.0.1:{nobody}/hook\"\n"
    ));
    let client = serve(&config).await;
    let (message, is_error) = call(&client, "h__echo", json!({"text": "held"})).await;
    let _ = client.cancel().await;
    assert!(
        is_error && message.contains("waits for a person"),
        "{message}"
    );
    let (output, listed, _) = approvals(&["list"], &config);
    assert!(output.status.success());
    assert!(listed.contains(&held_id(&message)), "{listed}");
}

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

#[tokio::test]
async fn a_webhook_configured_for_arguments_gets_the_held_calls_arguments() {
    let (port, received) = receiver().await;
    let work = Work::new("approvals-webhook-arguments");
    // The store in memory: the webhook reads the same store the gateway holds calls in.
    let config = work.asking_config(&format!(
        "[approvals]\nstore = \"memory\"\nwebhook_url = \"http://127.0.0.1:{port}/hook\"\nwebhook_arguments = true\n"
    ));
    let client = serve(&config).await;
    let (message, _) = call(&client, "h__echo", json!({"text": "shown-to-the-hook"})).await;
    let id = held_id(&message);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while received.lock().expect("lock").is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let _ = client.cancel().await;
    let got = received.lock().expect("lock").clone();
    let notice: serde_json::Value = serde_json::from_str(&got[0].1).expect("JSON");
    assert_eq!(notice["approval_id"], id.as_str());
    assert_eq!(notice["arguments"], json!({"text": "shown-to-the-hook"}));
    assert!(notice["page"].is_null(), "no page served: {notice}");
}

/// A request whose time to live ran out is not waiting: the shell says so before it starts any
/// upstream, for an answer with or without a digest, and nothing runs.
#[tokio::test]
async fn an_expired_request_is_not_answered_and_no_upstream_starts() {
    use toolgate::approvals::{ApprovalStore as _, SqliteApprovalStore};
    let work = Work::new("approvals-cli-expired");
    let config = work.asking_config("");
    let client = serve(&config).await;
    let (message, _) = call(&client, "h__echo", json!({"text": "one"})).await;
    let held = held_id(&message);
    let _ = client.cancel().await;
    // The same call held again under another id, with a time to live long run out.
    let ledger = std::fs::read_dir(work.path("."))
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.to_string_lossy().ends_with(".approvals.sqlite"))
        .expect("the ledger");
    let store = SqliteApprovalStore::open(&ledger).unwrap();
    let mut expired = store
        .pending(0)
        .unwrap()
        .into_iter()
        .find(|request| request.approval_id.to_string() == held)
        .expect("the held call");
    expired.approval_id = "00112233445566778899aabbccddeeff".parse().unwrap();
    store.insert(&expired, Some(1), 100, 0).unwrap();
    drop(store);
    let id = expired.approval_id.to_string();
    for args in [
        vec!["reject", id.as_str(), "--as", "olga"],
        vec![
            "approve",
            id.as_str(),
            "--as",
            "olga",
            "--digest",
            "sha256:wrong",
        ],
        vec!["approve", id.as_str(), "--as", "olga"],
    ] {
        let (output, out, errors) = approvals(&args, &config);
        assert!(!output.status.success(), "{args:?}: {out}{errors}");
        assert!(errors.contains("is not waiting"), "{args:?}: {errors}");
        assert!(
            !errors.contains("upstream starting") && !out.contains("by olga"),
            "{args:?}: no upstream starts, nothing is reported answered: {out}{errors}"
        );
    }
    assert!(work.recorded().is_empty(), "nothing ran");
}
