//! Findings: dead and shadowed rules, and a layer that adds nothing.

use super::*;

#[test]
fn dead_and_shadowed_rules_and_a_layer_that_adds_nothing_are_found() {
    let policy = one(r#"{"rules": [
          {"id": "never", "tool": "refund", "action": "allow", "reason": "contradiction",
           "when": {"all": [{"range": {"pointer": "/cents", "max": 10}}, {"range": {"pointer": "/cents", "min": 20}}]}},
          {"id": "small", "tool": "refund", "action": "allow", "reason": "small",
           "when": {"range": {"pointer": "/cents", "max": 100}}},
          {"id": "review", "tool": "refund", "action": "ask", "reason": "review",
           "when": {"range": {"pointer": "/cents", "min": 50, "max": 80}}},
          {"id": "no-mid", "tool": "refund", "action": "deny", "reason": "mid",
           "when": {"range": {"pointer": "/cents", "min": 40, "max": 90}}},
          {"id": "dev", "tool": "deploy", "action": "allow", "reason": "dev",
           "when": {"equals": {"pointer": "/env", "value": "dev"}}}
        ]}"#);
    let found = analysis::findings(&policy, &tools());
    let kinds: Vec<(Option<&str>, FindingKind)> = found
        .iter()
        .map(|finding| (finding.rule_id.as_deref(), finding.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (Some("never"), FindingKind::Dead),
            (Some("review"), FindingKind::Shadowed)
        ],
        "{found:#?}"
    );
    assert!(found[1].message.contains("it can never ask"), "{found:#?}");

    // A project layer allowing only what the organisation already allows adds nothing.
    let organisation = load(REFUNDS);
    let project = load(
        r#"{"rules": [{"id": "dev-too", "tool": "deploy", "action": "allow", "reason": "dev",
            "when": {"equals": {"pointer": "/env", "value": "dev"}}}]}"#,
    );
    let stack = Analysed::layers([("organisation", organisation), ("project", project)]).unwrap();
    let found = analysis::findings(&stack, &tools());
    assert!(
        found
            .iter()
            .any(|finding| finding.kind == FindingKind::LayerAddsNothing
                && finding.layer == "project"),
        "{found:#?}"
    );
    assert!(
        !found
            .iter()
            .any(|finding| finding.kind == FindingKind::LayerAddsNothing
                && finding.layer == "organisation"),
        "{found:#?}"
    );
}
