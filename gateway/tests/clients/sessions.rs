//! Streamable HTTP sessions (2025-11-25 revision) as an attacker holding a key of its own sees
//! them: a session answers only the principal that opened it (every method, every spelling of the
//! header), sessions are capped per principal and in all, idle ones are closed, and memory stays
//! bounded however many sessions one key asks for. Raw HTTP, so each header is the test's own.

use crate::support;

use std::io::{Read as _, Write as _};
use std::time::{Duration, Instant};

use support::*;

const ALICE_KEY: &str = "tg_alice_sessions_0123456789";
const BOB_KEY: &str = "tg_bob_sessions_9876543210";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn session(&self) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
    }
}

/// One request on its own connection: `method` `/mcp` with `key`, `headers` and `body`.
fn request(port: u16, method: &str, key: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut text = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Authorization: Bearer {key}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
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

fn open(port: u16, key: &str) -> Reply {
    request(port, "POST", key, &[], INITIALIZE)
}

fn opened(port: u16, key: &str) -> String {
    let reply = open(port, key);
    assert_eq!(reply.status, 200, "{}{}", reply.head, reply.body);
    let id = reply.session().expect("a session id");
    let done = request(port, "POST", key, &[("Mcp-Session-Id", &id)], INITIALIZED);
    assert_eq!(done.status, 202, "{}", done.head);
    id
}

fn serve(work: &Work, listen: &str) -> (std::process::Child, u16, u16) {
    let (mcp, admin) = (free_port(), free_port());
    let extra = format!(
        "[listen]\nhttp = \"127.0.0.1:{mcp}\"\nadmin = \"127.0.0.1:{admin}\"\n{listen}\n\
         [[clients]]\nid = \"alice\"\napi_key_sha256 = \"{}\"\n\
         [[clients]]\nid = \"bob\"\napi_key_sha256 = \"{}\"\n",
        sha256(ALICE_KEY),
        sha256(BOB_KEY)
    );
    let config = work.hostile_config("serve", &extra);
    let child = std::process::Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the gateway starts");
    wait_for_port(mcp);
    (child, mcp, admin)
}

struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_session_answers_only_the_principal_that_opened_it() {
    let work = Work::new("sessions-bound");
    let (child, port, _) = serve(&work, "");
    let _stopped = Stopped(child);
    let alice = opened(port, ALICE_KEY);
    // Bob, with a key of his own and Alice's session id: every method is told "no such
    // session", as for an id nobody opened — in any case of the header's name.
    for name in ["Mcp-Session-Id", "mcp-session-id", "MCP-SESSION-ID"] {
        for (method, body) in [("POST", LIST), ("GET", ""), ("DELETE", "")] {
            let reply = request(port, method, BOB_KEY, &[(name, &alice)], body);
            assert_eq!(reply.status, 404, "bob {method} {name}: {}", reply.head);
        }
    }
    let unknown = request(
        port,
        "POST",
        BOB_KEY,
        &[("Mcp-Session-Id", "no-such-session")],
        LIST,
    );
    assert_eq!(unknown.status, 404);
    // Spellings of the id that are not Alice's are not Alice's session either (spaces around a
    // header value are not part of it in HTTP, so they are not another spelling).
    for spelled in [
        alice.to_uppercase(),
        format!("{alice}0"),
        alice[1..].to_owned(),
        format!("{alice}\u{200b}"),
        format!("{alice},{alice}"),
    ] {
        let reply = request(
            port,
            "POST",
            ALICE_KEY,
            &[("Mcp-Session-Id", &spelled)],
            LIST,
        );
        assert_eq!(reply.status, 404, "{spelled:?}");
    }
    // Alice's session was neither read nor ended by Bob.
    let listed = request(port, "POST", ALICE_KEY, &[("Mcp-Session-Id", &alice)], LIST);
    assert_eq!(listed.status, 200, "{}", listed.head);
    assert!(listed.body.contains("h__echo"), "{}", listed.body);
    // Alice ends it: 200 (the SDKs log a 202 as a failed termination); then it is gone.
    let ended = request(port, "DELETE", ALICE_KEY, &[("Mcp-Session-Id", &alice)], "");
    assert_eq!(ended.status, 200, "{}", ended.head);
    let gone = request(port, "POST", ALICE_KEY, &[("Mcp-Session-Id", &alice)], LIST);
    assert_eq!(gone.status, 404);
}

#[test]
fn sessions_are_capped_per_principal_and_in_all_and_idle_ones_close() {
    let work = Work::new("sessions-capped");
    let (child, port, admin) = serve(
        &work,
        "max_sessions = 5\nmax_sessions_per_principal = 3\nsession_idle_timeout_s = 3\n",
    );
    let _stopped = Stopped(child);
    let alice: Vec<String> = (0..3).map(|_| opened(port, ALICE_KEY)).collect();
    let refused = open(port, ALICE_KEY);
    assert_eq!(refused.status, 429, "{}", refused.head);
    assert!(
        refused.body.contains("listen.max_sessions_per_principal"),
        "{}",
        refused.body
    );
    assert!(refused.session().is_none());
    let bob: Vec<String> = (0..2).map(|_| opened(port, BOB_KEY)).collect();
    let refused = open(port, BOB_KEY);
    assert_eq!(refused.status, 429);
    assert!(
        refused.body.contains("listen.max_sessions"),
        "{}",
        refused.body
    );
    let metrics = http_get(admin, "/metrics");
    assert!(
        metrics.contains("toolgate_mcp_sessions_open 5"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolgate_mcp_sessions_refused_total{outcome=\"cap\"} 2"),
        "{metrics}"
    );
    // Ending one frees its place.
    let ended = request(port, "DELETE", BOB_KEY, &[("Mcp-Session-Id", &bob[0])], "");
    assert_eq!(ended.status, 200);
    let again = opened(port, BOB_KEY);
    // Keep one of Alice's in use past the timeout; the rest go idle and are closed.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(6) {
        let used = request(
            port,
            "POST",
            ALICE_KEY,
            &[("Mcp-Session-Id", &alice[0])],
            LIST,
        );
        assert_eq!(used.status, 200, "a session in use stays open");
        std::thread::sleep(Duration::from_millis(500));
    }
    for id in [&alice[1], &alice[2], &bob[1], &again] {
        let owner = if alice.contains(id) {
            ALICE_KEY
        } else {
            BOB_KEY
        };
        let reply = request(port, "POST", owner, &[("Mcp-Session-Id", id)], LIST);
        assert_eq!(reply.status, 404, "idle session {id} still open");
    }
    let metrics = http_get(admin, "/metrics");
    assert!(
        metrics.contains("toolgate_mcp_sessions_open 1"),
        "{metrics}"
    );
    // With the idle ones closed, Alice may open two more again.
    opened(port, ALICE_KEY);
    opened(port, ALICE_KEY);
}

#[test]
fn memory_stays_bounded_however_many_sessions_one_key_asks_for() {
    let work = Work::new("sessions-memory");
    let (child, port, _) = serve(&work, "");
    let pid = child.id();
    let _stopped = Stopped(child);
    // Warm up: the first sessions allocate what every later one reuses.
    for _ in 0..40 {
        let _ = open(port, ALICE_KEY);
    }
    let before = rss_kib(pid);
    let mut refused = 0;
    for _ in 0..3000 {
        if open(port, ALICE_KEY).status == 429 {
            refused += 1;
        }
    }
    let after = rss_kib(pid);
    println!("resident memory: {before} KiB before 3,000 refused sessions, {after} KiB after");
    // 32 sessions at most (the default per principal) were ever open.
    assert_eq!(refused, 3000, "every request past the cap is refused");
    // 8,000 sessions took 860 MB before the cap; 3,000 refused ones may not take 32 MB.
    assert!(
        after < before + 32 * 1024,
        "resident memory grew from {before} KiB to {after} KiB"
    );
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// A plain HTTP/1.1 GET, the whole response as text.
fn http_get(port: u16, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}
