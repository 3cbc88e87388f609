//! Two real gateway processes behind one "load balancer" (the client picks), sharing one
//! PostgreSQL server for approvals, audit and rate limits, and one request-state key: an
//! approval held through one is answered through the other and runs once, a value one's result
//! carried is known to the other's provenance rules, and a rate limit is counted across both
//! although each has a config file of its own, naming the policy file its own way. Checks in
//! `tests/mcp/two_instances.py` (the official Python SDK).
//!
//! Needs `TOOLGATE_PG_URL` (`.ci/postgres`) and `TOOLGATE_MCP_PYTHON`; with `CI` set a missing
//! one fails, otherwise the test says on stderr that it was skipped.

use crate::support;

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use support::*;

const KEY: &str = "tg_shared_instances_key";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_approval_held_by_one_instance_is_answered_through_another_and_runs_once() {
    let pg = std::env::var("TOOLGATE_PG_URL")
        .ok()
        .filter(|url| !url.is_empty());
    let Some(pg) = pg else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the PostgreSQL tests: source .ci/postgres"
        );
        let _ = writeln!(
            std::io::stderr(),
            "note: TOOLGATE_PG_URL is unset: the two-instance test was SKIPPED, not run"
        );
        return;
    };
    let Some(python) = python() else { return };
    let work = Work::new("two-instances");
    // Stopped by the test (SIGTERM), or killed on the way out if an assertion failed first.
    let mut instances = Vec::new();
    let mut urls = Vec::new();
    // Counters live in the database for their window: a name of this run's own, so a second run
    // against the same server starts from zero.
    let deployment = format!(
        "two-instances-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos()
    );
    for index in 0..2 {
        let port = free_port();
        let extra = format!(
            "[gateway]\nstate_key_env = \"TOOLGATE_TEST_STATE_KEY\"\n\
             [audit]\npostgres_url_env = \"TOOLGATE_PG_URL\"\n\
             [approvals]\nstore = \"postgres\"\npostgres_url_env = \"TOOLGATE_PG_URL\"\n\
             [rate_limits]\npostgres_url_env = \"TOOLGATE_PG_URL\"\ndeployment = \"{deployment}\"\n\
             [listen]\nhttp = \"127.0.0.1:{port}\"\n\
             [[clients]]\nid = \"alice\"\napi_key_sha256 = \"{}\"\n",
            sha256(KEY),
        );
        let config = work.hostile_config("serve", &extra);
        let config = std::fs::rename(&config, work.path(&format!("gateway{index}.toml")))
            .map(|()| work.path(&format!("gateway{index}.toml")))
            .expect("rename");
        // The second names the same file another way, as an instance mounting it elsewhere
        // would: the layer's counters were keyed by its path, and each instance ran its own cap.
        if index == 1 {
            let text = std::fs::read_to_string(&config).expect("written");
            let respelled =
                text.replace("layers = [\"policy.json\"]", "layers = [\"./policy.json\"]");
            assert_ne!(respelled, text, "the config names the layer");
            std::fs::write(&config, respelled).expect("rewritten");
        }
        work.write(
            "policy.json",
            r#"{"rules": [{"id": "write", "tool": "h__write", "action": "ask", "reason": "a person confirms writes"},
                          {"id": "echo", "tool": "h__echo", "action": "allow", "reason": "harmless"}],
                "flows": [{"id": "path-from-a-result", "tool": "h__write", "action": "deny",
                           "reason": "a path only a tool's result named",
                           "provenance": {"pointer": "/path", "seen_in": ["untrusted"]}}],
                "limits": [{"id": "echoes", "tool": "h__echo", "max": 5, "per": "hour", "over": "deny",
                            "reason": "at most 5 echoes an hour, counted across instances"}]}"#,
        );
        let child = Command::new(GATEWAY)
            .args(["serve", "--config"])
            .arg(&config)
            .env("TOOLGATE_PG_URL", &pg)
            .env(
                "TOOLGATE_TEST_STATE_KEY",
                "0123456789abcdef0123456789abcdef-shared",
            )
            .stdin(Stdio::null())
            .spawn()
            .expect("the gateway starts");
        instances.push(Killed(child));
        wait_for_port(port);
        urls.push(format!("http://127.0.0.1:{port}/mcp"));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/two_instances.py");
    let output = Command::new(python)
        .arg(script)
        .args(&urls)
        .arg(KEY)
        .arg(&work.dir)
        .output()
        .expect("python runs");
    let (stdout, stderr) = text(&output);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("8 passed, 0 failed"), "{stdout}");
    the_approvals_cli_answers_on_postgres_and_exits_as_documented(&work, &pg);
    another_deployment_on_the_same_schema_does_not_start(&work, &pg, &deployment);
    // A serving gateway on PostgreSQL (approvals, audit, counters) stops on SIGTERM with exit 0:
    // its blocking clients are dropped off the async runtime, never inside it (exit 101 before).
    for Killed(child) in &mut instances {
        let stopped = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(stopped.success());
    }
    for Killed(child) in &mut instances {
        let status = child.wait().expect("the gateway ends");
        assert_eq!(status.code(), Some(0), "SIGTERM: {status:?}");
    }
}

