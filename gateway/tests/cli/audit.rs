//! `audit verify --head` and `audit prove` on a real JSON Lines log: a tree head printed once
//! catches the log cut back later, and a receipt verifies from the entry's line alone.

use crate::support;

use serde_json::{Value, json};
use support::*;
use toolgate::audit::{JsonlAuditSink, Receipt, TreeHead};
use toolgate::{
    ToolCall, ToolController, ToolDefinition, ToolError, ToolPolicy, ToolRegistry, ToolSpec,
};

fn write_calls(path: &std::path::Path, count: usize) {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let registry = ToolRegistry::new([ToolDefinition::new(
        ToolSpec::new("ping", "Ping.", json!({"type": "object"})),
        noop,
    )
    .unwrap()])
    .unwrap();
    let controller = ToolController::new(
        registry,
        ToolPolicy::new(["ping"], Vec::<String>::new()).unwrap(),
    )
    .with_audit_sink(JsonlAuditSink::open(path).unwrap());
    for index in 0..count {
        let _ = controller.handle(ToolCall::new(format!("c{index}"), "ping", json!({})));
    }
}

#[test]
fn a_tree_head_kept_catches_a_cut_log_and_a_receipt_proves_an_entry() {
    let work = Work::new("audit-cli");
    let log = work.path("audit.jsonl");
    write_calls(&log, 3);
    let log_arg = log.to_str().unwrap();
    let (stdout, stderr) = text(&run(&["audit", "verify", log_arg]));
    let head = stdout
        .lines()
        .find_map(|line| line.strip_prefix("tree head: "))
        .unwrap_or_else(|| panic!("{stdout}{stderr}"))
        .to_owned();
    let kept: TreeHead = head.parse().unwrap();
    assert_eq!(kept.size, 9);

    write_calls(&log, 1);
    let output = run(&["audit", "verify", log_arg, "--head", &head]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("It extends the tree head kept"), "{stdout}");

    let output = run(&["audit", "prove", log_arg, "--index", "4"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let proved: Value = serde_json::from_str(stdout.trim()).unwrap();
    let receipt: Receipt = serde_json::from_value(proved["receipt"].clone()).unwrap();
    let now: TreeHead = proved["tree_head"].as_str().unwrap().parse().unwrap();
    let lines: Vec<String> = work
        .read("audit.jsonl")
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(receipt.verify(&lines[4], &now));
    assert!(!receipt.verify(&lines[5], &now));

    // Cut back to 6 entries: the chain alone still holds, the head kept does not.
    std::fs::write(&log, lines[..6].join("\n") + "\n").unwrap();
    assert!(run(&["audit", "verify", log_arg]).status.success());
    let output = run(&["audit", "verify", log_arg, "--head", &head]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("cut off"), "{stderr}");
    let output = run(&["audit", "verify", log_arg, "--head", "size 3"]);
    assert_eq!(output.status.code(), Some(1));
    let output = run(&["audit", "prove", log_arg, "--index", "6"]);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn a_signed_checkpoint_is_made_checked_and_catches_a_cut_log() {
    let work = Work::new("audit-cli-checkpoint");
    let log = work.path("audit.jsonl");
    write_calls(&log, 2);
    let (log_arg, key_file) = (log.to_str().unwrap(), work.path("checkpoint.key"));
    let output = run(&[
        "audit",
        "key",
        "--name",
        "audit.example/gw",
        "--out",
        key_file.to_str().unwrap(),
    ]);
    let (verifier, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let verifier = verifier.trim().to_owned();
    assert!(verifier.starts_with("audit.example/gw+"), "{verifier}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A second key over the first is refused.
    let again = run(&[
        "audit",
        "key",
        "--name",
        "x",
        "--out",
        key_file.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(1));

    let output = run(&[
        "audit",
        "checkpoint",
        log_arg,
        "--key-file",
        key_file.to_str().unwrap(),
        "--origin",
        "audit.example/gw",
    ]);
    let (note, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        note.starts_with("audit.example/gw\n6\n") && note.contains("\n\n— audit.example/gw "),
        "{note}"
    );
    let note_file = work.write("checkpoint.note", &note);
    write_calls(&log, 1);
    let verify = |origin: &str| {
        run(&[
            "audit",
            "verify-checkpoint",
            log_arg,
            "--checkpoint",
            note_file.to_str().unwrap(),
            "--key",
            &verifier,
            "--origin",
            origin,
        ])
    };
    let output = verify("audit.example/gw");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("extends the signed checkpoint"), "{stdout}");
    assert!(
        stdout.contains("signed by audit.example/gw (the log's key), no witness was asked for"),
        "{stdout}"
    );
    // A witness named must have cosigned: this one never did.
    let witness_file = work.path("witness.key");
    let (witness, _) = text(&run(&[
        "audit",
        "key",
        "--name",
        "witness.example",
        "--out",
        witness_file.to_str().unwrap(),
    ]));
    let output = run(&[
        "audit",
        "verify-checkpoint",
        log_arg,
        "--checkpoint",
        note_file.to_str().unwrap(),
        "--key",
        &verifier,
        "--witness",
        witness.trim(),
        "--origin",
        "audit.example/gw",
    ]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("\"witness.example\" did not sign"),
        "{stderr}"
    );
    // The witness's key given as the log's: the log's key did not sign.
    let output = run(&[
        "audit",
        "verify-checkpoint",
        log_arg,
        "--checkpoint",
        note_file.to_str().unwrap(),
        "--key",
        witness.trim(),
        "--origin",
        "audit.example/gw",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(verify("other").status.code(), Some(1));
    let lines: Vec<String> = work
        .read("audit.jsonl")
        .lines()
        .map(str::to_owned)
        .collect();
    std::fs::write(&log, lines[..5].join("\n") + "\n").unwrap();
    let output = verify("audit.example/gw");
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr.contains("cut off"), "{stderr}");
}

/// `serve` with `[audit] checkpoint_key_file`: a signed checkpoint at start and whenever the log
/// grew, each one verified against the log by the CLI; a key file that does not load stops serve.
#[tokio::test]
async fn the_gateway_writes_signed_checkpoints_on_a_schedule() {
    let work = Work::new("audit-scheduled-checkpoints");
    let key_file = work.path("checkpoint.key");
    let output = run(&[
        "audit",
        "key",
        "--name",
        "gw.example/audit",
        "--out",
        key_file.to_str().unwrap(),
    ]);
    let (verifier, _) = text(&output);
    let verifier = verifier.trim().to_owned();
    // A receiver for the checkpoint webhook: every body POSTed.
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = std::sync::Arc::clone(&received);
    let router = axum::Router::new().route(
        "/checkpoints",
        axum::routing::post(move |body: String| {
            let kept = std::sync::Arc::clone(&kept);
            async move {
                kept.lock().unwrap().push(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let extra = format!(
        "[audit]\njsonl = \"audit.jsonl\"\ncheckpoint_key_file = \"checkpoint.key\"\n\
         checkpoint_origin = \"gw.example/audit\"\ncheckpoint_every_s = 1\n\
         checkpoint_webhook_url = \"http://127.0.0.1:{port}/checkpoints\"\n"
    );
    let extra = extra.as_str();
    let config = work.hostile_config("serve", extra);
    let client = serve(&config).await;
    let checkpoint = work.path("audit.jsonl.checkpoint");
    let size_of = |note: &str| {
        note.lines()
            .nth(1)
            .unwrap_or("")
            .parse::<u64>()
            .unwrap_or(0)
    };
    three_echoes(&client).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let note = loop {
        let note = std::fs::read_to_string(&checkpoint).unwrap_or_default();
        if size_of(&note) >= 9 {
            break note;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint of the calls: {note:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert!(note.starts_with("gw.example/audit\n"), "{note}");
    // The same checkpoint was POSTed to the webhook (it may still be on its way).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !received.lock().unwrap().contains(&note) {
        assert!(
            std::time::Instant::now() < deadline,
            "not posted: {:?}",
            received.lock().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let _ = client.cancel().await;
    let output = run(&[
        "audit",
        "verify-checkpoint",
        work.path("audit.jsonl").to_str().unwrap(),
        "--checkpoint",
        checkpoint.to_str().unwrap(),
        "--key",
        &verifier,
        "--origin",
        "gw.example/audit",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");

    // A key file that is not one: check and serve refuse to start, naming it.
    std::fs::write(&key_file, "not a key\n").unwrap();
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("audit.checkpoint_key_file") && stderr.contains("checkpoint.key"),
        "{stderr}"
    );
}

#[test]
fn given_arguments_are_disclosed_against_an_entry_until_its_salt_is_forgotten() {
    let work = Work::new("audit-disclose");
    let log = work.path("audit.jsonl");
    write_calls(&log, 2); // arguments {}
    let log_arg = log.to_str().unwrap();
    let output = run(&[
        "audit",
        "disclose",
        log_arg,
        "--index",
        "3",
        "--arguments",
        "{}",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("commits to these arguments"), "{stdout}");
    let output = run(&[
        "audit",
        "disclose",
        log_arg,
        "--index",
        "3",
        "--arguments",
        r#"{"pin":"1234"}"#,
    ]);
    let (stdout, _) = text(&output);
    assert_eq!(output.status.code(), Some(3));
    assert!(stdout.contains("other arguments"), "{stdout}");
    assert!(
        !stdout.contains("1234"),
        "the arguments are never printed: {stdout}"
    );
    let output = run(&[
        "audit",
        "disclose",
        log_arg,
        "--index",
        "3",
        "--arguments",
        "{",
    ]);
    assert_eq!(output.status.code(), Some(1));

    let head_before = text(&run(&["audit", "verify", log_arg])).0;
    let output = run(&["audit", "forget", log_arg, "--index", "3"]);
    assert!(output.status.success(), "{}", text(&output).1);
    let output = run(&[
        "audit",
        "disclose",
        log_arg,
        "--index",
        "3",
        "--arguments",
        "{}",
    ]);
    let (stdout, _) = text(&output);
    assert_eq!(output.status.code(), Some(3));
    assert!(stdout.contains("salt was erased"), "{stdout}");
    // The log, its tree head and every other entry are as they were.
    assert_eq!(text(&run(&["audit", "verify", log_arg])).0, head_before);
    let output = run(&[
        "audit",
        "disclose",
        log_arg,
        "--index",
        "4",
        "--arguments",
        "{}",
    ]);
    assert!(output.status.success());
    // Past the end: an error, not a verdict.
    let output = run(&[
        "audit",
        "disclose",
        log_arg,
        "--index",
        "6",
        "--arguments",
        "{}",
    ]);
    assert_eq!(output.status.code(), Some(1));
}

/// `serve` writes a last checkpoint when it stops: with a round only every hour, the calls made
/// after the first one (at start, of an empty log) are covered once the client disconnects.
#[tokio::test]
async fn the_gateway_writes_a_checkpoint_when_it_stops() {
    let work = Work::new("audit-checkpoint-on-stop");
    let key_file = work.path("checkpoint.key");
    let (verifier, _) = text(&run(&[
        "audit",
        "key",
        "--name",
        "gw.example/audit",
        "--out",
        key_file.to_str().unwrap(),
    ]));
    let config = work.hostile_config(
        "serve",
        "[audit]\njsonl = \"audit.jsonl\"\ncheckpoint_key_file = \"checkpoint.key\"\n\
         checkpoint_origin = \"gw.example/audit\"\ncheckpoint_every_s = 3600\n",
    );
    let client = serve(&config).await;
    let checkpoint = work.path("audit.jsonl.checkpoint");
    let size = |note: &str| note.lines().nth(1).and_then(|s| s.parse::<u64>().ok());
    // The round at start, of the empty log; the next is an hour away.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while size(&std::fs::read_to_string(&checkpoint).unwrap_or_default()) != Some(0) {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint at start"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    three_echoes(&client).await;
    let _ = client.cancel().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let note = std::fs::read_to_string(&checkpoint).unwrap_or_default();
        if size(&note) == Some(9) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint on stopping: {note:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let output = run(&[
        "audit",
        "verify-checkpoint",
        work.path("audit.jsonl").to_str().unwrap(),
        "--checkpoint",
        checkpoint.to_str().unwrap(),
        "--key",
        verifier.trim(),
        "--origin",
        "gw.example/audit",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
}

/// Three allowed calls through `client`: 9 audit entries.
async fn three_echoes(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>) {
    for index in 0..3 {
        let (_, is_error) = call(
            client,
            "h__echo",
            serde_json::json!({"text": format!("t{index}")}),
        )
        .await;
        assert!(!is_error);
    }
}
