//! The gateway over Streamable HTTP, driven by the official Python MCP SDK as two principals
//! (checks in `tests/mcp/http_client.py`), and its admin listener read as Prometheus does.
//!
//! The Python environment comes from `TOOLGATE_MCP_PYTHON` (`.ci/run` sets it); with `CI` set a
//! missing one fails the test, otherwise the test says on stderr that it was skipped.

use crate::support;

use std::path::Path;
use std::process::Command;

use crate::raw::http_get;
use support::*;

const ALICE_KEY: &str = "tg_alice_0123456789abcdef";
const BOB_KEY: &str = "tg_bob_fedcba9876543210";

fn client_keys() -> String {
    format!(
        "[[clients]]\nid = \"alice\"\ngroups = [\"ops\"]\napi_key_sha256 = \"{}\"\n\
         [[clients]]\nid = \"bob\"\ngroups = [\"dev\"]\napi_key_sha256 = \"{}\"\n",
        sha256(ALICE_KEY),
        sha256(BOB_KEY)
    )
}

fn drive(mode: &str) {
    let Some(python) = python() else { return };
    let work = Work::new(&format!("http-{mode}"));
    let served = serve_http(&work, &client_keys());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/http_client.py");
    let output = Command::new(python)
        .arg(script)
        .arg(format!("http://127.0.0.1:{}/mcp", served.mcp))
        .args([ALICE_KEY, BOB_KEY])
        .arg(&work.dir)
        .arg(mode)
        .output()
        .expect("python runs");
    let (stdout, stderr) = text(&output);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    let metrics = http_get(served.admin, "/metrics");
    for expected in [
        "toolgate_calls_total{tool=\"h__echo\",decision=\"allow\"} 9",
        "toolgate_calls_total{tool=\"h__echo\",decision=\"deny\"} 1",
        "toolgate_calls_total{tool=\"h__write\",decision=\"ask\"}",
        "toolgate_executions_total{tool=\"h__echo\",result=\"ok\"} 9",
        "toolgate_upstream_up{upstream=\"h\"} 1",
        "toolgate_pending_approvals 0",
        "toolgate_upstream_call_seconds_count{upstream=\"h\"}",
    ] {
        assert!(metrics.contains(expected), "{expected} not in:\n{metrics}");
    }
    assert!(http_get(served.admin, "/healthz").ends_with("ok\n"));
    // The admin listener is not the MCP one, and MCP metrics are not served to MCP clients:
    // the MCP listener answers at its endpoints' paths exactly, nowhere else.
    assert!(http_get(served.mcp, "/metrics").starts_with("HTTP/1.1 404"));
}

#[test]
fn python_sdk_clients_over_http_on_2025_11_25() {
    drive("legacy");
}

#[test]
fn python_sdk_clients_over_http_on_2026_07_28() {
    drive("2026-07-28");
}
