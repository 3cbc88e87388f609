//! Issue 38, item 2: what the gateway forwards beyond tools — resources, prompts, completions,
//! logging, an upstream's sampling and elicitation requests — driven by the official Python SDK
//! (both revisions; sampling, elicitation and logging on the `initialize` revision that has them)
//! and the TypeScript SDK, over stdio and Streamable HTTP, against
//! `tests/mcp/everything_upstream.mjs` directly and through the gateway: the answers are equal;
//! under a policy that denies a resource and the upstream's sampling and asks before a prompt,
//! exactly those differ, each saying why, and the audit log records every one with the principal.
//! Checks in `tests/mcp/forwarded.py`.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::*;

const KEY: &str = "tg_forwarded_client_key";

/// Every tool, and every gate (a pattern allows a gate only if it ends with the gate's method).
const ALLOW_ALL: &str = r#"{"rules": [
  {"id": "all", "tool": "*", "action": "allow", "reason": "forwarded"},
  {"id": "reads", "tool": "*resources/read", "action": "allow", "reason": "forwarded"},
  {"id": "gets", "tool": "*prompts/get", "action": "allow", "reason": "forwarded"},
  {"id": "sampling", "tool": "*sampling/createMessage", "action": "allow", "reason": "forwarded"},
  {"id": "elicitation", "tool": "*elicitation/create", "action": "allow", "reason": "forwarded"}
]}"#;

/// Denies reading the binary resource and the upstream's sampling, asks before the image prompt.
const GATED: &str = r#"{"rules": [
  {"id": "no-binary", "tool": "resources/read", "action": "deny",
   "when": {"glob": {"pointer": "/uri", "pattern": "test://static-binary*", "raw": true}},
   "reason": "binary resources are not for the model"},
  {"id": "look-first", "tool": "prompts/get", "action": "ask",
   "when": {"equals": {"pointer": "/name", "value": "test_prompt_with_image"}},
   "reason": "a person looks first"},
  {"id": "no-sampling", "tool": "sampling/createMessage", "action": "deny",
   "reason": "no sampling for this upstream"},
  {"id": "rest", "tool": "*", "action": "allow", "reason": "the rest"},
  {"id": "rest-reads", "tool": "*resources/read", "action": "allow", "reason": "the rest"},
  {"id": "rest-gets", "tool": "*prompts/get", "action": "allow", "reason": "the rest"},
  {"id": "rest-elicitation", "tool": "*elicitation/create", "action": "allow", "reason": "the rest"}
]}"#;

/// The reference upstream, copied beside the TypeScript SDK under `name`.
fn upstream(sdk: &Path, name: &str) -> PathBuf {
    let path = sdk.join(name);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/everything_upstream.mjs"),
        &path,
    )
    .expect("copy the upstream");
    path
}

/// A config serving the reference upstream under its own names, forwarding its sampling and
/// elicitation, with `policy`, auditing to `audit.jsonl`, and `listen` (stdio when empty).
fn config(work: &Work, upstream: &Path, policy: &str, listen: &str) -> PathBuf {
    work.write("policy.json", policy);
    work.write(
        "gateway.toml",
        &format!(
            "[upstreams.everything]\ncommand = \"node\"\nargs = [{upstream:?}]\nown_names = true\n\
             forward = [\"sampling\", \"elicitation\"]\n\
             [policy]\nlayers = [\"policy.json\"]\n[audit]\njsonl = \"audit.jsonl\"\n{listen}"
        ),
    )
}

