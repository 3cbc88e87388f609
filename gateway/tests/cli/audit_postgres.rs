//! The `audit` commands on the PostgreSQL log (`--postgres-env VAR`, round-4 item 8): verify with
//! and without a kept tree head, prove, disclose, forget and export, against a real server — and
//! what they say when the table was edited or cut, the variable is unset, or the export's file
//! exists.

use std::process::{Command, Output};

use crate::support::*;
use serde_json::{Value, json};
use toolgate::audit::{PostgresAuditSink, Receipt, TreeHead};
use toolgate::{
    ToolCall, ToolController, ToolDefinition, ToolError, ToolPolicy, ToolRegistry, ToolSpec,
};

/// The variable the commands are pointed at (what `audit.postgres_url_env` would name).
const VAR: &str = "TG_TEST_AUDIT_PG";

/// The server from `TOOLGATE_PG_URL`; under CI a missing server fails the test.
fn server() -> Option<String> {
    match std::env::var("TOOLGATE_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run the PostgreSQL tests: start a server with .ci/postgres"
            );
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "note: TOOLGATE_PG_URL is unset: the PostgreSQL audit CLI test was SKIPPED"
            );
            None
        }
    }
}

/// A schema of this test's own on the server; the URL reaching it.
fn fresh_schema(base: &str, name: &str) -> String {
    let schema = schema_name(name);
    let mut admin = base
        .parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .unwrap();
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}options=-csearch_path%3D{schema}")
}

fn schema_name(name: &str) -> String {
    format!("tg_cli_{name}_{}", std::process::id())
}

fn admin(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// `count` calls of `ping` with arguments `{"n": i}`, each recorded in the PostgreSQL log.
fn write_calls(url: &str, from: usize, count: usize) {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let registry = ToolRegistry::new([ToolDefinition::new(
        ToolSpec::new("ping", "Ping.", json!({"type": "object"})),
        noop,
    )
    .unwrap()])
    .unwrap();
    let controller = ToolController::new(
        registry,
        ToolPolicy::new(["ping"], Vec::<String>::new()).unwrap(),
    )
    .with_audit_sink(PostgresAuditSink::connect(url).unwrap());
    for index in from..from + count {
        let _ = controller.handle(ToolCall::new(
            format!("c{index}"),
            "ping",
            json!({ "n": index }),
        ));
    }
}

/// The gateway with `args`, the log's URL in [`VAR`].
fn audit(url: &str, args: &[&str]) -> Output {
    Command::new(GATEWAY)
        .arg("audit")
        .args(args)
        .env(VAR, url)
        .output()
        .expect("the gateway runs")
}

fn head_in(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("tree head: "))
        .unwrap_or_else(|| panic!("no tree head in {stdout}"))
        .to_owned()
}

