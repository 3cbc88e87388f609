//! Issue 37, item 3: the analysis answers for the schemas real servers declare — numbers with
//! their own bounds (classes clipped to `minimum` / `maximum`, exclusive bounds respected).

use std::sync::Arc;

use crate::common::*;
use serde_json::json;
use toolgate::rules::analysis::{self, Analysed, ToolDiff};
use toolgate::*;

fn tools() -> ToolRegistry {
    let runs = Arc::default();
    registry([
        counted(
            "refund",
            json!({"type": "object", "properties": {
                "cents": {"type": "integer", "minimum": 0, "maximum": 1000}
            }, "required": ["cents"]}),
            &runs,
        ),
        counted(
            "dose",
            json!({"type": "object", "properties": {
                "ml": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 5}
            }, "required": ["ml"]}),
            &runs,
        ),
    ])
}

fn verdict(old: &str, new: &str, tool: &str) -> ToolDiff {
    let load = |text: &str| {
        Analysed::policy(RulePolicy::from_json(text, &tools()).unwrap_or_else(|e| panic!("{e}")))
    };
    analysis::diff(&load(old), &load(new), &tools())
        .into_iter()
        .find(|diff| diff.tool() == tool)
        .unwrap()
}

fn rule(tool: &str, when: &str) -> String {
    format!(
        r#"{{"rules": [{{"id": "r", "tool": "{tool}", "action": "allow", "reason": "r", "when": {when}}}]}}"#
    )
}

#[test]
fn a_range_inside_the_schemas_bounds_is_compared_exactly() {
    let anything =
        r#"{"rules": [{"id": "r", "tool": "refund", "action": "allow", "reason": "r"}]}"#;
    // Every valid amount is at least 0: a rule saying so allows what no rule at all allows.
    let from_zero = rule("refund", r#"{"range": {"pointer": "/cents", "min": 0}}"#);
    let to_limit = rule("refund", r#"{"range": {"pointer": "/cents", "max": 1000}}"#);
    for same in [&from_zero, &to_limit] {
        let diff = verdict(same, anything, "refund");
        assert!(matches!(diff, ToolDiff::Same { .. }), "{same}: {diff:#?}");
    }
    let small = rule("refund", r#"{"range": {"pointer": "/cents", "max": 100}}"#);
    let larger = rule("refund", r#"{"range": {"pointer": "/cents", "max": 200}}"#);
    let ToolDiff::Differs { witnesses, .. } = verdict(&small, &larger, "refund") else {
        panic!("a wider range differs")
    };
    let cents = witnesses[0].arguments["cents"].as_i64().unwrap();
    assert!((101..=200).contains(&cents), "{cents}");
    // A rule bound past the schema's: the part beyond it holds no valid call.
    let beyond = rule("refund", r#"{"range": {"pointer": "/cents", "max": 5000}}"#);
    let diff = verdict(&beyond, anything, "refund");
    assert!(matches!(diff, ToolDiff::Same { .. }), "{diff:#?}");
}

#[test]
fn exclusive_bounds_are_respected() {
    let anything = r#"{"rules": [{"id": "r", "tool": "dose", "action": "allow", "reason": "r"}]}"#;
    let positive = rule(
        "dose",
        r#"{"not": {"range": {"pointer": "/ml", "max": 0}}}"#,
    );
    let diff = verdict(&positive, anything, "dose");
    assert!(matches!(diff, ToolDiff::Same { .. }), "{diff:#?}");
    let up_to_four = rule("dose", r#"{"range": {"pointer": "/ml", "max": 4}}"#);
    let ToolDiff::Differs { witnesses, .. } = verdict(&up_to_four, anything, "dose") else {
        panic!("doses above 4 differ")
    };
    let ml = witnesses[0].arguments["ml"].as_f64().unwrap();
    assert!(ml > 4.0 && ml < 5.0, "{ml}");
}
