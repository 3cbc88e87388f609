//! A remote upstream over Streamable HTTP: the official Python SDK's server
//! (`tests/mcp/upstream_server.py --http`), which refuses requests without its bearer token, behind
//! the gateway served over stdio.

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::json;
use support::*;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn config(work: &Work, port: u16, token_env: &str) -> std::path::PathBuf {
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "echo", "tool": "r__echo", "action": "allow", "reason": "harmless"},
                      {"id": "no-shell", "tool": "r__shell", "action": "deny", "reason": "no shell"}]}"#,
    );
    work.write(
        "gateway.toml",
        &format!(
            "[upstreams.r]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env = \"{token_env}\"\n\
             headers = {{ \"X-Team\" = \"platform\" }}\n[policy]\nlayers = [\"policy.json\"]\n"
        ),
    )
}

/// `serve --config CONFIG` over stdio, the upstream's token in the environment.
async fn serve_with_token(
    config: &Path,
) -> rmcp::service::RunningService<rmcp::service::RoleClient, ()> {
    let mut command = tokio::process::Command::new(GATEWAY);
    command
        .args(["serve", "--config"])
        .arg(config)
        .env("PATH_TO_NOTHING_BUT_THE_TOKEN", "upstream-secret");
    let transport = rmcp::transport::TokioChildProcess::new(command).unwrap();
    rmcp::ServiceExt::serve((), transport)
        .await
        .expect("handshake")
}

#[tokio::test]
async fn a_remote_upstream_with_a_token_from_the_environment_is_served_gated() {
    let Some(python) = python() else { return };
    let work = Work::new("remote-upstream");
    let port = free_port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/upstream_server.py");
    let _upstream = Killed(
        Command::new(&python)
            .arg(script)
            .args(["--http", &port.to_string(), "upstream-secret"])
            .env("TOOLGATE_MCP_RECORD", work.path("record.jsonl"))
            .stdin(Stdio::null())
            .spawn()
            .expect("the upstream starts"),
    );
    wait_for_port(port);
    std::fs::write(work.path("record.jsonl"), "").unwrap();

    // No token in the environment, then a wrong one: startup fails naming the URL.
    let config_path = config(&work, port, "TOOLGATE_TEST_UNSET_TOKEN");
    let (_, stderr) = text(&run(&["check", "--config", config_path.to_str().unwrap()]));
    assert!(stderr.contains(&format!("upstream `r` (http://127.0.0.1:{port}/mcp) could not be reached: its bearer token variable TOOLGATE_TEST_UNSET_TOKEN is not set")), "{stderr}");
    let output = Command::new(GATEWAY)
        .args(["check", "--config", config_path.to_str().unwrap()])
        .env("TOOLGATE_TEST_UNSET_TOKEN", "wrong")
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr.contains("did not complete the MCP handshake over HTTP"),
        "{stderr}"
    );

    // SAFETY of the environment: this test binary runs this one test, and sets the variable
    // before the gateway child is spawned from it.
    let config_path = config(&work, port, "PATH_TO_NOTHING_BUT_THE_TOKEN");
    let client = serve_with_token(&config_path).await;
    let (message, is_error) = call(&client, "r__echo", json!({"text": "over http"})).await;
    // The SDK declares `{"result": string}` as echo's output: its structuredContent is checked and
    // passed beside the upstream's own text, which reaches the client unchanged.
    assert_eq!((message.as_str(), is_error), ("echo: over http", false));
    let (_, is_error) = call(&client, "r__shell", json!({"command": "id"})).await;
    assert!(is_error);
    let recorded = std::fs::read_to_string(work.path("record.jsonl")).unwrap();
    assert_eq!(recorded.lines().count(), 1, "{recorded}");
    assert!(recorded.contains("over http"));
    // Traces are off: no request carried a trace context.
    assert!(!work.path("record.jsonl.traceparent").exists());
    drop(client);

    // With `[traces]` (to a receiver that is not there: calls go on), the call reaches the
    // upstream with the gateway's trace context as its `traceparent` header, one W3C value.
    std::fs::write(
        work.path("gateway.toml"),
        std::fs::read_to_string(&config_path).unwrap()
            + "[traces]\notlp_endpoint = \"http://127.0.0.1:9/v1/traces\"\n",
    )
    .unwrap();
    let client = serve_with_token(&config_path).await;
    let (message, is_error) = call(&client, "r__echo", json!({"text": "traced"})).await;
    assert_eq!((message.as_str(), is_error), ("echo: traced", false));
    let sent = std::fs::read_to_string(work.path("record.jsonl.traceparent")).unwrap();
    let sent: Vec<&str> = sent.lines().collect();
    assert_eq!(sent.len(), 1, "only the call carries one: {sent:?}");
    let parts: Vec<&str> = sent[0].split('-').collect();
    assert_eq!(
        parts.iter().map(|part| part.len()).collect::<Vec<_>>(),
        [2, 32, 16, 2],
        "{sent:?}"
    );
    assert!(parts[1].chars().any(|digit| digit != '0'), "{sent:?}");
}

