//! Issue 37, item 1: "any other value" is built from a name no string of the policies holds, so a
//! literal, root or principal spelled like the analysis's own names cannot hide a class; and
//! item 2 (first step): two policies whose flow rules or limits differ are never "same".

use std::sync::Arc;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::rules::analysis::{self, Analysed, FindingKind, ToolDiff};
use toolgate::*;

fn tools() -> ToolRegistry {
    let runs = Arc::default();
    registry([
        counted(
            "batch",
            json!({"type": "object", "properties": {
                "paths": {"type": "array", "items": {"type": "string"}},
                "meta": {"type": "object"}
            }, "required": ["paths", "meta"]}),
            &runs,
        ),
        counted(
            "send",
            json!({"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}),
            &runs,
        ),
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            &runs,
        ),
    ])
}

fn policy(text: &str) -> RulePolicy {
    RulePolicy::from_json(text, &tools()).unwrap_or_else(|error| panic!("{error}"))
}

/// The verdict on `tool`; when it differs, each witness is decided again and must differ.
fn compared(old: &str, new: &str, tool: &str) -> ToolDiff {
    let (a, b) = (policy(old), policy(new));
    let diffs = analysis::diff(
        &Analysed::policy(policy(old)),
        &Analysed::policy(policy(new)),
        &tools(),
    );
    let verdict = diffs.into_iter().find(|diff| diff.tool() == tool).unwrap();
    if let ToolDiff::Differs { witnesses, .. } = &verdict {
        for witness in witnesses {
            let decide = |p: &RulePolicy| {
                p.decide_for(tool, witness.principal.as_ref(), &witness.arguments)
                    .action
            };
            assert_ne!(decide(&a), decide(&b), "{:?}", witness.arguments);
        }
    }
    verdict
}

fn differs(old: &str, new: &str, tool: &str) {
    let verdict = compared(old, new, tool);
    assert!(
        matches!(verdict, ToolDiff::Differs { .. }),
        "{old}\n{new}\n{verdict:#?}"
    );
}

#[test]
fn a_rule_on_the_empty_list_or_object_does_not_hide_every_other_one() {
    // Denies the empty batch and allows every other; the new one allows only notes.txt.
    let old = r#"{"rules": [
        {"id": "none", "tool": "batch", "action": "deny", "reason": "r",
         "when": {"equals": {"pointer": "/paths", "value": []}}},
        {"id": "rest", "tool": "batch", "action": "allow", "reason": "r"}]}"#;
    let new = r#"{"rules": [
        {"id": "notes", "tool": "batch", "action": "allow", "reason": "r",
         "when": {"equals": {"pointer": "/paths", "value": ["notes.txt"]}}}]}"#;
    differs(old, new, "batch");
    let old = r#"{"rules": [
        {"id": "none", "tool": "batch", "action": "deny", "reason": "r",
         "when": {"equals": {"pointer": "/meta", "value": {}}}},
        {"id": "rest", "tool": "batch", "action": "allow", "reason": "r"}]}"#;
    let new = r#"{"rules": [
        {"id": "tagged", "tool": "batch", "action": "allow", "reason": "r",
         "when": {"equals": {"pointer": "/meta", "value": {"tag": "a"}}}}]}"#;
    differs(old, new, "batch");
}

