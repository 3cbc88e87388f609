//! Rule behaviour found unpinned by the mutation run (./mutation-report): `equals` and `one_of`
//! values holding, inside arrays or objects, a number that cannot be compared exactly are refused
//! at load, and array and object values compare by exact numeric value at any depth.

#[path = "support/common.rs"]
mod common;

use common::*;
use serde_json::{Value, json};
use toolgate::rules::PolicyLoadError;
use toolgate::*;

fn tools() -> ToolRegistry {
    registry([counted(
        "set",
        json!({"type": "object", "properties": {"opts": {}}}),
        &Default::default(),
    )])
}

fn rule(condition: &str) -> String {
    format!(
        r#"{{"rules": [{{"id": "d", "tool": "set", "action": "deny", "reason": "d", "when": {condition}}},
                      {{"id": "a", "tool": "set", "action": "allow", "reason": "a"}}]}}"#
    )
}

#[test]
fn inexact_numbers_nested_in_equals_and_one_of_values_are_load_errors() {
    for condition in [
        r#"{"equals": {"pointer": "/opts", "value": [1, 18446744073709551616]}}"#,
        r#"{"equals": {"pointer": "/opts", "value": {"n": 1e300}}}"#,
        r#"{"equals": {"pointer": "/opts", "value": {"deep": [[9007199254740993.0]]}}}"#,
        r#"{"one_of": {"pointer": "/opts", "values": [[1], [1e20]]}}"#,
        r#"{"one_of": {"pointer": "/opts", "values": [{"n": -1e300}]}}"#,
    ] {
        match RulePolicy::from_json(&rule(condition), &tools()) {
            Err(PolicyLoadError::Invalid { problems }) => {
                assert_eq!(problems.len(), 1, "{condition}: {problems:?}")
            }
            other => panic!("{condition}: expected a load error, got {other:?}"),
        }
    }
}

#[test]
fn equals_on_arrays_and_objects_compares_numbers_by_value_at_any_depth() {
    let policy = RulePolicy::from_json(
        &rule(r#"{"equals": {"pointer": "/opts", "value": [1, {"n": 2.5, "m": [3]}]}}"#),
        &tools(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let action = |opts: Value| {
        policy
            .decide_arguments("set", &json!({ "opts": opts }))
            .action
    };
    assert_eq!(action(json!([1, {"n": 2.5, "m": [3]}])), PolicyAction::Deny);
    assert_eq!(
        action(json!([1.0, {"m": [3.0], "n": 2.5}])),
        PolicyAction::Deny
    );
    assert_eq!(
        action(json!([1, {"n": 2.5, "m": [4]}])),
        PolicyAction::Allow
    );
    assert_eq!(action(json!([1, {"n": 2.5}])), PolicyAction::Allow);
    assert_eq!(
        action(json!([1, {"n": 2.5, "m": [3], "x": 0}])),
        PolicyAction::Allow
    );
    assert_eq!(
        action(json!([{"n": 2.5, "m": [3]}, 1])),
        PolicyAction::Allow
    );
    assert_eq!(action(json!({"0": 1})), PolicyAction::Allow);
}

#[test]
fn a_tool_covered_only_by_conditional_pattern_denies_is_denied_outright() {
    let tools = registry([counted(
        "srv__read",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        &Default::default(),
    )]);
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "d", "tool": "srv__*", "action": "deny", "reason": "d",
                       "when": {"equals": {"pointer": "/path", "value": "secret"}}}]}"#,
        &tools,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    // Allowed by nothing: every call is denied (the default), so the tool is not listed.
    assert!(policy.denies_every_call("srv__read"));
    // A tool the pattern covers that is registered later is judged by the group's rules.
    assert!(policy.denies_every_call("srv__later"));
    let exact = RulePolicy::from_json(
        r#"{"rules": [{"id": "d", "tool": "srv__read", "action": "deny", "reason": "d",
                       "when": {"equals": {"pointer": "/path", "value": "secret"}}}]}"#,
        &tools,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert!(exact.denies_every_call("srv__read"), "named exactly, too");
    let controller = ToolController::new(tools, policy);
    assert!(controller.listed_specs().is_empty());
}

#[test]
fn read_errors_compare_by_kind_and_text_and_show_the_os_error() {
    let missing =
        std::env::temp_dir().join(format!("toolgate-no-such-policy-{}", std::process::id()));
    let read_error = |path: &std::path::Path| match RulePolicy::from_file(path, &tools()) {
        Err(PolicyLoadError::Read { source, .. }) => source,
        other => panic!("expected a read error, got {other:?}"),
    };
    let (first, again) = (read_error(&missing), read_error(&missing));
    assert_eq!(first, again);
    let directory = read_error(&std::env::temp_dir());
    assert_ne!(first, directory, "not found is not is-a-directory");
    let os = std::error::Error::source(&first)
        .expect("the io::Error")
        .to_string();
    assert_eq!(first.to_string(), os);
    assert!(!os.is_empty());
}

#[test]
fn a_pattern_rule_inert_on_every_tool_it_covers_is_a_load_error_naming_the_stricter_rule() {
    let runs = std::sync::Arc::default();
    let registry = ToolRegistry::new([
        counted("srv__a", json!({"type": "object"}), &runs),
        counted("srv__b", json!({"type": "object"}), &runs),
    ])
    .unwrap();
    let load =
        |rules: &str| RulePolicy::from_json(&format!(r#"{{"rules": [{rules}]}}"#), &registry);
    let pattern =
        r#"{"id": "srv", "tool": "srv__*", "action": "allow", "reason": "the server's tools"}"#;
    for (stricter, verb) in [("deny", "denies"), ("ask", "asks for")] {
        let both = format!(
            r#"{pattern},
               {{"id": "a", "tool": "srv__a", "action": "{stricter}", "reason": "r"}},
               {{"id": "b", "tool": "srv__b", "action": "{stricter}", "reason": "r"}}"#
        );
        match load(&both) {
            Err(PolicyLoadError::Invalid { problems }) => {
                let problem = problems
                    .iter()
                    .find(|p| p.place == r#"rule "srv""#)
                    .unwrap_or_else(|| panic!("{problems:?}"));
                assert!(
                    problem.message.starts_with("can never decide: rule")
                        && problem.message.contains(&format!(" {verb} tool \"srv__")),
                    "{}",
                    problem.message
                );
            }
            other => panic!("{stricter}: {other:?}"),
        }
        // Inert on one tool only: it still decides the other, so it loads.
        let one = format!(
            r#"{pattern}, {{"id": "a", "tool": "srv__a", "action": "{stricter}", "reason": "r"}}"#
        );
        assert!(load(&one).is_ok(), "{stricter}");
    }
}
