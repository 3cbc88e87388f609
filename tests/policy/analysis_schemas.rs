//! Issue 37, item 3: the analysis answers for the schemas real servers declare — numbers with
//! their own bounds (classes clipped to `minimum` / `maximum`, exclusive bounds respected),
//! strings with a `pattern`, objects with `minProperties`, and required-key alternatives
//! (`oneOf` / `anyOf` of `required` lists).

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
            "refund_order",
            json!({"type": "object", "properties": {
                "order_id": {"type": "string", "pattern": "^ORD-[0-9]{6}$"},
                "cents": {"type": "integer"}
            }, "required": ["order_id", "cents"]}),
            &runs,
        ),
        counted(
            "mail",
            json!({"type": "object", "properties": {
                "to": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z0-9.]+$"}
            }, "required": ["to"]}),
            &runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {
                "command": {"type": "string"},
                "argv": {"type": "array", "items": {"type": "string"}},
                "cwd": {"type": "string"}
            }, "oneOf": [{"required": ["command"]}, {"required": ["argv"]}]}),
            &runs,
        ),
        counted(
            "tag",
            json!({"type": "object", "properties": {
                "label": {"type": "string"},
                "colour": {"enum": ["red", "blue"]}
            }, "minProperties": 1}),
            &runs,
        ),
        counted(
            "batch",
            json!({"type": "object", "properties": {
                "paths": {"type": "array", "minItems": 1,
                          "items": {"type": "string", "pattern": "^[a-z]+\\.txt$"}}
            }, "required": ["paths"]}),
            &runs,
        ),
        counted(
            "debit",
            json!({"type": "object", "properties": {
                "cents": {"type": "integer", "maximum": -5}
            }, "required": ["cents"]}),
            &runs,
        ),
        counted(
            "fetch",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "pattern": "^/[a-z]+(/[a-z]+)*$"}
            }, "required": ["path"]}),
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
fn a_base_call_is_built_inside_bounds_that_exclude_zero() {
    let small = rule("debit", r#"{"range": {"pointer": "/cents", "min": -100}}"#);
    let diff = verdict(&small, &small, "debit");
    assert!(matches!(diff, ToolDiff::Same { .. }), "{diff:#?}");
    let anything = r#"{"rules": [{"id": "r", "tool": "debit", "action": "allow", "reason": "r"}]}"#;
    let ToolDiff::Differs { witnesses, .. } = verdict(&small, anything, "debit") else {
        panic!("debits below -100 differ")
    };
    assert!(witnesses[0].arguments["cents"].as_i64().unwrap() < -100);
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

#[test]
fn strings_with_a_pattern_objects_with_min_properties_and_required_alternatives_are_compared() {
    let cases = [
        // Only one order, against every order.
        (
            "refund_order",
            rule(
                "refund_order",
                r#"{"equals": {"pointer": "/order_id", "value": "ORD-000001"}}"#,
            ),
        ),
        // Only the team's address, against everyone.
        (
            "mail",
            rule(
                "mail",
                r#"{"one_of": {"pointer": "/to", "values": ["ops@example.com"]}}"#,
            ),
        ),
        // Only one command, against any call.
        (
            "shell",
            rule(
                "shell",
                r#"{"equals": {"pointer": "/command", "value": "ls"}}"#,
            ),
        ),
        // Only red tags, against any tag.
        (
            "tag",
            rule(
                "tag",
                r#"{"equals": {"pointer": "/colour", "value": "red"}}"#,
            ),
        ),
    ];
    for (tool, narrow) in cases {
        let anything = format!(
            r#"{{"rules": [{{"id": "r", "tool": "{tool}", "action": "allow", "reason": "r"}}]}}"#
        );
        let ToolDiff::Differs { witnesses, .. } = verdict(&narrow, &anything, tool) else {
            panic!("{tool}: {:#?}", verdict(&narrow, &anything, tool))
        };
        assert!(!witnesses.is_empty());
        let same = verdict(&narrow, &narrow, tool);
        assert!(matches!(same, ToolDiff::Same { .. }), "{tool}: {same:#?}");
    }
}

#[test]
fn lists_with_min_items_and_literals_the_schema_refuses_are_compared() {
    let anything = r#"{"rules": [{"id": "r", "tool": "batch", "action": "allow", "reason": "r"}]}"#;
    // The empty list is refused by the schema: "any other list" is one its items accept.
    let notes = rule(
        "batch",
        r#"{"equals": {"pointer": "/paths", "value": ["notes.txt"]}}"#,
    );
    assert!(matches!(
        verdict(&notes, anything, "batch"),
        ToolDiff::Differs { .. }
    ));
    assert!(matches!(
        verdict(&notes, &notes, "batch"),
        ToolDiff::Same { .. }
    ));
    // A rule on a value no valid call can hold decides nothing: the policies are the same.
    let impossible = r#"{"rules": [{"id": "r", "tool": "refund_order", "action": "allow", "reason": "r"},
        {"id": "never", "tool": "refund_order", "action": "deny", "reason": "r",
         "when": {"equals": {"pointer": "/order_id", "value": "ORD-1"}}}]}"#;
    let plain =
        r#"{"rules": [{"id": "r", "tool": "refund_order", "action": "allow", "reason": "r"}]}"#;
    let diff = verdict(impossible, plain, "refund_order");
    assert!(matches!(diff, ToolDiff::Same { .. }), "{diff:#?}");
}

