//! Raw HTTP/1.1 against a gateway serving the hostile upstream over Streamable HTTP, so each
//! header is the test's own: the requests an attacker or an unusual client sends.

use crate::support;

use std::io::{Read as _, Write as _};
use std::time::Duration;

use support::*;

pub const ALICE_KEY: &str = "tg_alice_sessions_0123456789";
pub const BOB_KEY: &str = "tg_bob_sessions_9876543210";

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
pub const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Reply {
    pub fn session(&self) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
    }
}

/// One request on its own connection: `method` `/mcp` with `key`, `headers` and `body`.
pub fn request(port: u16, method: &str, key: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    request_at(port, "/mcp", method, key, headers, body)
}

/// `request` to the MCP endpoint at `path` (a tool set's).
pub fn request_at(
    port: u16,
    path: &str,
    method: &str,
    key: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let bearer = format!("Bearer {key}");
    let mut all = vec![
        ("Authorization", bearer.as_str()),
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("Mcp-Protocol-Version", "2025-11-25"),
    ];
    all.extend_from_slice(headers);
    exchange(port, method, path, &all, body)
}

/// One request on its own connection with exactly `headers` (and `Host: 127.0.0.1` unless they
/// name one), the reply as far as it came within 10 s.
pub fn exchange(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        text.push_str("Host: 127.0.0.1\r\n");
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    stream.write_all(text.as_bytes()).unwrap();
    let mut response = Vec::new();
    // A GET stream that was let in stays open: what arrived before the timeout is enough.
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or((response.as_str(), ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

pub fn open(port: u16, key: &str) -> Reply {
    request(port, "POST", key, &[], INITIALIZE)
}

pub fn opened(port: u16, key: &str) -> String {
    let reply = open(port, key);
    assert_eq!(reply.status, 200, "{}{}", reply.head, reply.body);
    let id = reply.session().expect("a session id");
    let done = request(port, "POST", key, &[("Mcp-Session-Id", &id)], INITIALIZED);
    assert_eq!(done.status, 202, "{}", done.head);
    id
}

pub fn serve_raw(work: &Work, listen: &str) -> (std::process::Child, u16, u16) {
    serve_raw_with(work, listen, &[])
}

/// [`serve_raw`] with `env` set for the gateway.
pub fn serve_raw_with(
    work: &Work,
    listen: &str,
    env: &[(&str, &str)],
) -> (std::process::Child, u16, u16) {
    serve_raw_policy(work, listen, env, None)
}

/// As [`serve_raw_with`], with `policy` in place of the hostile upstream's allow-all policy.
pub fn serve_raw_policy(
    work: &Work,
    listen: &str,
    env: &[(&str, &str)],
    policy: Option<&str>,
) -> (std::process::Child, u16, u16) {
    let (mcp, admin) = (free_port(), free_port());
    let extra = format!(
        "[listen]\nhttp = \"127.0.0.1:{mcp}\"\nadmin = \"127.0.0.1:{admin}\"\n{listen}\n\
         [[clients]]\nid = \"alice\"\napi_key_sha256 = \"{}\"\n\
         [[clients]]\nid = \"bob\"\napi_key_sha256 = \"{}\"\n",
        sha256(ALICE_KEY),
        sha256(BOB_KEY)
    );
    let config = work.hostile_config("serve", &extra);
    if let Some(policy) = policy {
        work.write("policy.json", policy);
    }
    let child = std::process::Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .envs(env.iter().copied())
        .stderr(std::fs::File::create(work.path("gateway.log")).expect("log file"))
        .spawn()
        .expect("the gateway starts");
    wait_for_port(mcp);
    (child, mcp, admin)
}

pub struct Stopped(pub std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub use crate::support::http_get;
