//! Approvals outlive the gateway: by default a waiting approval is kept in a SQLite file and the
//! request-state key in a key file beside the config, so a call held for a person (MCP
//! 2026-07-28: `input_required` with a sealed `requestState`) can be answered after a restart,
//! once; a replayed, altered or re-targeted state still opens nothing.

use crate::support;

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    Implementation, InputResponses, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, RoleClient, RunningService, serve_client_with_lifecycle};
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use support::{GATEWAY, Work};

/// A client that can be asked (form elicitation), speaking 2026-07-28.
#[derive(Clone)]
struct Person;

impl rmcp::ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("person", "0"),
        )
    }
}

async fn start(config: &std::path::Path) -> RunningService<RoleClient, Person> {
    let mut command = tokio::process::Command::new(GATEWAY);
    command.arg("serve").arg("--config").arg(config);
    let transport = TokioChildProcess::new(command).expect("spawn the gateway");
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    tokio::time::timeout(
        Duration::from_secs(30),
        serve_client_with_lifecycle(Person, transport, lifecycle),
    )
    .await
    .expect("the gateway answers in time")
    .expect("handshake")
}

fn echo(text: &str) -> CallToolRequestParams {
    let arguments = json!({"text": text})
        .as_object()
        .cloned()
        .unwrap_or_default();
    CallToolRequestParams::new("h__echo").with_arguments(arguments)
}

async fn retry(
    client: &RunningService<RoleClient, Person>,
    text: &str,
    state: &str,
) -> CallToolResult {
    let mut responses = InputResponses::new();
    responses.insert(
        "toolgate_approval".into(),
        json!({"action": "accept", "content": {}}),
    );
    let mut params = echo(text).with_input_responses(responses);
    params.request_state = Some(state.to_owned());
    match client.call_tool_once(params).await.expect("a reply") {
        CallToolResponse::Complete(result) => result,
        _ => panic!("expected a final result"),
    }
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect()
}

#[tokio::test]
async fn a_held_call_is_approved_after_a_restart_once_and_a_forged_state_opens_nothing() {
    let work = Work::new("approvals-restart");
    let config = work.asking_config("");

    let first = start(&config).await;
    let held = first
        .call_tool_once(echo("after restart"))
        .await
        .expect("a reply");
    let CallToolResponse::InputRequired(required) = held else {
        panic!("expected input_required")
    };
    let state = required.request_state.expect("a request state");
    let _ = first.cancel().await;
    assert!(work.recorded().is_empty(), "nothing ran before the answer");
    assert!(work.path("gateway.approvals.sqlite").exists());
    assert!(work.path("gateway.state-key").exists());

    let second = start(&config).await;
    // Re-targeted (other arguments) or altered in one character: refused, nothing ran.
    let mut altered = state.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("ascii");
    for (text_sent, state_sent) in [
        ("something else", state.as_str()),
        ("after restart", &altered),
    ] {
        let refused = retry(&second, text_sent, state_sent).await;
        assert_eq!(refused.is_error, Some(true));
        assert!(text(&refused).starts_with("refused"), "{}", text(&refused));
    }
    assert!(work.recorded().is_empty());
    // The genuine answer, after the restart: the call runs once.
    let ran = retry(&second, "after restart", &state).await;
    assert_eq!(
        (text(&ran).as_str(), ran.is_error),
        ("echo: after restart", Some(false))
    );
    assert_eq!(work.recorded(), ["echo"]);
    // Replayed, after another restart: nothing runs again.
    let _ = second.cancel().await;
    let third = start(&config).await;
    let replayed = retry(&third, "after restart", &state).await;
    assert_eq!(replayed.is_error, Some(true), "{}", text(&replayed));
    assert_eq!(work.recorded(), ["echo"]);
    let _ = third.cancel().await;
}

#[tokio::test]
async fn a_state_sealed_before_a_rotation_opens_after_it_and_not_once_its_key_is_dropped() {
    let work = Work::new("approvals-rotation");
    let config = work.asking_config("");
    let client = start(&config).await;
    let mut states = Vec::new();
    for text in ["one", "two"] {
        let CallToolResponse::InputRequired(required) =
            client.call_tool_once(echo(text)).await.expect("a reply")
        else {
            panic!("expected input_required")
        };
        states.push(required.request_state.expect("a request state"));
    }
    let _ = client.cancel().await;

    let rotate = |expected: &str| {
        let output = std::process::Command::new(GATEWAY)
            .args(["state-key", "rotate", "--config"])
            .arg(&config)
            .output()
            .expect("rotate");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains(expected), "{stdout}");
    };
    rotate("0 older key(s) dropped");
    let client = start(&config).await;
    let ran = retry(&client, "one", &states[0]).await;
    assert_eq!(text(&ran), "echo: one", "the previous key still opens");
    let _ = client.cancel().await;

    // A second rotation drops the key that sealed the states: the other one opens nothing.
    rotate("1 older key(s) dropped");
    let client = start(&config).await;
    let refused = retry(&client, "two", &states[1]).await;
    assert!(text(&refused).starts_with("refused"), "{}", text(&refused));
    assert_eq!(work.recorded(), ["echo"]);
    let _ = client.cancel().await;
}
