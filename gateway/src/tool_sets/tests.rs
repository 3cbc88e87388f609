//! The set's layer in a stack: outside the set it has no opinion; through it, tools outside are
//! denied (and unlisted), its own layer judges, and the main layers still win.

use std::sync::Arc;

use serde_json::json;
use toolgate::policy::Layers;
use toolgate::{
    Outcome, Principal, RulePolicy, ToolCall, ToolController, ToolDefinition, ToolError,
    ToolRegistry, ToolSpec,
};

use super::{ToolSetConfig, ToolSetLayer, through};

fn registry() -> ToolRegistry {
    let tool = |name: &str| {
        ToolDefinition::new(
            ToolSpec::new(name, "a tool", json!({"type": "object"})),
            |_: &serde_json::Value| -> Result<String, ToolError> { Ok("ran".to_owned()) },
        )
        .unwrap()
    };
    ToolRegistry::new([tool("files__read"), tool("files__write"), tool("git__push")]).unwrap()
}

fn set() -> Arc<ToolSetConfig> {
    Arc::new(ToolSetConfig {
        name: "ops".to_owned(),
        tools: vec!["files__*".to_owned()],
        policy: None,
    })
}

/// Main: everything allowed to `ops` members, `files__write` asks of everyone.
fn controller(own: Option<&str>) -> ToolController {
    let registry = registry();
    let main = RulePolicy::from_json(
        r#"{"rules": [
          {"id": "ops", "tool": "*", "action": "allow", "reason": "ops", "principals": {"groups": ["ops"]}},
          {"id": "writes", "tool": "files__write", "action": "ask", "reason": "writes ask"}
        ]}"#,
        &registry,
    )
    .unwrap();
    let inner = own.map(|text| {
        Arc::new(RulePolicy::from_json(text, &registry).unwrap()) as Arc<dyn toolgate::Policy>
    });
    let layers = Layers::new()
        .layer("main", main)
        .unwrap()
        .layer("toolset:ops", ToolSetLayer::new(set(), inner))
        .unwrap();
    ToolController::try_new(registry, layers).unwrap()
}

fn call(controller: &ToolController, tool: &str, principal: &Principal) -> &'static str {
    match controller.handle(ToolCall::new("c", tool, json!({})).with_principal(principal.clone())) {
        Outcome::Completed(result) if !result.is_error => "ran",
        Outcome::Completed(_) => "denied",
        Outcome::PendingApproval(_) => "asks",
    }
}

#[test]
fn outside_the_set_it_has_no_opinion_and_through_it_only_its_tools_run() {
    let controller = controller(None);
    let alice = Principal::new("alice", ["ops"]);
    let via = through(&alice, &set());
    assert_eq!(via.groups, ["ops", "toolset:ops"]);
    assert_eq!(call(&controller, "git__push", &alice), "ran", "at /mcp");
    assert_eq!(
        call(&controller, "git__push", &via),
        "denied",
        "not in the set"
    );
    assert_eq!(call(&controller, "files__read", &via), "ran");
    assert_eq!(
        call(&controller, "files__write", &via),
        "asks",
        "main's ask stands"
    );
    // Listed through the set: its tools, not the others.
    let listed: Vec<String> = controller
        .listed_specs_for(Some(&via))
        .iter()
        .map(|spec| spec.name.to_string())
        .collect();
    assert_eq!(listed, ["files__read", "files__write"]);
    let listed = controller.listed_specs_for(Some(&alice)).len();
    assert_eq!(listed, 3);
}

#[test]
fn its_own_layer_judges_calls_through_it_and_no_other_and_cannot_loosen_main() {
    let controller = controller(Some(
        r#"{"rules": [
          {"id": "read-asks", "tool": "files__read", "action": "ask", "reason": "the ops set asks for reads"},
          {"id": "write-allowed", "tool": "files__write", "action": "allow", "reason": "tries to loosen"}
        ]}"#,
    ));
    let alice = Principal::new("alice", ["ops"]);
    let via = through(&alice, &set());
    assert_eq!(
        call(&controller, "files__read", &alice),
        "ran",
        "not through the set"
    );
    assert_eq!(
        call(&controller, "files__read", &via),
        "asks",
        "the set's layer"
    );
    assert_eq!(
        call(&controller, "files__write", &via),
        "asks",
        "main's ask wins"
    );
    // A caller outside `ops` gets nothing from main, and the set's layer allows nothing here.
    let bob = through(&Principal::new("bob", Vec::<String>::new()), &set());
    assert_eq!(call(&controller, "files__read", &bob), "asks");
    assert_eq!(call(&controller, "git__push", &bob), "denied");
}

#[test]
fn patterns_match_exactly_or_by_prefix() {
    let set = ToolSetConfig {
        name: "s".to_owned(),
        tools: vec!["git__status".to_owned(), "files__read_*".to_owned()],
        policy: None,
    };
    assert!(set.holds("git__status"));
    assert!(!set.holds("git__status2"));
    assert!(set.holds("files__read_file"));
    assert!(set.holds("files__read_"));
    assert!(!set.holds("files__write"));
    assert_eq!(set.path(), "/sets/s/mcp");
}
