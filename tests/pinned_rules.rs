//! Rule behaviour found unpinned by the mutation run (./mutation-report): `equals` and `one_of`
//! values holding, inside arrays or objects, a number that cannot be compared exactly are refused
//! at load, and array and object values compare by exact numeric value at any depth.

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
