//! The gateway driven by the official TypeScript MCP SDK's client (`@modelcontextprotocol/sdk`,
//! pinned in `.ci/node-mcp`), over stdio (the one-upstream form) and over Streamable HTTP with an
//! API key. Checks in `tests/mcp/ts_client.mjs`.
//!
//! The SDK comes from `TOOLGATE_MCP_NODE` (the directory `.ci/node-mcp` prints); with `CI` set a
//! missing one fails, otherwise the test says on stderr that it was skipped.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::*;

const KEY: &str = "tg_typescript_client_key";

pub use crate::support::node_dir;

/// Runs the check script from the SDK's directory (ES modules resolve `node_modules` from the
/// script's own place).
fn node(dir: &Path, args: &[&str]) {
    // One copy per mode: the tests run at once.
    let script = dir.join(format!("ts_client-{}.mjs", args[0]));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/ts_client.mjs"),
        &script,
    )
    .expect("copy the script");
    let output = Command::new("node")
        .arg(&script)
        .args(args)
        .output()
        .expect("node runs");
    let (stdout, stderr) = text(&output);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

fn hostile() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/hostile_upstream.py")
        .display()
        .to_string()
}

#[test]
fn typescript_sdk_client_over_stdio() {
    let Some(dir) = node_dir() else { return };
    let work = Work::new("ts-stdio");
    let policy = work.write(
        "policy.json",
        r#"{"rules": [
          {"id": "echo", "tool": "echo", "action": "allow", "reason": "harmless"},
          {"id": "write", "tool": "write", "action": "ask", "reason": "a person confirms writes"},
          {"id": "crash", "tool": "crash", "action": "deny", "reason": "not through the gateway"}
        ]}"#,
    );
    node(
        &dir,
        &[
            "stdio",
            GATEWAY,
            policy.to_str().unwrap(),
            &hostile(),
            work.dir.to_str().unwrap(),
        ],
    );
}

#[test]
fn typescript_sdk_client_over_http_with_a_key() {
    let Some(dir) = node_dir() else { return };
    let work = Work::new("ts-http");
    let served = serve_http(
        &work,
        &format!(
            "[[clients]]\nid = \"ts\"\ngroups = [\"ops\"]\napi_key_sha256 = \"{}\"\n",
            sha256(KEY)
        ),
    );
    let url = format!("http://127.0.0.1:{}/mcp", served.mcp);
    node(&dir, &["http", &url, KEY, work.dir.to_str().unwrap()]);
}
