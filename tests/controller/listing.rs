//! What a controller shows and lists (what an MCP host lists): its current tools in order; a tool is
//! hidden only when the policy denies every call to it, whatever the arguments, and none when the
//! policy does not fit the registry; the generation moves with every replacement of the registry
//! or policy.

use std::sync::Arc;
use toolgate::policy::Layers;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::*;

fn four_tools() -> ToolRegistry {
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
    let registry = four_tools();
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
    let controller =
        ToolController::new(four_tools(), ToolPolicy::new(["read"], ["write"]).unwrap());
    assert_eq!(listed(&controller), ["read", "write"]);
}

#[test]
fn generation_moves_with_each_replacement_and_not_on_a_refused_one() {
    let controller =
        ToolController::new(four_tools(), ToolPolicy::new(["read"], ["write"]).unwrap());
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
    controller.replace_registry(four_tools()).unwrap();
    assert_eq!(controller.generation(), start + 2);
}

#[test]
fn a_controller_shows_the_specs_of_its_current_tools_in_order() {
    let runs = Arc::default();
    let controller = ToolController::new(
        registry([
            counted("b", json!({"type": "object"}), &runs),
            counted("a", json!({"type": "object"}), &runs),
        ]),
        policy(&["a"], &[]),
    );
    let names: Vec<String> = controller.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["b", "a"]);
    controller
        .replace_registry(registry([counted("c", json!({"type": "object"}), &runs)]))
        .unwrap();
    let names: Vec<String> = controller.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["c"]);
}

#[test]
fn listed_specs_hide_only_what_the_policy_denies_whatever_the_arguments() {
    let runs = Arc::default();
    let tools = || {
        registry([
            counted("a", json!({"type": "object"}), &runs),
            counted("b", json!({"type": "object"}), &runs),
        ])
    };
    let names = |controller: &ToolController| -> Vec<String> {
        controller
            .listed_specs()
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    // A closure cannot say what it denies: every tool stays listed (it may allow some calls).
    let closure = ToolController::new(tools(), |_: &PreparedToolCall| {
        PolicyDecision::deny(Reason::from_static("no"))
    });
    assert_eq!(names(&closure), ["a", "b"]);
    // A name policy shared through an Arc says it, and the Arc forwards it.
    let shared = ToolController::new(tools(), Arc::new(policy(&["a"], &[])));
    assert_eq!(names(&shared), ["a"]);
    let layered = ToolController::new(
        tools(),
        Layers::new().layer("only", policy(&["a"], &[])).unwrap(),
    );
    // A stack hides a tool every layer denies whatever its arguments (here its only layer).
    assert_eq!(
        names(&layered),
        ["a"],
        "a stack hides what every layer denies"
    );
}

#[test]
fn a_controller_over_a_misfit_lists_no_tool() {
    let runs = Arc::default();
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let old = registry([counted("read", schema, &runs)]);
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "r", "tool": "read", "action": "allow", "reason": "r",
            "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}}]}"#,
        &old,
    )
    .unwrap();
    let renamed = registry([counted(
        "read",
        json!({"type": "object", "properties": {"file": {"type": "string"}}}),
        &runs,
    )]);
    let controller = ToolController::new(renamed, policy);
    assert!(
        controller.listed_specs().is_empty(),
        "every call is denied, so nothing is shown"
    );
    assert_eq!(controller.specs().len(), 1);
}
