//! Tool pinning and list changes with a real upstream that rewrites a tool's description (the
//! "rug pull") and drops another, then says its list changed.

use crate::support;

use std::time::{Duration, Instant};

use rmcp::service::{RoleClient, RunningService};
use serde_json::json;
use support::*;

async fn listed(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    names.sort();
    names
}

/// Polls `check` every 100 ms for up to 15 s.
async fn eventually<F: std::future::Future<Output = bool>>(mut check: impl FnMut() -> F) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn a_rewritten_description_is_not_served_until_pinned_and_a_dropped_tool_is_held_until_the_policy_fits()
 {
    let work = Work::new("pinning");
    let config = work.hostile_config("serve", "[gateway]\npolicy_poll_ms = 200\n");
    let client = serve(&config).await;
    // First seen: pinned.
    let pins = work.read("gateway.pins.json");
    assert!(pins.contains("\"echo\": \"sha256:"), "{pins}");
    assert_eq!(
        call(&client, "h__echo", json!({"text": "a"})).await,
        ("echo: a".to_owned(), false)
    );

    let (_, is_error) = call(&client, "h__mutate", json!({})).await;
    assert!(!is_error);
    // The policy still names h__write, which the upstream dropped: the new list does not fit,
    // so the tools in force stay and what changed is held back.
    // (Calls before the gateway has the notification still reach the old echo: harmless.)
    assert!(
        eventually(|| async {
            let (message, is_error) = call(&client, "h__echo", json!({"text": "b"})).await;
            is_error
                && message.contains("changed this tool's definition")
                && message.contains("nothing ran")
        })
        .await,
        "the rewritten echo is held"
    );
    let sent = work.recorded().len();
    let (message, is_error) = call(&client, "h__write", json!({"path": "/x"})).await;
    assert!(
        is_error && message.contains("nothing ran"),
        "the dropped write is held: {message}"
    );
    assert_eq!(work.recorded().len(), sent, "nothing held was sent");
    assert!(!work.recorded().contains(&"write".to_owned()));

    // A policy that no longer names the dropped tool: the new list is put in force; the
    // rewritten echo is still not served (it differs from its pin), the others are.
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "mutate", "tool": "h__mutate", "action": "allow", "reason": "test"}]}"#,
    );
    assert!(
        eventually(|| async { !listed(&client).await.contains(&"h__write".to_owned()) }).await,
        "the list changed"
    );
    assert!(!listed(&client).await.contains(&"h__echo".to_owned()));
    let (message, is_error) = call(&client, "h__echo", json!({"text": "c"})).await;
    assert!(is_error, "{message}");

    // The operator accepts the new definition: the running gateway serves it.
    let output = run(&["pin", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("echo: changed (sha256:"), "{stdout}");
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "echo", "tool": "h__echo", "action": "allow", "reason": "accepted"}]}"#,
    );
    assert!(
        eventually(|| async { !call(&client, "h__echo", json!({"text": "d"})).await.1 }).await,
        "the accepted echo is served"
    );
    assert_eq!(work.recorded().last().map(String::as_str), Some("echo"));
    assert!(!work.recorded().contains(&"write".to_owned()));
}

#[tokio::test]
async fn a_definition_changed_between_starts_is_held_until_pinned_and_the_rest_is_served() {
    let work = Work::new("pinning-restart");
    let admin = free_port();
    let config_path = work.hostile_config(
        "serve",
        &format!("[listen]\nstdio = true\nadmin = \"127.0.0.1:{admin}\"\n"),
    );
    let config = config_path.to_str().unwrap();
    let output = run(&["pin", "--config", config]);
    assert!(output.status.success(), "{:?}", text(&output));
    assert!(
        text(&output).0.contains("upstream h: 5 tools pinned"),
        "{:?}",
        text(&output)
    );
    // The upstream is updated: echo's description rewritten, write gone.
    work.write("record.jsonl.mutated", "");
    // The policy names echo and write: their pinned definitions stand in, held back, and the
    // rest is served. `check` says so as a problem.
    let output = run(&["check", "--config", config]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("upstream h: 3 of 7 tools served"),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "tool \"echo\" of upstream `h` is held back: its definition changed since it was pinned"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "tool \"write\" of upstream `h` is held back: its upstream no longer lists it"
        ),
        "{stderr}"
    );
    let client = serve(&config_path).await;
    for (tool, arguments) in [
        ("h__echo", json!({"text": "a"})),
        ("h__write", json!({"path": "/x"})),
    ] {
        let (message, is_error) = call(&client, tool, arguments).await;
        assert!(
            is_error && message.contains("held back") && message.contains("nothing ran"),
            "{tool}: {message}"
        );
    }
    assert_eq!(
        work.recorded(),
        Vec::<String>::new(),
        "nothing held was sent"
    );
    // The upstream is up, two of its tools are held back: degraded, yet served (200).
    let health = http_get(admin, "/healthz");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(
        health.contains("degraded")
            && health.contains("tool \"echo\" of upstream `h` is held back")
            && health.contains("tool \"write\" of upstream `h` is held back"),
        "{health}"
    );
    let metrics = http_get(admin, "/metrics");
    assert!(
        metrics.contains("toolgate_tools_held_back{upstream=\"h\"} 2"),
        "{metrics}"
    );
    let (message, is_error) = call(&client, "h__mutate", json!({})).await;
    assert!(!is_error, "the rest is served: {message}");
    drop(client);

    // Without rules for the held and dropped tools nothing stands in: echo is left out.
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "crash", "tool": "h__crash", "action": "allow", "reason": "test"}]}"#,
    );
    let output = run(&["check", "--config", config]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stdout.contains("upstream h: 3 of 7 tools served"),
        "{stdout}"
    );
    assert!(
        stdout.contains("left out: \"echo\" of upstream h: its definition changed"),
        "{stdout}"
    );
    let output = run(&["pin", "--config", config]);
    assert!(
        text(&output).0.contains("h: echo: changed (sha256:"),
        "{:?}",
        text(&output)
    );
    let output = run(&["check", "--config", config]);
    assert!(
        text(&output).0.contains("upstream h: 4 of 7 tools served"),
        "{:?}",
        text(&output)
    );
}

#[test]
fn a_pins_file_without_definitions_still_loads_and_a_changed_tool_is_left_out() {
    let work = Work::new("pinning-legacy");
    let config = work.hostile_config("serve", "");
    let config = config.to_str().unwrap();
    assert!(run(&["pin", "--config", config]).status.success());
    // A pins file as earlier versions wrote it: digests only.
    let pins: serde_json::Value = serde_json::from_str(&work.read("gateway.pins.json")).unwrap();
    work.write(
        "gateway.pins.json",
        &json!({"upstreams": pins["upstreams"]}).to_string(),
    );
    assert!(run(&["check", "--config", config]).status.success());
    work.write("record.jsonl.mutated", "");
    // Nothing can stand in for echo: the policy naming it does not load, and says why.
    let output = run(&["check", "--config", config]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("tool \"h__echo\" is not in the registry")
            && stderr.contains(
                "upstream `h`: \"echo\" is not served: its definition changed since it was pinned"
            ),
        "{stderr}"
    );
}
