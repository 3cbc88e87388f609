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

mod credentials;
mod webhooks;
