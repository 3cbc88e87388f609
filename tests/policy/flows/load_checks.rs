//! Flow rules and labels checked at load.

use super::*;

#[test]
fn a_label_names_at_least_one_tool() {
    let registry = tools().registry;
    let Err(PolicyLoadError::Invalid { problems }) =
        try_policy(r#""labels": {"empty": []}"#, &registry)
    else {
        panic!("loaded")
    };
    assert!(
        problems[0]
            .to_string()
            .contains("a label has a name and at least one tool"),
        "{problems:?}"
    );
}

#[test]
fn flow_rules_are_checked_at_load() {
    let registry = tools().registry;
    let problems = |extra: &str| match try_policy(extra, &registry) {
        Err(PolicyLoadError::Invalid { problems }) => problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("{other:?}"),
    };
    let found = problems(r#""labels": {"ghost": ["no_such_tool"]}"#);
    assert!(found.contains("labels.ghost: labels no tool"), "{found}");
    let found = problems(
        r#""flows": [{"id": "f", "label": "undefined", "action": "deny", "reason": "r",
                      "after": {"tool": "read_file", "within": "session"}}]"#,
    );
    assert!(
        found.contains("label \"undefined\" is not defined"),
        "{found}"
    );
    let found = problems(
        r#""flows": [{"id": "f", "tool": "write_file", "action": "allow", "reason": "r",
                      "after": {"tool": "read_file", "within": "session"}}]"#,
    );
    assert!(found.contains("never allow"), "{found}");
    let found = problems(
        r#""flows": [{"id": "f", "tool": "write_file", "action": "deny", "reason": "r"}]"#,
    );
    assert!(
        found.contains("exactly one of after and unless_after"),
        "{found}"
    );
    let found = problems(
        r#""flows": [{"id": "allow-deploy", "tool": "deploy", "action": "deny", "reason": "r",
                      "after": {"tool": "deploy", "within": "session", "same": {"earlier": "/nope", "now": "/nope"}}}]"#,
    );
    assert!(
        found.contains("repeats") && found.contains("\"/nope\" names no field"),
        "{found}"
    );
    let found = problems(
        r#""limits": [{"id": "s", "tool": "refund", "sum": "/nope", "max": 5, "per": "day", "over": "deny", "reason": "r"}]"#,
    );
    assert!(found.contains("sum \"/nope\" names no field"), "{found}");
}
