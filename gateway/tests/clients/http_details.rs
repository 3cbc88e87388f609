//! The HTTP details of both listeners, each a class tried in its spellings: a browser's `Origin`
//! on `/mcp` (a page on a sibling port of the same host), the admin listener's `Host`, the bearer
//! scheme's case, a refused credential's log line and metric, `/metrics` by `Accept`, and a
//! refusal that leaves the body unread ending its connection, saying so.

use crate::raw::*;
use crate::support;

use support::*;

#[test]
fn a_browser_origin_is_refused_on_mcp_unless_listed() {
    let work = Work::new("http-origin");
    let (child, port, _) = serve_raw(&work, "");
    let _stopped = Stopped(child);
    // A page on another port of the same host, on another host, `null`, and odd spellings.
    for origin in [
        "http://127.0.0.1:5173",
        "http://localhost:8080",
        "https://evil.example",
        "null",
        "",
        "HTTP://LOCALHOST",
    ] {
        let reply = request(port, "POST", ALICE_KEY, &[("Origin", origin)], INITIALIZE);
        assert_eq!(reply.status, 403, "Origin {origin:?}: {}", reply.head);
        assert!(reply.session().is_none());
    }
    // Before the key is even read: no credential, a browser origin, 403.
    let reply = exchange(
        port,
        "POST",
        "/mcp",
        &[("Origin", "http://127.0.0.1:5173")],
        INITIALIZE,
    );
    assert_eq!(reply.status, 403);
    // Clients that are not browsers send no Origin.
    assert_eq!(open(port, ALICE_KEY).status, 200);
    drop(_stopped);

    let work = Work::new("http-origin-listed");
    let (child, port, _) = serve_raw(
        &work,
        "allowed_origins = [\"http://localhost:5173\", \"https://app.example\", \"https://any.example:*\"]\n",
    );
    let _stopped = Stopped(child);
    for origin in [
        "http://localhost:5173",
        "https://app.example",
        "https://app.example:443",
        "https://any.example:8443",
    ] {
        let reply = request(port, "POST", ALICE_KEY, &[("Origin", origin)], INITIALIZE);
        assert_eq!(reply.status, 200, "listed {origin:?}: {}", reply.head);
    }
    for origin in [
        "http://localhost:5174",
        "https://localhost:5173",
        "http://app.example",
        "null",
        "http://localhost:5173.evil.example",
        // A listed origin without a port is its default port, not every port.
        "https://app.example:8443",
    ] {
        let reply = request(port, "POST", ALICE_KEY, &[("Origin", origin)], INITIALIZE);
        assert_eq!(reply.status, 403, "not listed {origin:?}: {}", reply.head);
    }
}

#[test]
fn allowed_origins_that_are_not_origins_are_refused_naming_the_key() {
    for bad in [
        "null",
        "localhost:5173",
        "ftp://x",
        "http://",
        "http://a/b",
        "http://u@a",
        "http://a:1:*",
    ] {
        let work = Work::new("http-origin-bad");
        let config = work.hostile_config(
            "serve",
            &format!("[listen]\nhttp = \"127.0.0.1:1\"\nallowed_origins = [{bad:?}]\n[[clients]]\nid = \"a\"\napi_key_sha256 = \"{}\"\n", sha256("k")),
        );
        let output = run(&["check", "--config", config.to_str().unwrap()]);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(1), "{bad:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("listen.allowed_origins[0]"),
            "{bad:?}: {stderr}"
        );
    }
}

#[test]
fn the_admin_listener_answers_only_allowed_hosts() {
    let work = Work::new("http-admin-host");
    let (child, _, admin) = serve_raw(&work, "");
    let _stopped = Stopped(child);
    let port_host = format!("127.0.0.1:{admin}");
    for host in [
        port_host.as_str(),
        "127.0.0.1",
        "LOCALHOST",
        "[::1]:9",
        "localhost:1",
    ] {
        for path in ["/metrics", "/healthz", "/approvals"] {
            let reply = exchange(admin, "GET", path, &[("Host", host)], "");
            assert_ne!(reply.status, 403, "{host} {path}: {}", reply.head);
        }
    }
    for host in [
        "evil.example",
        "127.0.0.1.evil.example",
        "localhost.evil.example:80",
        "",
        "[::2]:9",
    ] {
        for path in [
            "/metrics",
            "/healthz",
            "/approvals",
            "/approvals/api/pending",
        ] {
            let reply = exchange(admin, "GET", path, &[("Host", host)], "");
            assert_eq!(reply.status, 403, "{host:?} {path}: {}", reply.head);
        }
    }
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_refusals_are_logged_and_counted() {
    let work = Work::new("http-bearer");
    let (child, port, admin) = serve_raw(&work, "");
    let _stopped = Stopped(child);
    let mcp_headers = |authorization: &'static str| {
        [
            ("Authorization", authorization),
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
        ]
    };
    let key_in = |scheme: &str| format!("{scheme} {ALICE_KEY}");
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let authorization: &'static str = key_in(scheme).leak();
        let reply = exchange(
            port,
            "POST",
            "/mcp",
            &mcp_headers(authorization),
            INITIALIZE,
        );
        assert_eq!(reply.status, 200, "{scheme}: {}", reply.head);
    }
    let wrong: &'static str = "Bearer tg_not_a_key_of_anyone";
    for _ in 0..3 {
        let reply = exchange(port, "POST", "/mcp", &mcp_headers(wrong), INITIALIZE);
        assert_eq!(reply.status, 401);
    }
    let basic: &'static str = key_in("Basic").leak();
    assert_eq!(
        exchange(port, "POST", "/mcp", &mcp_headers(basic), INITIALIZE).status,
        401
    );
    let metrics = http_get(admin, "/metrics");
    assert!(
        metrics.contains("toolgate_sign_ins_refused_total{outcome=\"unknown\"} 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolgate_sign_ins_refused_total{outcome=\"missing\"} 1"),
        "{metrics}"
    );
    let log = work.read("gateway.log");
    assert_eq!(
        log.matches("a request to /mcp was refused (401)").count(),
        4,
        "{log}"
    );
    assert!(
        !log.contains("tg_not_a_key_of_anyone"),
        "the credential is never logged"
    );
}

