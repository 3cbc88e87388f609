//! `check` and `policy diff` on a real upstream's tools: examples checked at load, dead and
//! shadowed rules reported, and two policies compared with a witness call printed as JSON.

use crate::support;

use serde_json::Value;
use support::*;

const POLICY: &str = r#"{"rules": [
  {"id": "echo", "tool": "h__echo", "action": "allow", "reason": "harmless"},
  {"id": "write-srv", "tool": "h__write", "action": "allow", "reason": "inside /srv",
   "when": {"path_within": {"pointer": "/path", "roots": ["/srv"]}}},
  {"id": "no-secrets", "tool": "h__write", "action": "deny", "reason": "secrets",
   "when": {"path_within": {"pointer": "/path", "roots": ["/srv/secret"]}}},
  {"id": "secret-keys-ask", "tool": "h__write", "action": "ask", "reason": "never reached",
   "when": {"path_within": {"pointer": "/path", "roots": ["/srv/secret/keys"]}}}
 ],
 "examples": [
  {"name": "srv", "tool": "h__write", "arguments": {"path": "/srv/x"}, "expect": "allow", "rule": "write-srv"},
  {"name": "etc", "tool": "h__write", "arguments": {"path": "/etc/passwd"}, "expect": "deny"}
 ]}"#;

#[test]
fn check_runs_the_examples_and_warns_of_rules_that_can_never_decide() {
    let work = Work::new("policy-check");
    let config = work.hostile_config("serve", "");
    work.write("policy.json", POLICY);
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("policy.json: 2 examples decided as written"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "policy.json: 3 of 4 rules decide no example: echo, no-secrets, secret-keys-ask"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("warning: layer ")
            && stdout.contains(
                "rule \"secret-keys-ask\" never decides a call: another rule decides every call it applies to; it can never ask"
            ),
        "{stdout}"
    );

    // An example the policy no longer decides as written: the load fails, naming it.
    work.write(
        "policy.json",
        &POLICY.replace(r#""roots": ["/srv"]"#, r#""roots": ["/srv/data"]"#),
    );
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("examples[0] (\"srv\"): expected allow by rule \"write-srv\", decided deny by no rule (default deny)"),
        "{stderr}"
    );
}

