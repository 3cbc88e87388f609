//! Webhooks: each held call is posted without its argument values (or with them, when configured),
//! and an unreachable webhook fails no call while the approval still waits.

use super::*;

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