#[test]
fn metrics_are_served_in_the_format_the_scraper_accepts() {
    let work = Work::new("http-metrics-accept");
    let (child, port, admin) = serve_raw(&work, "");
    let _stopped = Stopped(child);
    let _ = open(port, "not-a-key");
    let classic = exchange(
        admin,
        "GET",
        "/metrics",
        &[("Accept", "text/plain;version=0.0.4")],
        "",
    );
    assert!(
        classic.head.contains("text/plain; version=0.0.4"),
        "{}",
        classic.head
    );
    assert!(
        classic
            .body
            .contains("# TYPE toolgate_sign_ins_refused_total counter"),
        "{}",
        classic.body
    );
    assert!(!classic.body.contains("# EOF"));
    let plain = exchange(admin, "GET", "/metrics", &[], "");
    assert!(plain.head.contains("text/plain; version=0.0.4"));
    let open_metrics = exchange(
        admin,
        "GET",
        "/metrics",
        &[(
            "Accept",
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
        )],
        "",
    );
    assert!(
        open_metrics.head.contains("application/openmetrics-text"),
        "{}",
        open_metrics.head
    );
    assert!(
        open_metrics
            .body
            .contains("# TYPE toolgate_sign_ins_refused counter")
    );
    assert!(open_metrics.body.contains("# EOF"));
}

#[test]
fn a_refused_token_cannot_forge_a_log_line() {
    let Some(python) = python() else { return };
    let work = Work::new("http-jwt-log");
    let made = std::process::Command::new(&python)
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/jwt_tokens.py"))
        .args([
            work.dir.to_str().unwrap(),
            "https://idp.example.test",
            "toolgate-gateway",
        ])
        .output()
        .expect("python runs");
    assert!(made.status.success(), "{:?}", text(&made));
    let (child, port, _) = serve_raw(
        &work,
        "\n[jwt]\njwks_file = \"jwks.json\"\nissuer = \"https://idp.example.test\"\naudience = \"toolgate-gateway\"\n",
    );
    let _stopped = Stopped(child);
    // The token's header names an `alg` holding a line break and a line of the attacker's own;
    // the JWT library quotes an unknown `alg` in its error.
    for forged in [
        "X\nFORGED-LINE approval granted by admin",
        "X\r\nFORGED-LINE approval granted by admin",
        "X\u{2028}FORGED-LINE approval granted by admin",
        "X\u{1b}[2KFORGED-LINE approval granted by admin",
    ] {
        let header = serde_json::json!({"alg": forged, "typ": "JWT"}).to_string();
        let token = format!("{}.e30.AAAA", base64url(header.as_bytes()));
        let reply = request(port, "POST", &token, &[], INITIALIZE);
        assert_eq!(reply.status, 401, "{forged:?}");
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let log = work.read("gateway.log");
    assert!(log.contains("a bearer token was refused"), "{log}");
    for line in log.lines() {
        assert!(
            !line.trim_start().starts_with("FORGED-LINE") && !line.contains('\u{1b}'),
            "a forged line or a raw escape: {line:?}"
        );
    }
    assert!(!log.contains('\u{2028}'), "a raw line separator");
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for index in 0..=chunk.len() {
            out.push(char::from(
                ALPHABET[((n >> (18 - 6 * index)) & 63) as usize],
            ));
        }
    }
    out
}