#[test]
fn literals_roots_and_principals_spelled_like_the_analysis_names_hide_nothing() {
    for fresh in [
        "zz-toolgate-fresh",
        "ZZ-TOOLGATE-FRESH",
        "zz-toolgate-fresh-1",
        "x zz-toolgate-fresh y",
        "zz-toolgate-freſh",
    ] {
        // "Only this recipient" against "everyone".
        let only = format!(
            r#"{{"rules": [{{"id": "one", "tool": "send", "action": "allow", "reason": "r",
                "when": {{"equals": {{"pointer": "/to", "value": {}}}}}}}]}}"#,
            Value::from(fresh)
        );
        let everyone =
            r#"{"rules": [{"id": "all", "tool": "send", "action": "allow", "reason": "r"}]}"#;
        differs(&only, everyone, "send");
        // "Only this caller" against "every caller" (ids are single words).
        if fresh.contains(' ') {
            continue;
        }
        // With the `unicode` feature a principal id drawn like an ASCII one (`freſh`) does not
        // load: nothing for the analysis to hide.
        #[cfg(feature = "unicode")]
        if !fresh.is_ascii() {
            continue;
        }
        let caller = format!(
            r#"{{"rules": [{{"id": "one", "tool": "send", "action": "allow", "reason": "r",
                "principals": {{"ids": [{}]}}}}]}}"#,
            Value::from(fresh)
        );
        differs(&caller, everyone, "send");
    }
    // "Only under this root" against "anywhere", with a working directory inside it: /etc/shadow.
    let rooted = |roots: &str| {
        format!(
            r#"{{"paths": {{"working_directory": "/zz-toolgate-fresh"}}, "rules": [
                {{"id": "read", "tool": "read_file", "action": "allow", "reason": "r"}},
                {{"id": "outside", "tool": "read_file", "action": "deny", "reason": "r",
                  "when": {{"not": {{"path_within": {{"pointer": "/path", "roots": {roots}}}}}}}}}]}}"#
        )
    };
    let anywhere = r#"{"paths": {"working_directory": "/zz-toolgate-fresh"}, "rules": [
        {"id": "read", "tool": "read_file", "action": "allow", "reason": "r"}]}"#;
    let verdict = compared(&rooted(r#"["/zz-toolgate-fresh"]"#), anywhere, "read_file");
    let ToolDiff::Differs { witnesses, .. } = &verdict else {
        panic!("{verdict:#?}")
    };
    // A witness outside the root, spelled so that a check can judge it.
    assert!(
        witnesses.iter().any(|witness| witness.arguments["path"]
            .as_str()
            .is_some_and(|path| path.starts_with('/') && !path.starts_with("/zz-toolgate-fresh/"))),
        "{verdict:#?}"
    );
}

#[test]
fn policies_whose_flow_rules_or_limits_differ_are_never_the_same() {
    let rules = r#""rules": [{"id": "send", "tool": "send", "action": "allow", "reason": "r"},
                             {"id": "read", "tool": "read_file", "action": "allow", "reason": "r"}]"#;
    let plain = format!("{{{rules}}}");
    let with_flow = format!(
        r#"{{{rules}, "flows": [{{"id": "egress", "tool": "send", "action": "deny", "reason": "r",
            "after": {{"tool": "read_file", "within": "session"}}}}]}}"#
    );
    let with_limit = format!(
        r#"{{{rules}, "limits": [{{"id": "few", "tool": "send", "max": 1, "per": "hour",
            "over": "deny", "reason": "r"}}]}}"#
    );
    for (old, new, names) in [
        (&plain, &with_flow, "flow rules"),
        (&plain, &with_limit, "rate limits"),
        (&with_flow, &with_limit, "flow rules and rate limits"),
    ] {
        for tool in ["send", "read_file", "batch"] {
            let verdict = compared(old, new, tool);
            let ToolDiff::Unknown { reason, .. } = &verdict else {
                panic!("{tool}: {verdict:#?}")
            };
            assert!(
                reason.contains(&format!("the policies' {names} differ")),
                "{reason}"
            );
        }
    }
    // The same flow rule on both sides: compared as before.
    assert!(matches!(
        compared(&with_flow, &with_flow, "send"),
        ToolDiff::Same { .. }
    ));
}

#[test]
fn a_layer_holding_only_flow_rules_is_never_said_to_add_nothing() {
    let base = policy(
        r#"{"rules": [{"id": "send", "tool": "send", "action": "allow", "reason": "r"},
                      {"id": "read", "tool": "read_file", "action": "allow", "reason": "r"}]}"#,
    );
    let flows = policy(
        r#"{"rules": [], "flows": [{"id": "egress", "tool": "send", "action": "deny", "reason": "r",
            "after": {"tool": "read_file", "within": "session"}}]}"#,
    );
    let stack = Analysed::layers([("base", base), ("flows", flows)]).unwrap();
    let found = analysis::findings(&stack, &tools());
    assert!(
        !found
            .iter()
            .any(|finding| finding.kind == FindingKind::LayerAddsNothing),
        "{found:#?}"
    );
}