/// A deployment of its own (another config, another request-state key, another deployment name)
/// given the same database and schema does not start: the approval and audit tables are the
/// first deployment's. An independent attack had a second deployment's page list the first's
/// held call, its person approve it, and the call run in the second.
fn another_deployment_on_the_same_schema_does_not_start(work: &Work, pg: &str, deployment: &str) {
    let port = free_port();
    let extra = format!(
        "[gateway]\nstate_key_env = \"TOOLGATE_TEST_OTHER_STATE_KEY\"\n\
         [audit]\npostgres_url_env = \"TOOLGATE_PG_URL\"\n\
         [approvals]\nstore = \"postgres\"\npostgres_url_env = \"TOOLGATE_PG_URL\"\n\
         [rate_limits]\npostgres_url_env = \"TOOLGATE_PG_URL\"\ndeployment = \"{deployment}-other\"\n\
         [listen]\nhttp = \"127.0.0.1:{port}\"\n\
         [[clients]]\nid = \"bob\"\napi_key_sha256 = \"{}\"\n",
        sha256("tg_other_deployment_key"),
    );
    let config = work.hostile_config("serve", &extra);
    let mut child = Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(&config)
        .env("TOOLGATE_PG_URL", pg)
        .env(
            "TOOLGATE_TEST_OTHER_STATE_KEY",
            "fedcba9876543210fedcba9876543210-another-deployment",
        )
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the gateway starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("a second deployment on the same schema started serving");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut stderr)
        .expect("stderr");
    assert!(!status.success(), "{stderr}");
    for said in [
        "approvals.postgres_url_env",
        "the approval tables in schema `public` belong to another deployment",
        "audit.postgres_url_env",
        "the audit tables in schema `public` belong to another deployment",
    ] {
        assert!(stderr.contains(said), "{said}: {stderr}");
    }
}

/// `approvals list | show | approve | reject` with `store = "postgres"`: each exits 0 or 1 as
/// documented and never 101 (a panic: the PostgreSQL client was dropped inside the runtime), on
/// the success path and on every refusal path.
fn the_approvals_cli_answers_on_postgres_and_exits_as_documented(work: &Work, pg: &str) {
    let config = work.path("gateway0.toml");
    let run = |args: &[&str]| {
        let output = Command::new(GATEWAY)
            .args(args)
            .arg("--config")
            .arg(&config)
            .env("TOOLGATE_PG_URL", pg)
            .env("TOOLGATE_TEST_KEY", KEY)
            .env(
                "TOOLGATE_TEST_STATE_KEY",
                "0123456789abcdef0123456789abcdef-shared",
            )
            .stdin(Stdio::null())
            .output()
            .expect("the gateway runs");
        let (stdout, stderr) = text(&output);
        (output.status.code(), format!("{stdout}\n{stderr}"))
    };
    let (code, output) = run(&["approvals", "list"]);
    assert_eq!(code, Some(0), "list: {output}");
    let unknown = "00000000000000000000000000000000";
    for args in [
        ["approvals", "show", unknown].as_slice(),
        &[
            "approvals",
            "approve",
            unknown,
            "--key-env",
            "TOOLGATE_TEST_KEY",
        ],
        &[
            "approvals",
            "reject",
            unknown,
            "--key-env",
            "TOOLGATE_TEST_KEY",
        ],
        &[
            "approvals",
            "approve",
            unknown,
            "--key-env",
            "NO_SUCH_VARIABLE",
        ],
    ] {
        let (code, output) = run(args);
        assert_eq!(code, Some(1), "{args:?}: {output}");
        assert!(!output.contains("panicked"), "{args:?}: {output}");
    }
}