#[test]
fn a_client_marked_page_sign_in_false_cannot_sign_in_and_the_refusal_is_logged_and_counted() {
    let work = Work::new("http-page-sign-in");
    const MODEL_KEY: &str = "tg_model_key_0123456789";
    let (child, port, admin) = serve_raw(
        &work,
        &format!(
            "\n[[clients]]\nid = \"model\"\npage_sign_in = false\napi_key_sha256 = \"{}\"\n",
            sha256(MODEL_KEY)
        ),
    );
    let _stopped = Stopped(child);
    // The model's key still calls /mcp.
    assert_eq!(open(port, MODEL_KEY).status, 200);
    let host = format!("127.0.0.1:{admin}");
    let origin = format!("http://{host}");
    let login = |key: &str| {
        exchange(
            admin,
            "POST",
            "/approvals/api/login",
            &[
                ("Host", host.as_str()),
                ("Origin", origin.as_str()),
                ("Content-Type", "application/json"),
            ],
            &serde_json::json!({"credential": key}).to_string(),
        )
    };
    assert_eq!(
        login(MODEL_KEY).status,
        401,
        "the model's key signs no one in"
    );
    assert_eq!(login(ALICE_KEY).status, 200, "a person's key does");
    let metrics = http_get(admin, "/metrics");
    assert!(
        metrics.contains("toolgate_sign_ins_refused_total{outcome=\"page\"} 1"),
        "{metrics}"
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    let log = work.read("gateway.log");
    assert!(
        log.contains("a sign-in to the approval page was refused"),
        "{log}"
    );
    assert!(!log.contains(MODEL_KEY));
}

/// A request sent on a kept-alive connection (no `Connection: close`): the whole answer as far
/// as it came within `wait`, and whether the gateway then closed the connection.
fn kept_alive(port: u16, headers: &str, body: &str, wait: u64) -> (String, bool) {
    kept_alive_at(port, "/mcp", headers, body, wait)
}

/// [`kept_alive`] at `path`.
fn kept_alive_at(port: u16, path: &str, headers: &str, body: &str, wait: u64) -> (String, bool) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(wait)))
        .unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0; 4096];
    let closed = loop {
        match stream.read(&mut buffer) {
            Ok(0) => break true,
            Ok(read) => answer.extend_from_slice(&buffer[..read]),
            Err(_) => break false,
        }
    };
    (String::from_utf8_lossy(&answer).into_owned(), closed)
}

#[test]
fn every_refusal_says_the_connection_closes_whichever_layer_answers_it() {
    let work = Work::new("http-refusal-closes");
    let (child, port, _) = serve_raw(&work, "");
    let _stopped = Stopped(child);
    // No credential, and an unknown one: the body is never read, and the connection ends with
    // the answer — said in it, so a client sends its next request on another (the Python SDK's
    // OAuth client, reusing it for discovery at once, met it closing on a loaded machine).
    for headers in ["", "Authorization: Bearer tg_not_a_key_of_anyone\r\n"] {
        let (answer, closed) = kept_alive(port, headers, INITIALIZE, 10);
        let head = answer
            .split("\r\n\r\n")
            .next()
            .unwrap()
            .to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 401"), "{answer}");
        assert!(head.contains("\r\nconnection: close"), "{head}");
        assert!(closed, "{head}");
    }
    // Refused by the layers before authentication: a browser's origin, a path of no endpoint.
    let key = format!("Authorization: Bearer {ALICE_KEY}\r\n");
    for (path, headers, status) in [
        (
            "/mcp",
            format!("{key}Origin: http://127.0.0.1:5173\r\n"),
            "403",
        ),
        ("/mcp/", key.clone(), "404"),
    ] {
        let (answer, closed) = kept_alive_at(port, path, &headers, INITIALIZE, 10);
        let head = answer
            .split("\r\n\r\n")
            .next()
            .unwrap()
            .to_ascii_lowercase();
        assert!(head.starts_with(&format!("http/1.1 {status}")), "{head}");
        assert!(head.contains("\r\nconnection: close"), "{head}");
        assert!(closed, "{head}");
    }
    // A body past 4 MiB: read in part, refused, the connection ends, said so.
    let large = format!("{{\"pad\": \"{}\"}}", "a".repeat(5 << 20));
    let (answer, closed) = kept_alive(
        port,
        &format!("Authorization: Bearer {ALICE_KEY}\r\n"),
        &large,
        10,
    );
    let head = answer
        .split("\r\n\r\n")
        .next()
        .unwrap()
        .to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 413"), "{head}");
    assert!(head.contains("\r\nconnection: close"), "{head}");
    assert!(closed);
    // An accepted request keeps its connection open: the next answer would come on it.
    let (answer, closed) = kept_alive(
        port,
        &format!("Authorization: Bearer {ALICE_KEY}\r\n"),
        INITIALIZE,
        2,
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(!answer.to_ascii_lowercase().contains("connection: close"));
    assert!(
        !closed,
        "the gateway closed a kept-alive connection after a 200"
    );
}