#[test]
fn the_postgres_log_is_verified_proved_and_exported_as_a_file_is() {
    let Some(base) = server() else { return };
    let url = fresh_schema(&base, "audit_cli");
    let work = Work::new("audit-postgres-cli");
    write_calls(&url, 0, 3);

    let output = audit(&url, &["verify", "--postgres-env", VAR]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stdout.contains(&format!("(${VAR}): 9 entries, the hash chain holds")),
        "{stdout}"
    );
    assert!(
        !stdout.contains(&url) && !stderr.contains(&url),
        "the URL is never printed"
    );
    let head = head_in(&stdout);
    assert_eq!(head.parse::<TreeHead>().unwrap().size, 9);

    // The export is the file a file sink would hold: the file's own check finds the same head.
    let exported = work.path("exported.jsonl");
    let out = exported.to_str().unwrap();
    let output = audit(&url, &["export", "--postgres-env", VAR, "--out", out]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("9 entries written"), "{stdout}");
    assert_eq!(head_in(&stdout), head);
    let output = run(&["audit", "verify", out]);
    assert!(output.status.success(), "{}", text(&output).1);
    assert_eq!(head_in(&text(&output).0), head);
    let lines: Vec<String> = work
        .read("exported.jsonl")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 9);

    // An existing file is never written over.
    let output = audit(&url, &["export", "--postgres-env", VAR, "--out", out]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output).1.contains("cannot create it"),
        "{}",
        text(&output).1
    );
    assert_eq!(work.read("exported.jsonl").lines().count(), 9);

    // A receipt from the database verifies against the exported line.
    let output = audit(&url, &["prove", "--postgres-env", VAR, "--index", "4"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let proved: Value = serde_json::from_str(stdout.trim()).unwrap();
    let receipt: Receipt = serde_json::from_value(proved["receipt"].clone()).unwrap();
    let now: TreeHead = proved["tree_head"].as_str().unwrap().parse().unwrap();
    assert_eq!(now.to_string(), head);
    assert!(receipt.verify(&lines[4], &now));
    assert!(!receipt.verify(&lines[5], &now));
    let output = audit(&url, &["prove", "--postgres-env", VAR, "--index", "9"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output).1.contains("no entry 9"),
        "{}",
        text(&output).1
    );

    // Later entries extend the head kept.
    write_calls(&url, 3, 1);
    let output = audit(&url, &["verify", "--postgres-env", VAR, "--head", &head]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("12 entries") && stdout.contains("It extends the tree head kept"));

    // Cut back to 6 entries (rows and tip row alike): the chain alone holds, the head kept not.
    let mut db = admin(&url);
    db.batch_execute(
        "DELETE FROM toolgate_audit WHERE seq >= 6;
         UPDATE toolgate_audit_tip SET entries = 6,
           last_hash = (SELECT hash FROM toolgate_audit WHERE seq = 5)",
    )
    .unwrap();
    assert!(
        audit(&url, &["verify", "--postgres-env", VAR])
            .status
            .success()
    );
    let output = audit(&url, &["verify", "--postgres-env", VAR, "--head", &head]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output).1.contains("cut off"), "{}", text(&output).1);

    // An edited entry: verify names it; prove and export refuse, and leave no file behind.
    db.batch_execute(
        "UPDATE toolgate_audit SET event = replace(event, '\"ping\"', '\"pong\"') WHERE seq = 2",
    )
    .unwrap();
    let output = audit(&url, &["verify", "--postgres-env", VAR]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output).1.contains("broken at entry 2"),
        "{}",
        text(&output).1
    );
    assert_eq!(
        audit(&url, &["prove", "--postgres-env", VAR, "--index", "0"])
            .status
            .code(),
        Some(1)
    );
    let second = work.path("second.jsonl");
    let output = audit(
        &url,
        &[
            "export",
            "--postgres-env",
            VAR,
            "--out",
            second.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output).1.contains("broken at entry 2"),
        "{}",
        text(&output).1
    );
    assert!(!second.exists(), "half a log is not left behind");
}

