//! Pairs of policies the analysis called "same" though a controller decides some call
//! differently, found by an independent attack (7 December 2026): an object literal compared
//! normalized that the schema refuses as written, and numbers at 2^53 — an integer the schema
//! lists whose float spelling `range` cannot judge, and exact integers past a bound of 2^53 - 1.
//! Each pair is shown to decide a call differently, so the verdict is not vacuous.
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use serde_json::{Value, json};
use toolgate::rules::analysis::{self, Analysed, Finding, ToolDiff};
use toolgate::*;

fn tools(name: &str, schema: Value) -> ToolRegistry {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok("ok".to_owned()) };
    ToolRegistry::new([ToolDefinition::new(ToolSpec::new(name, "A tool.", schema), noop).unwrap()])
        .unwrap()
}

fn load(text: &str, registry: &ToolRegistry) -> RulePolicy {
    RulePolicy::from_json(text, registry).unwrap_or_else(|e| panic!("{e}"))
}

/// `a` and `b` decide `arguments` (JSON text, so a float stays a float) of `tool` apart, and the
/// analysis does not call them the same.
fn told_apart(schema: &Value, tool: &str, a: &str, b: &str, arguments: &str) {
    let registry = || tools(tool, schema.clone());
    let ran = |policy: &str| {
        let controller = ToolController::new(registry(), load(policy, &registry()));
        let arguments: Value = serde_json::from_str(arguments).unwrap();
        matches!(
            controller.handle(ToolCall::new("c", tool, arguments)),
            Outcome::Completed(result) if !result.is_error
        )
    };
    assert_ne!(ran(a), ran(b), "{arguments}: the two decide it alike");
    let registry = registry();
    let diffs = analysis::diff(
        &Analysed::policy(load(a, &registry)),
        &Analysed::policy(load(b, &registry)),
        &registry,
    );
    let verdict = diffs.iter().find(|diff| diff.tool() == tool).unwrap();
    assert!(
        !matches!(verdict, ToolDiff::Same { .. }),
        "{arguments}: {verdict:?}"
    );
}

fn allow_when(condition: &str) -> String {
    format!(
        r#"{{"rules": [{{"id": "r", "tool": "pay", "action": "allow", "reason": "r",
            "when": {condition}}}]}}"#
    )
}

#[cfg(feature = "unicode")]
#[test]
fn a_normalized_list_or_object_literal_the_schema_refuses_as_written_is_no_empty_class() {
    let schema = json!({"type": "object", "properties": {
        "cfg": {"type": "object", "properties": {"env": {"enum": ["dev", "prod"]}},
                "additionalProperties": false},
        "envs": {"type": "array", "items": {"enum": ["dev", "prod"]}}
    }});
    let policy = |pointer: &str, value: Value| {
        format!(
            r#"{{"text": {{"normalize": true}}, "rules": [{{"id": "r", "tool": "pay",
                "action": "allow", "reason": "r",
                "when": {{"equals": {{"pointer": "{pointer}", "value": {value}}}}}}}]}}"#
        )
    };
    told_apart(
        &schema,
        "pay",
        &policy("/cfg", json!({"env": "PROD"})),
        &policy("/cfg", json!({"env": "STAGING"})),
        r#"{"cfg": {"env": "prod"}}"#,
    );
    told_apart(
        &schema,
        "pay",
        &policy("/envs", json!(["PROD"])),
        &policy("/envs", json!(["STAGING"])),
        r#"{"envs": ["prod"]}"#,
    );
}

#[test]
fn an_integer_the_schema_lists_past_two_to_the_53_is_also_its_float() {
    let schema = json!({"type": "object", "required": ["n"],
        "properties": {"n": {"enum": [5, 9_007_199_254_740_992_u64]}}});
    let all = r#"{"rules": [{"id": "r", "tool": "pay", "action": "allow", "reason": "r"}]}"#;
    let ranged = allow_when(r#"{"range": {"pointer": "/n", "min": 0}}"#);
    told_apart(&schema, "pay", &ranged, all, r#"{"n": 9007199254740992.0}"#);
    // Inside an object the schema lists whole, too.
    let schema = json!({"type": "object", "required": ["o"],
        "properties": {"o": {"type": "object", "properties": {"n": {"type": "number"}},
            "enum": [{"n": 5}, {"n": 9_007_199_254_740_992_u64}]}}});
    let ranged = allow_when(r#"{"range": {"pointer": "/o/n", "min": 0}}"#);
    told_apart(
        &schema,
        "pay",
        &ranged,
        all,
        r#"{"o": {"n": 9007199254740992.0}}"#,
    );
}

#[test]
fn exact_integers_past_a_bound_of_two_to_the_53_less_one_are_a_class() {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    told_apart(
        &schema,
        "pay",
        &allow_when(r#"{"range": {"pointer": "/n", "min": 0}}"#),
        &allow_when(r#"{"range": {"pointer": "/n", "min": 0, "max": 9007199254740991}}"#),
        r#"{"n": 9007199254740992}"#,
    );
    told_apart(
        &schema,
        "pay",
        &allow_when(r#"{"range": {"pointer": "/n", "max": 0}}"#),
        &allow_when(r#"{"range": {"pointer": "/n", "min": -9007199254740991, "max": 0}}"#),
        r#"{"n": -9007199254740992}"#,
    );
}

/// `findings` calls a rule dead only where the classes cover every call: a rule allowing the exact
/// integers past 2^53 - 1 is live.
#[test]
fn a_rule_allowing_only_integers_past_two_to_the_53_is_not_called_dead() {
    let registry = tools(
        "pay",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    );
    let policy = load(
        r#"{"rules": [
          {"id": "small", "tool": "pay", "action": "allow", "reason": "small",
           "when": {"range": {"pointer": "/n", "min": 0, "max": 10}}},
          {"id": "big", "tool": "pay", "action": "allow", "reason": "big",
           "when": {"not": {"range": {"pointer": "/n", "max": 9007199254740991}}}}]}"#,
        &registry,
    );
    let decision = policy.decide_arguments("pay", &json!({"n": 9007199254740992_u64}));
    assert_eq!(decision.rule_id.as_deref(), Some("big"));
    let found = analysis::findings(&Analysed::policy(policy), &registry);
    let about_big = |finding: &Finding| finding.rule_id.as_deref() == Some("big");
    assert!(!found.iter().any(about_big), "{found:?}");
}