/// A remote upstream's reply the SDK's client cannot read — a lone surrogate escape, a result and
/// an error at once — as an SSE event or as a JSON body: the call ends at once saying the upstream
/// answered. (Unchanged, the client reported a JSON body as "could not be sent the call; nothing
/// ran" — false, for a call that ran — and an event as "stopped before answering".)
#[tokio::test]
async fn an_unreadable_reply_over_http_says_the_upstream_answered() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/raw_http_upstream.py");
    for framing in ["sse", "json"] {
        let work = Work::new(&format!("remote-unreadable-{framing}"));
        let port = free_port();
        let _upstream = Killed(
            Command::new("python3")
                .arg(&script)
                .args([&port.to_string(), framing])
                .stdin(Stdio::null())
                .spawn()
                .expect("the upstream starts"),
        );
        wait_for_port(port);
        work.write(
            "policy.json",
            r#"{"rules": [{"id": "echo", "tool": "r__echo", "action": "allow", "reason": "test"}]}"#,
        );
        let config = work.write(
            "gateway.toml",
            &format!(
                "[upstreams.r]\nurl = \"http://127.0.0.1:{port}/mcp\"\n[policy]\nlayers = [\"policy.json\"]\n\
                 [limits]\ncall_timeout_ms = 20000\n"
            ),
        );
        let client = serve(&config).await;
        for (text, why) in [
            (
                "lone-surrogate",
                if framing == "sse" {
                    "lone UTF-16 surrogate escape"
                } else {
                    "not a JSON-RPC message"
                },
            ),
            (
                "result-and-error",
                if framing == "sse" {
                    "a result and an error at once"
                } else {
                    "not a JSON-RPC message"
                },
            ),
        ] {
            let asked = std::time::Instant::now();
            let (message, is_error) = call(&client, "r__echo", json!({"text": text})).await;
            assert!(is_error, "{framing} {text}: {message}");
            assert!(
                message
                    .starts_with("upstream `r` answered the call, but its reply could not be read")
                    && message.contains(why)
                    && message.ends_with("the call may have taken effect"),
                "{framing} {text}: {message}"
            );
            assert!(asked.elapsed() < std::time::Duration::from_secs(10));
        }
        // An HTTP error status after the call ran: it may have taken effect (it said "could not
        // be sent the call; nothing ran" — an independent attack).
        for text in [
            "status-500-text",
            "status-500-json",
            "status-502-text",
            "status-400-json",
        ] {
            let (message, is_error) = call(&client, "r__echo", json!({"text": text})).await;
            let status = &text["status-".len()..text.len() - 5];
            assert!(is_error, "{framing} {text}: {message}");
            assert!(
                message.starts_with(&format!(
                    "upstream `r` answered the call, but its reply was the HTTP status {status}"
                )) && message.ends_with("the call may have taken effect"),
                "{framing} {text}: {message}"
            );
            assert!(!message.contains("nothing ran"), "{message}");
        }
        // The connection closed after the call reached the upstream: it may have run too (it
        // said "nothing ran": a second attack).
        for text in ["drop-none", "drop-partial"] {
            let (message, is_error) = call(&client, "r__echo", json!({"text": text})).await;
            assert!(is_error, "{framing} {text}: {message}");
            assert_eq!(
                message,
                "upstream `r` stopped before answering; whether the call took effect is unknown",
                "{framing} {text}"
            );
        }
        let (message, is_error) = call(&client, "r__echo", json!({"text": "after"})).await;
        assert_eq!(
            (message.as_str(), is_error),
            ("echo: after", false),
            "{framing}"
        );
    }
}

/// A loopback HTTP server on a free port answering every request with `answer`, counting them.
async fn counting_server(
    answer: impl Fn() -> axum::response::Response + Clone + Send + Sync + 'static,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&seen);
    let router = axum::Router::new().fallback(move || {
        let (counted, answer) = (std::sync::Arc::clone(&counted), answer.clone());
        async move {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            answer()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (port, seen)
}

#[tokio::test]
async fn a_redirecting_upstream_is_not_followed_so_no_call_or_token_goes_elsewhere() {
    use axum::response::IntoResponse as _;
    let (elsewhere, reached) = counting_server(|| axum::http::StatusCode::OK.into_response()).await;
    let target = format!("http://127.0.0.1:{elsewhere}/mcp");
    let (redirecting, asked) = counting_server(move || {
        (
            axum::http::StatusCode::TEMPORARY_REDIRECT,
            [(axum::http::header::LOCATION, target.clone())],
        )
            .into_response()
    })
    .await;
    let work = Work::new("remote-redirect");
    let config_path = config(&work, redirecting, "TOOLGATE_TEST_REDIRECT_TOKEN");
    let output = tokio::process::Command::new(GATEWAY)
        .args(["check", "--config"])
        .arg(&config_path)
        .env("TOOLGATE_TEST_REDIRECT_TOKEN", "upstream-secret")
        .output()
        .await
        .expect("check runs");
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("did not complete the MCP handshake over HTTP"),
        "{stderr}"
    );
    assert!(asked.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the redirect's target was never called"
    );
}
