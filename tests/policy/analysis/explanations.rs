//! Explanations: what decided a call and the smallest change that would allow it, never a value.

use super::*;

#[test]
fn an_explanation_names_what_decided_and_the_smallest_change_allowed_never_a_value() {
    let policy = one(REFUNDS);
    let explain = |tool: &str, arguments: Value, principal: Option<Principal>| {
        let mut call = ToolCall::new("c1", tool, arguments);
        if let Some(principal) = principal {
            call = call.with_principal(principal);
        }
        analysis::explain(&policy, &tools(), call).unwrap()
    };
    let outside = explain(
        "read_file",
        json!({"path": "/home/s3cret-name/notes"}),
        None,
    );
    assert_eq!(outside.decision.action, PolicyAction::Deny);
    assert_eq!(
        outside.summary,
        "denied: no rule allows this call (default deny)"
    );
    assert_eq!(
        outside.allowed_if.as_deref(),
        Some("allowed if /path were under /srv/data")
    );
    let text = format!("{outside:?}");
    assert!(!text.contains("s3cret"), "{text}");

    let big = explain("refund", json!({"cents": 5000, "currency": "EUR"}), None);
    assert_eq!(
        big.summary,
        "denied: no rule allows this call (default deny)"
    );
    let hint = big.allowed_if.unwrap();
    assert!(hint.starts_with("allowed if /cents were "), "{hint}");
    assert!(!hint.contains("5000"), "{hint}");

    let prod = explain("deploy", json!({"env": "prod"}), None);
    assert_eq!(prod.summary, "held for a person by rule \"deploy-prod\"");
    assert_eq!(
        prod.allowed_if.as_deref(),
        Some("allowed if /env were \"dev\"")
    );

    let ops = one(
        r#"{"rules": [{"id": "ops", "tool": "deploy", "action": "allow", "reason": "ops",
            "principals": {"groups": ["ops"]}},
           {"id": "no-prod", "tool": "deploy", "action": "deny", "reason": "never prod",
            "when": {"equals": {"pointer": "/env", "value": "prod"}}}]}"#,
    );
    let explained = analysis::explain(
        &ops,
        &tools(),
        ToolCall::new("c1", "deploy", json!({"env": "staging"})),
    )
    .unwrap();
    assert_eq!(
        explained.allowed_if.as_deref(),
        Some("allowed for a caller in ops")
    );
    let denied = analysis::explain(
        &ops,
        &tools(),
        ToolCall::new("c1", "deploy", json!({"env": "prod"}))
            .with_principal(Principal::new("sam", ["ops"])),
    )
    .unwrap();
    assert_eq!(denied.summary, "denied by rule \"no-prod\"");
    assert!(
        denied
            .allowed_if
            .as_deref()
            .unwrap()
            .starts_with("allowed if /env were \""),
        "{denied:?}"
    );
    // A call that does not fit the schema is not decided at all.
    let refused = analysis::explain(
        &ops,
        &tools(),
        ToolCall::new("c1", "deploy", json!({"env": "moon"})),
    );
    assert!(refused.unwrap_err().contains("env"));
}
