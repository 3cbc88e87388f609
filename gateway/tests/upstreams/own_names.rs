//! Issue 38, item 3: one upstream served under its tools' own names, beside a prefixed one — so
//! the gateway can stand in for a server without renaming anything.

use crate::support;

use serde_json::json;
use support::*;

#[tokio::test]
async fn an_upstream_with_own_names_is_served_unprefixed_beside_a_prefixed_one() {
    let work = Work::new("own-names");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/hostile_upstream.py");
    let (own, other) = (work.path("own.jsonl"), work.path("other.jsonl"));
    work.write(
        "policy.json",
        r#"{"rules": [
          {"id": "echo", "tool": "echo", "action": "allow", "reason": "its own name"},
          {"id": "b-echo", "tool": "b__echo", "action": "allow", "reason": "prefixed"}
        ]}"#,
    );
    let config = work.write(
        "gateway.toml",
        &format!(
            "[upstreams.a]\ncommand = \"python3\"\nargs = [{script:?}, \"serve\", {own:?}]\nown_names = true\n\
             [upstreams.b]\ncommand = \"python3\"\nargs = [{script:?}, \"serve\", {other:?}]\n\
             [policy]\nlayers = [\"policy.json\"]\n"
        ),
    );
    let output = run(&["tools", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stdout.contains(r#""served_as": "echo""#) && stdout.contains(r#""served_as": "b__echo""#),
        "{stdout}"
    );
    let client = serve(&config).await;
    assert_eq!(
        call(&client, "echo", json!({"text": "own"})).await,
        ("echo: own".to_owned(), false)
    );
    assert_eq!(
        call(&client, "b__echo", json!({"text": "other"})).await,
        ("echo: other".to_owned(), false)
    );
    let (message, is_error) = call(&client, "a__echo", json!({"text": "x"})).await;
    assert!(is_error, "the prefixed name is not served: {message}");
    assert_eq!(work.read("own.jsonl").lines().count(), 1);
    assert_eq!(work.read("other.jsonl").lines().count(), 1);
}

fn listed(work: &Work, name: &str, tools: &[&str]) -> std::path::PathBuf {
    let tools: Vec<serde_json::Value> = tools
        .iter()
        .map(|tool| json!({"name": tool, "description": "d", "inputSchema": {"type": "object"}}))
        .collect();
    work.write(
        &format!("{name}.tools.json"),
        &serde_json::Value::from(tools).to_string(),
    )
}

/// Attacks on `own_names`: a tool of the own-names upstream that looks like a prefixed
/// upstream's served name never pushes that tool out — whether new since pinned or accepted — and
/// an upstream whose name extends another's (`x` and `x_`) keeps its tools.
#[tokio::test]
async fn an_own_names_look_alike_never_pushes_out_the_prefixed_tool_it_resembles() {
    let work = Work::new("own-names-look-alike");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/listed_upstream.py");
    let a_tools = listed(&work, "a", &["echo"]);
    let b_tools = listed(&work, "b", &["echo"]);
    let x_tools = listed(&work, "x_", &["y"]);
    let (a_record, b_record) = (work.path("a.jsonl"), work.path("b.jsonl"));
    let x_record = work.path("x_.jsonl");
    work.write(
        "policy.json",
        r#"{"rules": [
          {"id": "a-echo", "tool": "echo", "action": "allow", "reason": "r"},
          {"id": "b-echo", "tool": "b__echo", "action": "allow", "reason": "r"},
          {"id": "x-y", "tool": "x___y", "action": "allow", "reason": "r"}
        ]}"#,
    );
    let config = work.write(
        "gateway.toml",
        &format!(
            "[upstreams.a]\ncommand = \"python3\"\nargs = [{script:?}, {a_tools:?}, {a_record:?}]\nown_names = true\n\
             [upstreams.b]\ncommand = \"python3\"\nargs = [{script:?}, {b_tools:?}, {b_record:?}]\n\
             [upstreams.x]\ncommand = \"python3\"\nargs = [{script:?}, {b_tools:?}, {x_record:?}]\n\
             [upstreams.x_]\ncommand = \"python3\"\nargs = [{script:?}, {x_tools:?}, {x_record:?}]\n\
             [policy]\nlayers = [\"policy.json\"]\n"
        ),
    );
    let config_arg = config.to_str().unwrap();
    assert!(run(&["pin", "--config", config_arg]).status.success());
    // Upstream `a` now lists a look-alike of b's served tool, new since it was pinned.
    listed(&work, "a", &["echo", "B__echo"]);
    let output = run(&["check", "--config", config_arg]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("upstream b: 1 of 1 tools served"),
        "{stdout}"
    );
    assert!(
        stdout.contains("upstream x_: 1 of 1 tools served"),
        "{stdout}"
    );
    // Accepted too, it is still the one left out.
    assert!(run(&["pin", "--config", config_arg]).status.success());
    let output = run(&["check", "--config", config_arg]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("upstream b: 1 of 1 tools served"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "\"B__echo\" of upstream a: its name reads as another upstream's served tool"
        ),
        "{stdout}"
    );
    let client = serve(&config).await;
    assert_eq!(
        call(&client, "b__echo", json!({})).await,
        ("ran echo".to_owned(), false)
    );
    assert_eq!(
        call(&client, "x___y", json!({})).await,
        ("ran y".to_owned(), false)
    );
    assert_eq!(work.read("b.jsonl").lines().count(), 1);
}
