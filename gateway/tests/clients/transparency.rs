//! Issue 38, item 1: the gateway changes nothing its policy does not decide. Every tool of
//! `tests/mcp/rich_upstream.py` (every content block type, annotations and `_meta` on blocks,
//! `isError` with an image, structured content beside the tool's own text, a result's `_meta`) is
//! called directly and through the gateway — allow-all policy, the upstream under its own names —
//! by the official Python SDK (both protocol revisions) and the TypeScript SDK, over stdio and
//! Streamable HTTP; the results must be equal but for the one documented change (a result's
//! `_meta` keys under `dev.toolgate/` are not a tool's to set). Checks in `tests/mcp/transparency.py`
//! and `tests/mcp/ts_transparency.mjs`.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::*;

const KEY: &str = "tg_transparency_client_key";

fn rich_upstream() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/rich_upstream.py")
        .display()
        .to_string()
}

/// A policy that allows every tool: what reaches the client is then the upstream's answer.
fn allow_all(work: &Work) -> PathBuf {
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "transparency"}]}"#,
    )
}

/// The gateway over stdio in front of the rich upstream (its one-upstream form: own names).
fn stdio_gateway(work: &Work, python: &str) -> serde_json::Value {
    let policy = allow_all(work);
    json!({"stdio": [GATEWAY, "--policy", policy, "--", python, rich_upstream()]})
}

/// A policy that allows every tool but watches every result: provenance recorded (`sources`, a
/// provenance flow rule), every detector labelling, a pattern redacting and a size withholding —
/// none of which any result of the rich upstream meets.
fn allow_all_watching(work: &Work) -> PathBuf {
    work.write(
        "policy.json",
        r#"{
  "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "transparency"}],
  "sources": {"untrusted": ["*"]},
  "results": [
    {"id": "secrets-seen", "tool": "*",
     "detect": ["private_key", "cloud_token", "api_token", "card_number", "iban"],
     "action": "label", "label": "secret", "reason": "a secret reached the model"},
    {"id": "never-here", "tool": "*", "pattern": "NEVER-IN-A-RESULT-[0-9]+", "action": "redact",
     "reason": "not in any result"},
    {"id": "huge", "tool": "*", "max_bytes": 10000000, "action": "withhold", "reason": "too big"}
  ],
  "flows": [
    {"id": "path-from-a-trusted-result", "tool": "read_file", "action": "ask",
     "reason": "no tool is trusted: never holds, but every result is recorded",
     "provenance": {"pointer": "/path", "seen_in": ["trusted"]}},
    {"id": "quiet-after-secrets", "tool": "read_file", "action": "ask", "reason": "a secret was read",
     "after": {"label": "secret", "within": "session"}}
  ]
}"#,
    )
}

/// `serve` over Streamable HTTP, the rich upstream under its own names, one API key — and traces
/// on (to a collector that is not there): the trace context the upstream is sent changes nothing
/// the client receives.
fn http_gateway(work: &Work, python: &str) -> (Served, serde_json::Value) {
    allow_all(work);
    let (mcp, admin) = (free_port(), free_port());
    let config = work.write(
        "gateway.toml",
        &format!(
            "[upstreams.rich]\ncommand = {python:?}\nargs = [{:?}]\nown_names = true\n\
             [policy]\nlayers = [\"policy.json\"]\n\
             [listen]\nhttp = \"127.0.0.1:{mcp}\"\nadmin = \"127.0.0.1:{admin}\"\n\
             [[clients]]\nid = \"transparency\"\napi_key_sha256 = \"{}\"\n\
             [traces]\notlp_endpoint = \"http://127.0.0.1:9/v1/traces\"\n",
            rich_upstream(),
            sha256(KEY)
        ),
    );
    let child = Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(&config)
        .env("TOOLGATE_MCP_RECORD", work.path("record.jsonl"))
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("the gateway starts");
    wait_for_port(mcp);
    let target = json!({"http": format!("http://127.0.0.1:{mcp}/mcp"), "key": KEY});
    (Served { child, mcp, admin }, target)
}

