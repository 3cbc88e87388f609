//! What an upstream sends while its tool runs — progress messages, log messages — is judged as
//! the tool's result is: an independent attack had an upstream put a cloud key and a private key
//! in its progress and log messages past result rules that redact and withhold them in results,
//! and an IBAN past a provenance rule that denies paying one a result named; and a sampling
//! request about a private key to the client's model. Checks in
//! `tests/mcp/interim.py` (the official Python SDK), upstream `tests/mcp/interim_upstream.py`.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::json;
use support::*;

use crate::transparency::assert_all_passed;

const POLICY: &str = r#"{
  "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "the flows and results decide"},
            {"id": "sampling", "tool": "*sampling/createMessage", "action": "allow", "reason": "forwarded"}],
  "sources": {"untrusted": ["work"]},
  "flows": [{"id": "payee", "tool": "pay", "action": "deny",
             "reason": "a payee only a tool's words named",
             "provenance": {"pointer": "/iban", "seen_in": ["untrusted"]}}],
  "results": [
    {"id": "cloud", "tool": "*", "detect": ["cloud_token"], "action": "redact",
     "reason": "no cloud keys reach the model"},
    {"id": "private", "tool": "*", "detect": ["private_key"], "action": "withhold",
     "reason": "no private keys reach the model"},
    {"id": "cards", "tool": "*", "detect": ["card_number"], "action": "redact",
     "reason": "no card numbers reach the model"}
  ]
}"#;

#[test]
fn progress_and_log_messages_are_judged_as_the_tools_result_is() {
    let Some(python) = python() else { return };
    let python = python.to_str().expect("a UTF-8 path");
    let upstream = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/interim_upstream.py")
        .display()
        .to_string();
    let work = Work::new("interim");
    work.write("policy.json", POLICY);
    let config = work.write(
        "gateway.toml",
        &format!(
            "[upstreams.interim]\ncommand = {python:?}\nargs = [{upstream:?}]\nown_names = true\n\
             forward = [\"sampling\"]\n[policy]\nlayers = [\"policy.json\"]\n"
        ),
    );
    let config = config.to_str().expect("a UTF-8 path");
    let gateway = json!({"stdio": [GATEWAY, "serve", "--config", config]});
    let targets = json!({"direct": [python, upstream], "gateway": gateway});
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/interim.py"))
        .arg(targets.to_string())
        .output()
        .expect("python runs");
    assert_all_passed(&output);
}