#[test]
fn arguments_are_disclosed_against_a_postgres_entry_until_its_salt_is_forgotten() {
    let Some(base) = server() else { return };
    let url = fresh_schema(&base, "audit_cli_disclose");
    write_calls(&url, 0, 2);
    let disclose = |index: &str, arguments: &str| {
        audit(
            &url,
            &[
                "disclose",
                "--postgres-env",
                VAR,
                "--index",
                index,
                "--arguments",
                arguments,
            ],
        )
    };
    // Entry 3 is the second call's first event, committing to {"n": 1}.
    let output = disclose("3", r#"{ "n" : 1.0 }"#);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
    let output = disclose("3", r#"{"n": 0}"#);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output).0);
    assert!(
        !text(&output).0.contains("\"n\""),
        "arguments never printed"
    );
    let output = disclose("99", r#"{"n": 1}"#);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output).1.contains("no entry 99"),
        "{}",
        text(&output).1
    );

    let forget = |index: &str| audit(&url, &["forget", "--postgres-env", VAR, "--index", index]);
    let output = forget("3");
    assert!(output.status.success(), "{}", text(&output).1);
    assert!(
        text(&output).0.contains("salt erased"),
        "{}",
        text(&output).0
    );
    assert_eq!(disclose("3", r#"{"n": 1}"#).status.code(), Some(3));
    let output = forget("3");
    assert!(
        text(&output).0.contains("no salt to erase"),
        "{}",
        text(&output).0
    );
    // Erasing a salt leaves the chain whole.
    assert!(
        audit(&url, &["verify", "--postgres-env", VAR])
            .status
            .success()
    );
}

#[test]
fn a_log_named_twice_or_by_an_unset_variable_is_refused_with_what_to_do() {
    let work = Work::new("audit-postgres-cli-args");
    let file = work.path("audit.jsonl");
    let file = file.to_str().unwrap();
    // FILE and --postgres-env together, or neither: clap's usage error.
    let output = run(&["audit", "verify", file, "--postgres-env", VAR]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).1.contains("cannot be used with"),
        "{}",
        text(&output).1
    );
    let output = run(&["audit", "prove", "--index", "0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("FILE"), "{}", text(&output).1);
    // A variable that is not set: named, with what it should hold.
    let output = Command::new(GATEWAY)
        .args([
            "audit",
            "verify",
            "--postgres-env",
            "TG_TEST_UNSET_VARIABLE",
        ])
        .env_remove("TG_TEST_UNSET_VARIABLE")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let (_, stderr) = text(&output);
    assert!(
        stderr.contains("$TG_TEST_UNSET_VARIABLE is not set") && stderr.contains("PostgreSQL URL"),
        "{stderr}"
    );
    // A server that is not there: a failure naming the connection, not a panic.
    let output = Command::new(GATEWAY)
        .args(["audit", "export", "--postgres-env", VAR, "--out"])
        .arg(work.path("never.jsonl"))
        .env(
            VAR,
            "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2",
        )
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output).1);
    assert!(
        text(&output).1.contains("cannot connect"),
        "{}",
        text(&output).1
    );
    assert!(!work.path("never.jsonl").exists());
}

#[test]
fn an_auditor_granted_select_alone_verifies_proves_and_exports_and_changes_nothing() {
    let Some(base) = server() else { return };
    let url = fresh_schema(&base, "audit_cli_reader");
    let schema = schema_name("audit_cli_reader");
    let work = Work::new("audit-postgres-cli-reader");
    write_calls(&url, 0, 2);
    let role = format!("tg_reader_{}", std::process::id());
    let mut db = admin(&url);
    db.batch_execute(&format!(
        "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN;
         GRANT USAGE ON SCHEMA {schema} TO {role};
         GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role};"
    ))
    .unwrap();
    let reader = format!("{url}&user={role}");
    let output = audit(&reader, &["verify", "--postgres-env", VAR]);
    assert!(output.status.success(), "{}", text(&output).1);
    assert!(text(&output).0.contains("6 entries"), "{}", text(&output).0);
    assert!(
        audit(&reader, &["prove", "--postgres-env", VAR, "--index", "5"])
            .status
            .success()
    );
    let out = work.path("read.jsonl");
    let output = audit(
        &reader,
        &[
            "export",
            "--postgres-env",
            VAR,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output).1);
    assert_eq!(
        audit(
            &reader,
            &[
                "disclose",
                "--postgres-env",
                VAR,
                "--index",
                "0",
                "--arguments",
                r#"{"n": 0}"#
            ]
        )
        .status
        .code(),
        Some(0)
    );
    // Erasing needs a writer's grant: refused, nothing changed.
    let output = audit(&reader, &["forget", "--postgres-env", VAR, "--index", "0"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output).0);
    db.batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role};"))
        .unwrap();

    // A schema holding no audit log is not an empty log, and nothing is created there.
    let empty = fresh_schema(&base, "audit_cli_empty");
    let output = audit(&empty, &["verify", "--postgres-env", VAR]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output).1.contains("no toolgate audit tables"),
        "{}",
        text(&output).1
    );
    let tables: i64 = admin(&empty)
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0);
}

#[test]
fn a_table_altered_by_hand_is_a_failed_read_never_a_panic_nor_half_an_export() {
    let Some(base) = server() else { return };
    let url = fresh_schema(&base, "audit_cli_altered");
    let work = Work::new("audit-postgres-cli-altered");
    write_calls(&url, 0, 3);
    admin(&url)
        .batch_execute(
            "ALTER TABLE toolgate_audit ALTER COLUMN event DROP NOT NULL;
             UPDATE toolgate_audit SET event = NULL WHERE seq = 8;",
        )
        .unwrap();
    let out = work.path("altered.jsonl");
    for args in [
        vec!["verify", "--postgres-env", VAR],
        vec!["prove", "--postgres-env", VAR, "--index", "1"],
        vec![
            "export",
            "--postgres-env",
            VAR,
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        let output = audit(&url, &args);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot read the audit table"),
            "{args:?}: {stderr}"
        );
    }
    assert!(
        !out.exists(),
        "eight whole entries of nine would verify as a log"
    );
    admin(&url)
        .batch_execute(
            "ALTER TABLE toolgate_audit_tip ALTER COLUMN entries DROP NOT NULL;
             UPDATE toolgate_audit_tip SET entries = NULL;",
        )
        .unwrap();
    let output = audit(&url, &["verify", "--postgres-env", VAR]);
    assert_eq!(output.status.code(), Some(1));
    assert!(!text(&output).1.contains("panicked"), "{}", text(&output).1);
}
