//! The library's `mcp::Upstream` against a hostile server (`tests/fixtures/hostile_upstream.py`,
//! plain JSON-RPC over stdio): nothing it sends makes its client wait or grow without bound —
//! a silent handshake, endless or repeating `tools/list` cursors, a 5 MiB reply, a 100,000-character
//! refusal, a call never answered. Each bound ends in an error that says what happened.
#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate::mcp::{Upstream, UpstreamLimits};
use toolgate::*;

fn command(mode: &str) -> tokio::process::Command {
    let python = std::env::var_os("TOOLGATE_MCP_PYTHON")
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| "python3".into());
    let mut command = tokio::process::Command::new(python);
    command
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/hostile_upstream.py"
        ))
        .arg(mode);
    command
}

fn limits() -> UpstreamLimits {
    let mut limits = UpstreamLimits::default();
    limits.handshake_timeout = Duration::from_secs(2);
    limits.list_timeout = Duration::from_secs(5);
    limits.max_list_pages = 20;
    limits.call_timeout = Duration::from_secs(2);
    limits
}

fn error_text(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn a_silent_handshake_ends_at_its_bound() {
    let started = Instant::now();
    let error = Upstream::spawn_with(command("silent"), limits())
        .await
        .unwrap_err();
    assert!(
        error_text(&error).contains("no answer to the handshake within 2000 ms"),
        "{}",
        error_text(&error)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn endless_and_repeating_cursors_end_the_listing() {
    for (mode, expected) in [
        ("endless", "more than 20 pages"),
        ("repeat", "the same cursor twice"),
    ] {
        let upstream = Upstream::spawn_with(command(mode), limits()).await.unwrap();
        let error = upstream.import_tools().await.unwrap_err();
        assert!(
            error_text(&error).contains(expected),
            "{mode}: {}",
            error_text(&error)
        );
    }
}

#[tokio::test]
async fn a_huge_reply_a_huge_refusal_and_no_reply_end_the_call_and_say_what_ran() {
    let upstream = Upstream::spawn_with(command("ok"), limits()).await.unwrap();
    let (registry, skipped) = upstream.import_tools().await.unwrap();
    assert!(skipped.is_empty());
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "t", "tool": "t", "action": "allow", "reason": "test"}]}"#,
        &registry,
    )
    .unwrap();
    let controller = Arc::new(ToolController::new(registry, policy));
    let call = |reply: &str| ToolCall::new("c", "t", json!({ "reply": reply }));
    let outcome = |reply: &'static str| {
        let controller = Arc::clone(&controller);
        async move {
            match controller.handle_async(call(reply)).await {
                Outcome::Completed(result) => result,
                Outcome::PendingApproval(_) => panic!("allowed"),
            }
        }
    };
    let fine = outcome("fine").await;
    assert!(!fine.is_error, "{fine:?}");

    let started = Instant::now();
    let huge = outcome("huge").await;
    assert!(huge.is_error);
    let message = huge.content.to_string();
    assert!(
        message.contains("ran the call") && message.contains(&format!("{} bytes", 4 << 20)),
        "{message}"
    );
    let refused = outcome("refuse").await;
    let message = refused.content.to_string();
    assert!(
        refused.is_error && message.contains("refused the call"),
        "{}",
        &message[..200.min(message.len())]
    );
    assert!(message.len() < 5_000, "cut: {} bytes", message.len());
    let slow = outcome("slow").await;
    let message = slow.content.to_string();
    assert!(
        slow.is_error && message.contains("did not answer within 2000 ms"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "each bound ended its call"
    );
    // The session survives all three.
    assert!(!outcome("after").await.is_error);
}