fn run_checks(python: &std::ffi::OsStr, mode: &str, targets: &serde_json::Value) {
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/forwarded.py"))
        .arg(mode)
        .arg(targets.to_string())
        .output()
        .expect("python runs");
    let (stdout, stderr) = text(&output);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

fn sdks() -> Option<(std::ffi::OsString, PathBuf)> {
    let python = python()?;
    let sdk = crate::typescript_sdk::node_dir()?;
    Some((python, sdk))
}

#[test]
fn python_sdk_gets_everything_forwarded_over_stdio_the_same() {
    let Some((python, sdk)) = sdks() else { return };
    let upstream = upstream(&sdk, "everything_upstream-forwarded-stdio.mjs");
    let work = Work::new("forwarded-stdio");
    let config = config(&work, &upstream, ALLOW_ALL, "");
    let config = config.to_str().expect("a UTF-8 path");
    let targets = json!({
        "direct": ["node", upstream],
        "gateway": {"stdio": [GATEWAY, "serve", "--config", config]},
    });
    for mode in ["legacy", "2026-07-28"] {
        run_checks(&python, mode, &targets);
    }
}

/// `serve --config` over Streamable HTTP with one API key client `forwarded`.
fn http(work: &Work, upstream: &Path, policy: &str) -> (Served, serde_json::Value) {
    let (mcp, admin) = (free_port(), free_port());
    let listen = format!(
        "[listen]\nhttp = \"127.0.0.1:{mcp}\"\nadmin = \"127.0.0.1:{admin}\"\n\
         [[clients]]\nid = \"forwarded\"\napi_key_sha256 = \"{}\"\n",
        sha256(KEY)
    );
    let config = config(work, upstream, policy, &listen);
    let child = Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("the gateway starts");
    wait_for_port(mcp);
    let target = json!({"http": format!("http://127.0.0.1:{mcp}/mcp"), "key": KEY});
    (Served { child, mcp, admin }, target)
}

#[test]
fn python_sdk_gets_everything_forwarded_over_http_the_same() {
    let Some((python, sdk)) = sdks() else { return };
    let upstream = upstream(&sdk, "everything_upstream-forwarded-http.mjs");
    let work = Work::new("forwarded-http");
    let (_served, gateway) = http(&work, &upstream, ALLOW_ALL);
    let targets = json!({"direct": ["node", upstream], "gateway": gateway});
    for mode in ["legacy", "2026-07-28"] {
        run_checks(&python, mode, &targets);
    }
}

#[test]
fn the_policy_decides_reads_gets_and_sampling_and_the_audit_log_names_the_principal() {
    let Some((python, sdk)) = sdks() else { return };
    let upstream = upstream(&sdk, "everything_upstream-forwarded-gated.mjs");
    for (mode, approve) in [("legacy", true), ("legacy", false), ("2026-07-28", true)] {
        let work = Work::new(&format!("forwarded-gated-{mode}-{approve}"));
        let (_served, gateway) = http(&work, &upstream, GATED);
        let targets = json!({"direct": ["node", upstream], "gateway": gateway,
                             "gated": true, "approve": approve});
        run_checks(&python, mode, &targets);
        let audit = work.read("audit.jsonl");
        let events: Vec<serde_json::Value> = audit
            .lines()
            .map(|line| {
                let entry: serde_json::Value = serde_json::from_str(line).expect("an audit entry");
                entry["event"].clone()
            })
            .collect();
        let decided = |tool: &str, rule: &str| {
            events.iter().any(|event| {
                event["tool"] == tool
                    && event["rule_id"] == rule
                    && event["principal"] == "forwarded"
            })
        };
        assert!(decided("resources/read", "no-binary"), "{audit}");
        assert!(decided("resources/read", "rest-reads"), "{audit}");
        assert!(decided("prompts/get", "look-first"), "{audit}");
        if mode == "legacy" {
            assert!(decided("sampling/createMessage", "no-sampling"), "{audit}");
            assert!(decided("elicitation/create", "rest-elicitation"), "{audit}");
        } else {
            // Nobody could be asked in the request: withdrawn at once, not left waiting.
            let revoked = events
                .iter()
                .any(|event| event["kind"] == "approval_revoked" && event["tool"] == "prompts/get");
            assert!(revoked, "{audit}");
        }
        // No resource, prompt or message text in the audit log: only digests.
        for secret in ["This is the content", "a question", "who are you?", "hello"] {
            assert!(
                !audit.contains(secret),
                "{secret:?} in the audit log:\n{audit}"
            );
        }
    }
}

#[test]
fn typescript_sdk_gets_everything_forwarded_over_stdio_the_same() {
    let Some(sdk) = crate::typescript_sdk::node_dir() else {
        return;
    };
    let upstream = upstream(&sdk, "everything_upstream-forwarded-ts.mjs");
    let script = sdk.join("ts_forwarded.mjs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/ts_forwarded.mjs"),
        &script,
    )
    .expect("copy the script");
    let work = Work::new("forwarded-ts-stdio");
    let config = config(&work, &upstream, ALLOW_ALL, "");
    let targets = json!({
        "direct": ["node", upstream],
        "gateway": {"stdio": [GATEWAY, "serve", "--config", config]},
    });
    let output = Command::new("node")
        .arg(&script)
        .arg(targets.to_string())
        .output()
        .expect("node runs");
    let (stdout, stderr) = text(&output);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn what_names_no_request_reaches_only_the_client_it_came_for() {
    let Some((python, sdk)) = sdks() else { return };
    let upstream = upstream(&sdk, "everything_upstream-forwarded-cross.mjs");
    let work = Work::new("forwarded-cross");
    let (mcp, admin) = (free_port(), free_port());
    let listen = format!(
        "[listen]\nhttp = \"127.0.0.1:{mcp}\"\nadmin = \"127.0.0.1:{admin}\"\n\
         [[clients]]\nid = \"alice\"\napi_key_sha256 = \"{}\"\n\
         [[clients]]\nid = \"bob\"\napi_key_sha256 = \"{}\"\n\
         [limits]\ncall_timeout_ms = 1000\n",
        sha256("tg_alice_key"),
        sha256("tg_bob_key")
    );
    let config = config(&work, &upstream, ALLOW_ALL, &listen);
    let child = Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("the gateway starts");
    wait_for_port(mcp);
    let _served = Served { child, mcp, admin };
    let output = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/cross_clients.py"))
        .args([
            format!("http://127.0.0.1:{mcp}/mcp"),
            "tg_alice_key".to_owned(),
            "tg_bob_key".to_owned(),
        ])
        .output()
        .expect("python runs");
    let (stdout, stderr) = text(&output);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    // The sampling request of alice's lone read was judged for her.
    let audit = work.read("audit.jsonl");
    assert!(
        audit
            .lines()
            .any(|line| line.contains("\"sampling/createMessage\"")
                && line.contains("\"principal\":\"alice\"")),
        "{audit}"
    );
    assert!(
        !audit
            .lines()
            .any(|line| line.contains("\"sampling/createMessage\"")
                && line.contains("\"principal\":\"bob\"")),
        "{audit}"
    );
}

#[test]
fn what_the_policy_hides_is_not_listed_read_completed_or_watched() {
    let Some((python, sdk)) = sdks() else { return };
    let upstream = upstream(&sdk, "everything_upstream-forwarded-hidden.mjs");
    let work = Work::new("forwarded-hidden");
    // Every tool, and no gate: an allow pattern covers a gate only if it ends with its method.
    let tools_only =
        r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "tools"}]}"#;
    let (_served, gateway) = http(&work, &upstream, tools_only);
    let targets = json!({"direct": ["node", upstream], "gateway": gateway, "hidden": true});
    for mode in ["legacy", "2026-07-28"] {
        run_checks(&python, mode, &targets);
    }
}
