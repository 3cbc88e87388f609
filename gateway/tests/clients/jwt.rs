//! Callers identified by JSON Web Tokens: a JWK Set with an Ed25519 and an RSA key, tokens made
//! with PyJWT (`tests/mcp/jwt_tokens.py`). Every bad token gets 401; the good ones drive the
//! same checks as API keys (`tests/mcp/http_client.py`: principals judged by rules, another
//! principal's approval refused, audit naming the caller).

use crate::support;

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::Command;

use support::*;

const ISSUER: &str = "https://idp.example.test";
const AUDIENCE: &str = "toolgate-gateway";

/// The status line of an authenticated `initialize` POST.
pub(crate) fn status_with(port: u16, token: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.lines().next().unwrap_or_default().to_owned()
}

#[test]
fn tokens_verified_against_the_key_set_name_the_principal_and_every_bad_one_gets_401() {
    let Some(python) = python() else { return };
    let work = Work::new("http-jwt");
    let made = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/jwt_tokens.py"))
        .args([work.dir.to_str().unwrap(), ISSUER, AUDIENCE])
        .output()
        .expect("python runs");
    assert!(made.status.success(), "{:?}", text(&made));
    let tokens: serde_json::Value = serde_json::from_str(&work.read("tokens.json")).unwrap();
    let served = serve_http(
        &work,
        &format!(
            "[jwt]\njwks_file = \"jwks.json\"\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\n"
        ),
    );
    for (why, token) in tokens["bad"].as_object().unwrap() {
        let status = status_with(served.mcp, token.as_str().unwrap());
        assert!(
            status.starts_with("HTTP/1.1 401"),
            "a token with {why}: {status}"
        );
    }
    for good in ["alice", "bob"] {
        let status = status_with(served.mcp, tokens[good].as_str().unwrap());
        assert!(status.starts_with("HTTP/1.1 200"), "{good}: {status}");
    }
    a_page_session_never_outlives_its_token(served.mcp, served.admin, &tokens);
    let output = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/http_client.py"))
        .arg(format!("http://127.0.0.1:{}/mcp", served.mcp))
        .args([
            tokens["alice"].as_str().unwrap(),
            tokens["bob"].as_str().unwrap(),
        ])
        .arg(&work.dir)
        .arg("2026-07-28")
        .output()
        .expect("python runs");
    let (stdout, stderr) = text(&output);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("14 passed, 0 failed"), "{stdout}");
}

/// The approval page signs people in with the same tokens; a session's cookie and the server's
/// own expiry are cut at the token's `exp` (not the page's 8 hours), and a token the MCP listener
/// still takes within its leeway opens no page session.
fn a_page_session_never_outlives_its_token(mcp: u16, admin: u16, tokens: &serde_json::Value) {
    let host = format!("127.0.0.1:{admin}");
    let origin = format!("http://{host}");
    let sign_in = |token: &str| {
        crate::raw::exchange(
            admin,
            "POST",
            "/approvals/api/login",
            &[
                ("Host", host.as_str()),
                ("Origin", origin.as_str()),
                ("Content-Type", "application/json"),
            ],
            &serde_json::json!({ "credential": token }).to_string(),
        )
    };
    let max_age = |reply: &crate::raw::Reply| -> u64 {
        let line = reply
            .head
            .lines()
            .find(|line| line.to_ascii_lowercase().starts_with("set-cookie:"))
            .expect("a session cookie");
        line.split("; ")
            .find_map(|attribute| attribute.strip_prefix("Max-Age="))
            .expect("Max-Age")
            .trim()
            .parse()
            .unwrap()
    };
    let ten_minutes = sign_in(tokens["alice"].as_str().unwrap());
    assert_eq!(ten_minutes.status, 200, "{}", ten_minutes.body);
    let age = max_age(&ten_minutes);
    assert!(
        (590..=600).contains(&age),
        "cut at the token's exp: {age} s"
    );
    let short = sign_in(tokens["alice_short"].as_str().unwrap());
    assert_eq!(short.status, 200, "{}", short.body);
    let age = max_age(&short);
    assert!((1..=5).contains(&age), "cut at the token's exp: {age} s");
    let in_leeway = tokens["alice_in_leeway"].as_str().unwrap();
    assert!(
        status_with(mcp, in_leeway).starts_with("HTTP/1.1 200"),
        "the MCP listener takes it within the 30 s leeway"
    );
    let ended = sign_in(in_leeway);
    assert_eq!(ended.status, 401, "{}", ended.body);
    assert!(ended.body.contains("expired"), "{}", ended.body);
}

#[test]
fn a_key_set_with_a_shared_secret_or_keys_without_ids_is_refused_at_load() {
    let work = Work::new("jwt-config");
    let base = work.hostile_config("serve", "");
    let _ = base;
    for (jwks, expected) in [
        (
            r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "s"}]}"#,
            "a shared-secret (oct) key",
        ),
        (
            r#"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
                          {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
            "keys[0] has no `kid`",
        ),
        (r#"{"keys": []}"#, "holds no key"),
        ("not json", "is not a JWK Set"),
        (
            r#"{"keys": [{"kty": "OKP", "crv": "Ed25519", "alg": "RS256", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
            "does not fit the key's type",
        ),
    ] {
        work.write("jwks.json", jwks);
        let config = work.hostile_config(
            "serve",
            "[jwt]\njwks_file = \"jwks.json\"\nissuer = \"i\"\naudience = \"a\"\nleeway_s = 30\n",
        );
        let output = run(&["check", "--config", config.to_str().unwrap()]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(1), "{jwks}: {stderr}");
        assert!(
            stderr.contains("gateway.toml: jwt.jwks_file: ") && stderr.contains(expected),
            "{jwks}: {stderr}"
        );
    }
    work.write(
        "jwks.json",
        r#"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
    );
    let config = work.hostile_config(
        "serve",
        "[jwt]\njwks_file = \"jwks.json\"\nleeway_s = 3600\n",
    );
    let (_, stderr) = text(&run(&["check", "--config", config.to_str().unwrap()]));
    for key in [
        "jwt.issuer: missing",
        "jwt.audience: missing",
        "jwt.leeway_s: at most 300",
    ] {
        assert!(stderr.contains(key), "{key}: {stderr}");
    }
}
