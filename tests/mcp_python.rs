//! The gateway driven by independent clients: the official Python MCP SDK (`mcp` on PyPI, pinned
//! in `.ci/python-mcp`) as the upstream server (recording every call it receives) and as the
//! client, in each protocol revision. The checks live in `tests/mcp/client.py`; this test runs it
//! against the built `toolgate-mcp-gateway` and fails if any check failed.
//!
//! The Python environment comes from `TOOLGATE_MCP_PYTHON` (the path of a python with the SDK);
//! CI always sets it (`.ci/run` exports `TOOLGATE_MCP_PYTHON="$(.ci/python-mcp)"`). Only when it is
//! unset — a developer's `cargo test` without the venv — does the test print a note and return.
#![cfg(feature = "mcp")]

use std::path::PathBuf;
use std::process::Command;

fn drive_gateway_with_python_client(mode: &str) {
    let Some(python) = std::env::var_os("TOOLGATE_MCP_PYTHON") else {
        eprintln!(
            "note: TOOLGATE_MCP_PYTHON is unset; skipping the Python SDK tests (run `export TOOLGATE_MCP_PYTHON=\"$(.ci/python-mcp)\"`)"
        );
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("mcp-python-{mode}"));
    let output = Command::new(python)
        .arg(root.join("tests/mcp/client.py"))
        .arg(env!("CARGO_BIN_EXE_toolgate-mcp-gateway"))
        .arg(&work)
        .arg(mode)
        .output()
        .expect("TOOLGATE_MCP_PYTHON runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the Python client's checks failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn python_sdk_client_drives_the_gateway_on_2025_11_25() {
    drive_gateway_with_python_client("legacy");
}

#[test]
fn python_sdk_client_drives_the_gateway_on_2026_07_28() {
    drive_gateway_with_python_client("2026-07-28");
}
