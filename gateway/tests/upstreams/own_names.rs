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
