//! What an MCP host lists: a tool is hidden only when the policy denies every call to it, and the
//! generation moves with every replacement of the registry or policy.

use serde_json::{Value, json};
use toolgate::*;

fn registry() -> ToolRegistry {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let tool =
        |name: &str| ToolDefinition::new(ToolSpec::new(name, "", schema.clone()), noop).unwrap();
    ToolRegistry::new([tool("read"), tool("write"), tool("shell"), tool("unruled")]).unwrap()
}

fn listed(controller: &ToolController) -> Vec<String> {
    controller
        .listed_specs()
        .into_iter()
        .map(|spec| spec.name)
        .collect()
}

#[test]
fn rule_policy_hides_only_tools_denied_whatever_their_arguments() {
    let policy = r#"{"rules": [
        {"id": "read", "tool": "read", "action": "allow", "reason": "reads"},
        {"id": "read-etc", "tool": "read", "action": "deny", "reason": "not /etc",
         "when": {"path_within": {"pointer": "/path", "roots": ["/etc"]}}},
        {"id": "write", "tool": "write", "action": "ask", "reason": "writes"},
        {"id": "unruled-etc", "tool": "unruled", "action": "deny", "reason": "not /etc",
         "when": {"path_within": {"pointer": "/path", "roots": ["/etc"]}}},
        {"id": "shell", "tool": "shell", "action": "deny", "reason": "no shell"}
    ]}"#;
    let registry = registry();
    let policy = RulePolicy::from_json(policy, &registry).unwrap();
    // A conditional deny keeps `read` listed; an unconditional one hides `shell`; a tool with
    // neither an allow nor an ask rule falls to the default deny for every call.
    for (tool, hidden) in [
        ("read", false),
        ("write", false),
        ("shell", true),
        ("unruled", true),
    ] {
        assert_eq!(policy.denies_every_call(tool), hidden, "{tool}");
    }
    let controller = ToolController::new(registry, policy);
    assert_eq!(listed(&controller), ["read", "write"]);
    // Hidden is not callable: the gate still decides.
    let Outcome::Completed(result) =
        controller.handle(ToolCall::new("c1", "shell", json!({"path": "/tmp/x"})))
    else {
        panic!("shell must not wait for approval")
    };
    assert!(result.is_error);
}

#[test]
fn tool_policy_hides_tools_it_neither_allows_nor_asks_for() {
    let controller = ToolController::new(registry(), ToolPolicy::new(["read"], ["write"]).unwrap());
    assert_eq!(listed(&controller), ["read", "write"]);
}

#[test]
fn generation_moves_with_each_replacement_and_not_on_a_refused_one() {
    let controller = ToolController::new(registry(), ToolPolicy::new(["read"], ["write"]).unwrap());
    let start = controller.generation();
    controller
        .replace_policy(ToolPolicy::new(["read", "shell"], Vec::<String>::new()).unwrap())
        .unwrap();
    assert_eq!(controller.generation(), start + 1);
    assert_eq!(listed(&controller), ["read", "shell"]);
    let bad = r#"{"rules": [{"id": "x", "tool": "missing", "action": "allow", "reason": "r"}]}"#;
    assert!(
        controller
            .try_replace_policy(|r| RulePolicy::from_json(bad, r))
            .is_err()
    );
    assert_eq!(controller.generation(), start + 1);
    controller.replace_registry(registry()).unwrap();
    assert_eq!(controller.generation(), start + 2);
}
