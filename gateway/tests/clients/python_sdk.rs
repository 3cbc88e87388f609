//! The gateway driven by independent clients: the official Python MCP SDK (`mcp` on PyPI, pinned
//! in `.ci/python-mcp`) as the upstream server (recording every call it receives) and as the
//! client, in each protocol revision. The checks live in `tests/mcp/client.py`; this test runs it
//! against the built `toolgate-mcp-gateway` and fails if any check failed.
//!
//! The Python environment comes from `TOOLGATE_MCP_PYTHON` (the path of a python with the SDK);
//! CI always sets it (`.ci/run` exports `TOOLGATE_MCP_PYTHON="$(.ci/python-mcp)"`), and with `CI`
//! set a missing one fails the test. Only when both are unset — a developer's `cargo test`
//! without the venv — does the test print a note on stderr (not captured) saying it was skipped,
//! and return.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;

fn drive_gateway_with_python_client(mode: &str) {
    let Some(python) = std::env::var_os("TOOLGATE_MCP_PYTHON").filter(|path| !path.is_empty())
    else {
        if std::env::var_os("CI").is_some() {
            panic!(
                "CI must run the Python SDK tests: export TOOLGATE_MCP_PYTHON=\"$(.ci/python-mcp)\""
            );
        }
        // Straight to stderr: the test harness captures `eprintln!` of passing tests, and this
        // note must be seen, so that a skip is never read as a pass.
        let _ = writeln!(
            std::io::stderr(),
            "note: TOOLGATE_MCP_PYTHON is unset: the Python SDK test {mode} was SKIPPED, not run \
             (run it with `TOOLGATE_MCP_PYTHON=\"$(.ci/python-mcp)\" cargo test --all-features --test mcp_python`)"
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