/// A false "same" an attack found for each: the verdict must be "differs" or "unknown".
#[test]
fn numbers_past_2_to_the_53_old_drafts_and_tuple_pointers_are_never_the_same() {
    let runs = Arc::default();
    let registry = registry([
        counted(
            "big",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            &runs,
        ),
        counted(
            "bounded",
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "exclusiveMaximum": 9_007_199_254_740_993_u64}
            }, "required": ["n"]}),
            &runs,
        ),
        counted(
            "wide",
            json!({"type": "object", "properties": {
                "n": {"type": "number", "minimum": 0, "exclusiveMaximum": 9_007_199_254_740_994_u64}
            }, "required": ["n"]}),
            &runs,
        ),
        counted(
            "old_draft",
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                   "properties": {"mode": {"type": "string", "const": "safe"}}, "required": ["mode"]}),
            &runs,
        ),
        counted(
            "depends",
            json!({"type": "object", "properties": {
                "mode": {"type": "string"}, "why": {"type": "string"}
            }, "dependentRequired": {"mode": ["why"]}}),
            &runs,
        ),
        counted(
            "tuple",
            json!({"type": "object", "properties": {
                "x": {"type": ["object", "array"], "properties": {"0": {"type": "string"}},
                      "prefixItems": [{"type": "number"}]}
            }}),
            &runs,
        ),
    ]);
    let compare = |old: &str, new: &str, tool: &str| {
        let load = |text: &str| {
            Analysed::policy(
                RulePolicy::from_json(text, &registry).unwrap_or_else(|e| panic!("{e}")),
            )
        };
        analysis::diff(&load(old), &load(new), &registry)
            .into_iter()
            .find(|diff| diff.tool() == tool)
            .unwrap()
    };
    let allow = |tool: &str, when: &str| {
        format!(
            r#"{{"rules": [{{"id": "r", "tool": "{tool}", "action": "allow", "reason": "r", "when": {when}}}]}}"#
        )
    };
    let allow_all = |tool: &str, deny_when: &str| {
        format!(
            r#"{{"rules": [{{"id": "a", "tool": "{tool}", "action": "allow", "reason": "r"}},
                {{"id": "d", "tool": "{tool}", "action": "deny", "reason": "r", "when": {deny_when}}}]}}"#
        )
    };
    let plain = |tool: &str| {
        format!(
            r#"{{"rules": [{{"id": "a", "tool": "{tool}", "action": "allow", "reason": "r"}}]}}"#
        )
    };
    let empty = r#"{"rules": []}"#;
    let cases = [
        (
            allow(
                "big",
                r#"{"range": {"pointer": "/n", "min": 9007199254740994, "max": 9007199254741010}}"#,
            ),
            allow(
                "big",
                r#"{"one_of": {"pointer": "/n", "values": [9007199254740994, 9007199254741010]}}"#,
            ),
            "big",
        ),
        (
            allow(
                "bounded",
                r#"{"equals": {"pointer": "/n", "value": 9007199254740992}}"#,
            ),
            empty.to_owned(),
            "bounded",
        ),
        (
            allow_all("wide", r#"{"range": {"pointer": "/n", "max": -1}}"#),
            plain("wide"),
            "wide",
        ),
        (
            allow_all(
                "old_draft",
                r#"{"not": {"equals": {"pointer": "/mode", "value": "safe"}}}"#,
            ),
            plain("old_draft"),
            "old_draft",
        ),
        (
            allow_all(
                "depends",
                r#"{"equals": {"pointer": "/mode", "value": "force"}}"#,
            ),
            plain("depends"),
            "depends",
        ),
        (
            allow("tuple", r#"{"range": {"pointer": "/x/0", "min": 0}}"#),
            empty.to_owned(),
            "tuple",
        ),
    ];
    for (old, new, tool) in cases {
        let diff = compare(&old, &new, tool);
        assert!(!matches!(diff, ToolDiff::Same { .. }), "{tool}: {diff:#?}");
    }
}

#[test]
fn a_class_whose_value_the_schema_refuses_is_a_gap_unless_it_is_a_literal() {
    // "Under /srv" against "exactly /srv": the child built from the fresh name does not fit the
    // pattern, and it stands for every path under /srv — a gap, so never "same".
    let under = rule(
        "fetch",
        r#"{"path_within": {"pointer": "/path", "roots": ["/srv"]}}"#,
    );
    let exactly = rule(
        "fetch",
        r#"{"one_of": {"pointer": "/path", "values": ["/srv"]}}"#,
    );
    let diff = verdict(&under, &exactly, "fetch");
    assert!(!matches!(diff, ToolDiff::Same { .. }), "{diff:#?}");
}