#[test]
fn policy_diff_prints_a_witness_per_tool_that_differs() {
    let work = Work::new("policy-diff");
    let config = work.hostile_config("serve", "");
    work.write("policy.json", POLICY);
    let old = work.write("old.json", POLICY);
    // Allowing every path: its own example of /etc/passwd would refuse it, so it has none.
    let without_examples = &POLICY[..POLICY.find(",\n \"examples\"").unwrap()];
    let new = work.write(
        "new.json",
        &format!("{without_examples}}}",).replace(
            r#""roots": ["/srv"]"#,
            r#""roots": ["/"], "allow_root": true"#,
        ),
    );
    let refused = work.write(
        "refused.json",
        &POLICY.replace(
            r#""roots": ["/srv"]"#,
            r#""roots": ["/"], "allow_root": true"#,
        ),
    );
    let output = run(&[
        "policy",
        "diff",
        old.to_str().unwrap(),
        refused.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("refused.json") && stderr.contains("examples[1] (\"etc\"): expected deny"),
        "{stderr}"
    );
    let config = config.to_str().unwrap();

    let output = run(&[
        "policy",
        "diff",
        old.to_str().unwrap(),
        old.to_str().unwrap(),
        "--config",
        config,
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("0 differ"), "{stderr}");

    let output = run(&[
        "policy",
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--config",
        config,
    ]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let write = lines
        .iter()
        .find(|line| line["tool"] == "h__write")
        .unwrap();
    assert_eq!(write["verdict"], "differs", "{write}");
    let witness = &write["witnesses"][0];
    let path = witness["arguments"]["path"].as_str().unwrap();
    assert!(!path.starts_with("/srv"), "{path}");
    assert_eq!(witness["old"]["action"], "deny");
    assert_eq!(witness["new"]["action"], "allow");
    let echo = lines.iter().find(|line| line["tool"] == "h__echo").unwrap();
    assert_eq!(echo["verdict"], "same", "{echo}");
    assert!(stderr.contains("1 differ"), "{stderr}");

    // A file that does not load: exit 1, naming it.
    let broken = work.write("broken.json", "{\"rules\": [");
    let output = run(&[
        "policy",
        "diff",
        old.to_str().unwrap(),
        broken.to_str().unwrap(),
        "--config",
        config,
    ]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("broken.json"), "{stderr}");
}

#[test]
fn policy_explain_names_the_deciding_layer_and_a_change_that_would_be_allowed() {
    let work = Work::new("policy-explain");
    let config = work.hostile_config("serve", "");
    let layer = work.write("policy.json", POLICY);
    let config = config.to_str().unwrap();
    let explain = |arguments: &str| {
        let output = run(&[
            "policy", "explain", "h__write", arguments, "--config", config,
        ]);
        let (stdout, stderr) = text(&output);
        (output.status.code(), stdout, stderr)
    };
    let (code, stdout, stderr) = explain(r#"{"path": "/home/alice-private/x"}"#);
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    let explained: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        explained["summary"],
        "denied: no rule allows this call (default deny)"
    );
    assert_eq!(explained["allowed_if"], "allowed if /path were under /srv");
    assert!(!stdout.contains("alice-private"), "{stdout}");

    let (code, stdout, _) = explain(r#"{"path": "/srv/secret/k"}"#);
    assert_eq!(code, Some(3));
    let explained: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        explained["summary"],
        format!(
            "denied by rule \"no-secrets\" of layer {:?}",
            layer.display().to_string()
        )
    );
    assert!(
        explained["allowed_if"]
            .as_str()
            .unwrap()
            .starts_with("allowed if /path were "),
        "{explained}"
    );

    let (code, stdout, _) = explain(r#"{"path": "/srv/ok"}"#);
    assert_eq!(code, Some(0), "{stdout}");
    // Not JSON, or not what the tool takes: a problem, nothing decided.
    let (code, _, stderr) = explain("{");
    assert_eq!(code, Some(1));
    assert!(stderr.contains("not JSON"), "{stderr}");
    let (code, _, stderr) = explain(r#"{"path": 7}"#);
    assert_eq!(code, Some(1), "{stderr}");
}

#[test]
fn tools_declaring_an_output_schema_are_analysed_like_any_other() {
    let work = Work::new("policy-typed");
    let config = work.hostile_config("serve", "");
    work.write("record.jsonl.typed", "");
    let policy = r#"{"rules": [
      {"id": "typed-small", "tool": "h__typed", "action": "allow", "reason": "small",
       "when": {"range": {"pointer": "/n", "max": 10}}}]}"#;
    work.write("policy.json", policy);
    let config = config.to_str().unwrap();
    let output = run(&["check", "--config", config]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains("not analysed") && !stderr.contains("output_schema"),
        "{stdout}"
    );
    work.write(
        "policy.new.json",
        &policy.replace(r#""max": 10"#, r#""max": 20"#),
    );
    let (old, new) = (work.path("policy.json"), work.path("policy.new.json"));
    let output = run(&[
        "policy",
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--config",
        config,
    ]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    let typed: Value = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["tool"] == "h__typed")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(typed["verdict"], "differs", "{typed}");
    let output = run(&[
        "policy",
        "explain",
        "h__typed",
        r#"{"n": 15}"#,
        "--config",
        config,
    ]);
    assert!(
        text(&output).0.contains("allowed if /n were 10"),
        "{:?}",
        text(&output)
    );
}

/// Issue 37, item 5: the gateway's `policy diff` answers what the library's `analysis::diff`
/// answers on the same pair — verdict, reason and witnesses alike — built here from the tool
/// definitions the pins file keeps.
#[test]
fn the_gateway_and_the_library_give_the_same_diff() {
    use toolgate::rules::analysis::{self, Analysed};
    let work = Work::new("policy-agreement");
    let config = work.hostile_config("serve", "");
    let config = config.to_str().unwrap();
    assert!(run(&["pin", "--config", config]).status.success());
    let old_text = POLICY;
    let without_examples = &POLICY[..POLICY.find(",\n \"examples\"").unwrap()];
    let new_text = format!("{without_examples}}}")
        .replace(r#""roots": ["/srv"]"#, r#""roots": ["/srv", "/tmp"]"#);
    let old = work.write("old.json", old_text);
    let new = work.write("new.json", &new_text);
    let output = run(&[
        "policy",
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--config",
        config,
    ]);
    assert_eq!(output.status.code(), Some(3), "{:?}", text(&output));
    let gateway: Vec<Value> = text(&output)
        .0
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();

    let pins: Value = serde_json::from_str(&work.read("gateway.pins.json")).unwrap();
    let noop = |_: &Value| -> Result<String, toolgate::ToolError> { Ok(String::new()) };
    let definitions = pins["definitions"]["h"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, tool)| {
            toolgate::ToolDefinition::new(
                toolgate::ToolSpec::new(
                    format!("h__{name}"),
                    tool["description"].as_str().unwrap_or_default(),
                    tool["inputSchema"].clone(),
                ),
                noop,
            )
            .unwrap()
        });
    // Beside the pinned tools, the gates `serve` registers for every upstream.
    use toolgate::mcp::passthrough::{get_prompt_schema, read_resource_schema};
    let gates = [
        (
            "h__resources/read",
            "Reads a resource of this upstream (resources/read).",
            read_resource_schema(),
        ),
        (
            "h__prompts/get",
            "Gets a prompt of this upstream (prompts/get).",
            get_prompt_schema(),
        ),
    ]
    .map(|(name, description, schema)| {
        toolgate::ToolDefinition::new(toolgate::ToolSpec::new(name, description, schema), noop)
            .unwrap()
    });
    let registry = toolgate::ToolRegistry::new(definitions.chain(gates)).unwrap();
    // The gateway reads every policy as a stack of layers named by their files (one here).
    let load = |path: &std::path::Path, text: &str| {
        let policy = toolgate::RulePolicy::from_json(text, &registry).unwrap();
        Analysed::layers([(path.display().to_string(), policy)]).unwrap()
    };
    let library = analysis::diff(&load(&old, old_text), &load(&new, &new_text), &registry);
    let library: Vec<Value> = library
        .iter()
        .map(|diff| serde_json::to_value(diff).unwrap())
        .collect();
    let by_tool = |lines: &[Value]| -> std::collections::BTreeMap<String, Value> {
        lines
            .iter()
            .map(|line| (line["tool"].as_str().unwrap().to_owned(), line.clone()))
            .collect()
    };
    assert_eq!(by_tool(&gateway), by_tool(&library));
    assert!(
        gateway.iter().any(|line| line["verdict"] == "differs"),
        "{gateway:#?}"
    );
}

/// Issue 41, item 4: with every upstream's definitions pinned, `policy diff` and `policy explain`
/// read the tools from the pins file and start nothing — an upstream that cannot start is no
/// obstacle, and nothing runs.
#[test]
fn policy_diff_and_explain_read_pinned_tools_and_start_no_upstream() {
    let work = Work::new("policy-offline");
    let config = work.hostile_config("serve", "");
    let config_arg = config.to_str().unwrap();
    assert!(run(&["pin", "--config", config_arg]).status.success());
    let starts = work.read("record.jsonl.starts").lines().count();
    // The upstream's command now fails: only the pins can answer.
    let written = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        written.replace(
            "command = \"python3\"",
            "command = \"/nonexistent/python3\"",
        ),
    )
    .unwrap();
    let old = work.write("old.json", POLICY);
    let without_examples = &POLICY[..POLICY.find(",\n \"examples\"").unwrap()];
    let new = work.write(
        "new.json",
        &format!("{without_examples}}}")
            .replace(r#""roots": ["/srv"]"#, r#""roots": ["/srv", "/tmp"]"#),
    );
    let output = run(&[
        "policy",
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--config",
        config_arg,
    ]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("read from the pins file (no upstream was started)"),
        "{stderr}"
    );
    assert!(stdout.contains(r#""verdict":"differs""#), "{stdout}");
    work.write("policy.json", POLICY);
    let output = run(&[
        "policy",
        "explain",
        "h__write",
        r#"{"path": "/tmp/x"}"#,
        "--config",
        config_arg,
    ]);
    assert!(
        text(&output).0.contains("allowed if /path were under /srv"),
        "{:?}",
        text(&output)
    );
    assert_eq!(
        work.read("record.jsonl.starts").lines().count(),
        starts,
        "no upstream was started"
    );
    // A definition edited in the pins file (its digest kept) is not trusted: the upstreams are
    // started instead, and here they cannot be.
    let mut pins: Value = serde_json::from_str(&work.read("gateway.pins.json")).unwrap();
    pins["definitions"]["h"]["write"]["inputSchema"]["properties"]["path"]["type"] =
        Value::from("integer");
    work.write("gateway.pins.json", &pins.to_string());
    let output = run(&[
        "policy",
        "explain",
        "h__write",
        r#"{"path": 5}"#,
        "--config",
        config_arg,
    ]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("\"write\" does not match its digest; the upstreams are started instead"),
        "{stderr}"
    );
}

/// The gates `serve` registers beside the tools (an upstream's `resources/read` and
/// `prompts/get`) are in the tools `policy diff` and `explain` read from the pins file: a change
/// that opens them is never called the same.
#[test]
fn policy_diff_from_the_pins_sees_the_gates() {
    let work = Work::new("policy-offline-gates");
    let config = work.hostile_config("serve", "");
    let config_arg = config.to_str().unwrap();
    assert!(run(&["pin", "--config", config_arg]).status.success());
    let old = work.write(
        "old.json",
        r#"{"rules": [{"id": "echo", "tool": "h__echo", "action": "allow", "reason": "r"}]}"#,
    );
    let new = work.write(
        "new.json",
        r#"{"rules": [{"id": "echo", "tool": "h__echo", "action": "allow", "reason": "r"},
                      {"id": "read", "tool": "h__resources/read", "action": "allow", "reason": "r"}]}"#,
    );
    let output = run(&[
        "policy",
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--config",
        config_arg,
    ]);
    let (stdout, stderr) = text(&output);
    assert!(
        stderr.contains("read from the pins file (no upstream was started)"),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("h__resources/read") && stdout.contains(r#""verdict":"differs""#),
        "{stdout}"
    );
    work.write("policy.json", &work.read("new.json"));
    let output = run(&[
        "policy",
        "explain",
        "h__resources/read",
        r#"{"uri": "test://x"}"#,
        "--config",
        config_arg,
    ]);
    let (stdout, stderr) = text(&output);
    assert!(stdout.contains("allow"), "{stdout}\n{stderr}");
}

/// Issue 39, item 4: a tool description that instructs the model, links out, hides markup or
/// carries invisible characters is reported by `check` and `pin` (and logged by `serve`).
#[test]
fn check_and_pin_report_what_a_description_tells_the_model() {
    let work = Work::new("policy-poisoned-description");
    let config = work.hostile_config("serve", "");
    work.write("record.jsonl.poisoned", "");
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let warning = stdout
        .lines()
        .find(|line| line.contains("warning: the description of tool \"h__poisoned\""))
        .unwrap_or_else(|| panic!("{stdout}"));
    for said in [
        r#"an instruction to the model ("<important>")"#,
        r#"an instruction to the model ("do not tell the user")"#,
        r#"a link to "exfil.example""#,
        "markup a client may hide",
        "1 invisible characters",
    ] {
        assert!(warning.contains(said), "{said}: {warning}");
    }
    // A plain description is not reported.
    assert!(!stdout.contains("tool \"h__echo\""), "{stdout}");
    let output = run(&["pin", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("warning: the description of tool \"h__poisoned\""),
        "{stdout}"
    );
}