pub(crate) fn assert_all_passed(output: &std::process::Output) {
    let (stdout, stderr) = text(output);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

fn python_checks(mode: &str, python: &std::ffi::OsStr, gateway: serde_json::Value) {
    let python_path = python.to_str().expect("a UTF-8 path");
    let targets = json!({"direct": [python_path, rich_upstream()], "gateway": gateway});
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/transparency.py"))
        .arg(mode)
        .arg(targets.to_string())
        .output()
        .expect("python runs");
    assert_all_passed(&output);
}

#[test]
fn python_sdk_results_pass_through_stdio_unchanged_on_both_revisions() {
    let Some(python) = python() else { return };
    let work = Work::new("transparency-python-stdio");
    let gateway = stdio_gateway(&work, python.to_str().expect("a UTF-8 path"));
    for mode in ["legacy", "2026-07-28"] {
        python_checks(mode, &python, gateway.clone());
    }
}

/// The return path watches without touching: with provenance recorded and result rules that
/// meet nothing, every block type, annotation, `_meta` and `structuredContent` (beside the tool's
/// own text) still passes unchanged.
#[test]
fn python_sdk_results_pass_through_unchanged_while_result_rules_and_provenance_watch() {
    let Some(python) = python() else { return };
    let python_path = python.to_str().expect("a UTF-8 path");
    let work = Work::new("transparency-python-watching");
    let policy = allow_all_watching(&work);
    let gateway =
        json!({"stdio": [GATEWAY, "--policy", policy, "--", python_path, rich_upstream()]});
    for mode in ["legacy", "2026-07-28"] {
        python_checks(mode, &python, gateway.clone());
    }
}

#[test]
fn python_sdk_results_pass_through_http_unchanged_on_both_revisions() {
    let Some(python) = python() else { return };
    let work = Work::new("transparency-python-http");
    let (_served, gateway) = http_gateway(&work, python.to_str().expect("a UTF-8 path"));
    for mode in ["legacy", "2026-07-28"] {
        python_checks(mode, &python, gateway.clone());
    }
}

fn typescript_checks(dir: &Path, name: &str, python: &str, gateway: serde_json::Value) {
    // ES modules resolve `node_modules` from the script's own place; one copy per test.
    let script = dir.join(format!("ts_transparency-{name}.mjs"));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/ts_transparency.mjs"),
        &script,
    )
    .expect("copy the script");
    let targets = json!({"direct": [python, rich_upstream()], "gateway": gateway});
    let output = Command::new("node")
        .arg(&script)
        .arg(targets.to_string())
        .output()
        .expect("node runs");
    assert_all_passed(&output);
}

#[test]
fn typescript_sdk_results_pass_through_stdio_and_http_unchanged() {
    let Some(python) = python() else { return };
    let Some(dir) = crate::typescript_sdk::node_dir() else {
        return;
    };
    let python = python.to_str().expect("a UTF-8 path");
    let work = Work::new("transparency-ts-stdio");
    typescript_checks(&dir, "stdio", python, stdio_gateway(&work, python));
    let work = Work::new("transparency-ts-http");
    let (_served, gateway) = http_gateway(&work, python);
    typescript_checks(&dir, "http", python, gateway);
}

/// Issue 38, item 2 (in part): the progress an upstream reports reaches the client whose call it
/// is, and a call its client abandons (`notifications/cancelled`) is cancelled upstream — checked
/// directly and through the gateway, over stdio and Streamable HTTP, on both revisions (checks in
/// `tests/mcp/progress_cancel.py`).
#[test]
fn python_sdk_progress_and_cancellation_flow_through_stdio_and_http() {
    let Some(python) = python() else { return };
    let python_path = python.to_str().expect("a UTF-8 path");
    let stdio_work = Work::new("progress-stdio");
    let http_work = Work::new("progress-http");
    let (_served, http) = http_gateway(&http_work, python_path);
    for (work, gateway) in [
        (&stdio_work, stdio_gateway(&stdio_work, python_path)),
        (&http_work, http),
    ] {
        for mode in ["legacy", "2026-07-28"] {
            let record = work.path("record.jsonl");
            let targets = json!({"direct": [python_path, rich_upstream()], "gateway": gateway});
            let output = Command::new(&python)
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/progress_cancel.py"))
                .arg(mode)
                .arg(&record)
                .arg(targets.to_string())
                .output()
                .expect("python runs");
            assert_all_passed(&output);
        }
    }
}
