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
            ToolSpec::new(
                name,
                "a tool",
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            ),
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
fn patterns_are_the_rule_languages() {
    let set = ToolSetConfig {
        name: "s".to_owned(),
        tools: vec![
            "git__status".to_owned(),
            "files__read_*".to_owned(),
            "h__ech?".to_owned(),
            "docs__*resources/read".to_owned(),
        ],
        policy: None,
    };
    let patterns = set.patterns();
    assert!(patterns.hold("git__status"));
    assert!(!patterns.hold("git__status2") && !patterns.hold("GIT__status"));
    assert!(patterns.hold("files__read_file") && patterns.hold("files__read_"));
    assert!(!patterns.hold("files__write"));
    assert!(patterns.hold("h__echo") && !patterns.hold("h__ech"));
    // A gate is held only by a pattern ending with its method, as in an allow rule.
    assert!(
        !ToolSetConfig {
            tools: vec!["files__*".to_owned()],
            ..set.clone()
        }
        .patterns()
        .hold("files__resources/read")
    );
    assert!(patterns.hold("docs__resources/read"));
    assert_eq!(set.path(), "/sets/s/mcp");
}

/// A layer of its own that answers every question with something a caller could tell apart
/// from "nothing": what the set forwards to it, and to whom.
struct Probe;

impl toolgate::Policy for Probe {
    fn decide(&self, _: &toolgate::PreparedToolCall) -> toolgate::PolicyDecision {
        toolgate::PolicyDecision::allow(toolgate::Reason::from_static("probe allows"))
    }
    fn denies_every_call(&self, tool_name: &str) -> bool {
        tool_name == "files__write"
    }
    fn denies_every_call_for(&self, tool_name: &str, _: Option<&Principal>) -> bool {
        tool_name == "files__write"
    }
    fn always_denies_for(&self, tool_name: &str, _: Option<&Principal>) -> bool {
        tool_name == "files__write"
    }
    fn rate_slots(
        &self,
        _: &toolgate::PreparedToolCall,
    ) -> Result<Vec<toolgate::decision::RateSlot>, toolgate::PolicyDecision> {
        Ok(vec![slot()])
    }
    fn result_sources(&self, _: &str) -> Option<toolgate::provenance::ResultSources> {
        Some(toolgate::provenance::ResultSources::new(
            toolgate::provenance::Trust::Trusted,
        ))
    }
    fn judges_results(&self, _: &str) -> bool {
        true
    }
    fn judge_result(
        &self,
        _: &str,
        _: Option<&Principal>,
        result: &mut toolgate::ToolResult,
    ) -> Vec<toolgate::decision::RateSlot> {
        result.content = "judged".to_owned();
        vec![slot()]
    }
}

fn slot() -> toolgate::decision::RateSlot {
    toolgate::decision::RateSlot::new(
        "probe",
        None,
        1,
        toolgate::PolicyAction::Deny,
        toolgate::Reason::from_static("probe limit"),
    )
}

fn prepared(
    runtime: &toolgate::ToolRuntime,
    tool: &str,
    principal: &Principal,
) -> toolgate::PreparedToolCall {
    runtime
        .prepare(ToolCall::new("c", tool, json!({})).with_principal(principal.clone()))
        .unwrap()
}

#[test]
fn its_own_layer_is_asked_only_about_calls_through_it_of_its_tools() {
    use toolgate::Policy as _;
    let registry = toolgate::ToolRuntime::new(registry());
    let layer = ToolSetLayer::new(set(), Some(Arc::new(Probe)));
    let bare = ToolSetLayer::new(set(), None);
    let alice = Principal::new("alice", ["ops"]);
    let via = through(&alice, &set());
    assert_eq!(
        format!("{layer:?}"),
        "ToolSetLayer { set: \"ops\", own_layer: true }"
    );
    // Decisions: no opinion outside; its own layer's through it; a deny for tools outside it.
    let outside = layer.decide(&prepared(&registry, "files__read", &alice));
    assert!(outside.fallback, "{outside:?}");
    let own = layer.decide(&prepared(&registry, "files__read", &via));
    assert_eq!(own.action, toolgate::PolicyAction::Allow);
    let beyond = layer.decide(&prepared(&registry, "git__push", &via));
    assert_eq!(beyond.action, toolgate::PolicyAction::Deny);
    assert!(!beyond.fallback);
    assert!(
        bare.decide(&prepared(&registry, "files__read", &via))
            .fallback
    );
    // Rate slots and result judgement: only through the set, only for its tools.
    assert_eq!(
        layer
            .rate_slots(&prepared(&registry, "files__read", &via))
            .unwrap()
            .len(),
        1
    );
    assert!(
        layer
            .rate_slots(&prepared(&registry, "files__read", &alice))
            .unwrap()
            .is_empty()
    );
    assert!(
        layer
            .rate_slots(&prepared(&registry, "git__push", &via))
            .unwrap()
            .is_empty()
    );
    assert!(
        bare.rate_slots(&prepared(&registry, "files__read", &via))
            .unwrap()
            .is_empty()
    );
    let mut result = toolgate::ToolResult::ok("c", "as returned");
    assert!(
        layer
            .judge_result("files__read", Some(&alice), &mut result)
            .is_empty()
    );
    assert!(
        layer
            .judge_result("git__push", Some(&via), &mut result)
            .is_empty()
    );
    assert_eq!(result.content, "as returned");
    assert_eq!(
        layer
            .judge_result("files__read", Some(&via), &mut result)
            .len(),
        1
    );
    assert_eq!(result.content, "judged");
    assert!(layer.judges_results("files__read") && !bare.judges_results("files__read"));
    // Asked with no caller: a set never classifies (its own layer's `sources` would reach /mcp),
    // but what its own layer reads of results is recorded, as untrusted unless the main layers
    // say otherwise.
    let sources = layer.result_sources("files__read").unwrap();
    assert_eq!(sources.trust, toolgate::provenance::Trust::Untrusted);
    assert!(!sources.classified);
    assert!(bare.result_sources("files__read").is_none());
    // Listing: a caller outside the set is not judged by it; through it, tools outside it and
    // tools its own layer always denies are.
    assert!(
        layer.denies_every_call_for("git__push", Some(&alice)),
        "no opinion counts as no allow"
    );
    assert!(layer.denies_every_call_for("git__push", Some(&via)));
    assert!(!layer.denies_every_call_for("files__read", Some(&via)));
    assert!(layer.denies_every_call_for("files__write", Some(&via)));
    assert!(bare.denies_every_call_for("files__read", Some(&via)));
    assert!(
        !layer.always_denies_for("git__push", Some(&alice)),
        "outside: no deny of its own"
    );
    assert!(layer.always_denies_for("git__push", Some(&via)));
    assert!(!layer.always_denies_for("files__read", Some(&via)));
    assert!(layer.always_denies_for("files__write", Some(&via)));
    assert!(!bare.always_denies_for("files__read", Some(&via)));
    assert!(layer.denies_every_call("files__write") && !layer.denies_every_call("files__read"));
    assert!(bare.denies_every_call("files__read"));
}

#[test]
fn its_own_layer_is_checked_against_the_tools_in_force() {
    use toolgate::Policy as _;
    let with_path = ToolRegistry::new([ToolDefinition::new(
        ToolSpec::new(
            "files__read",
            "a tool",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ),
        |_: &serde_json::Value| -> Result<String, ToolError> { Ok(String::new()) },
    )
    .unwrap()])
    .unwrap();
    let own = RulePolicy::from_json(
        r#"{"rules": [{"id": "tmp", "tool": "files__read", "action": "allow", "reason": "tmp only",
            "when": {"glob": {"pointer": "/path", "pattern": "/tmp/*"}}}]}"#,
        &with_path,
    )
    .unwrap();
    let layer = ToolSetLayer::new(set(), Some(Arc::new(own)));
    assert!(layer.check_registry(&with_path).is_ok());
    // The field the rule judges is gone from the tool's schema.
    assert!(layer.check_registry(&registry()).is_err());
    assert!(
        ToolSetLayer::new(set(), None)
            .check_registry(&registry())
            .is_ok()
    );
}

#[test]
fn a_sets_provenance_rule_holds_when_the_main_layers_read_no_provenance() {
    // The set's own layer asks for a name its caller read in a result; the main layers read no
    // provenance, so nothing was recorded and the rule never held (an independent attack).
    let controller = controller(Some(
        r#"{"rules": [{"id": "files", "tool": "files__*", "action": "allow", "reason": "set"}],
            "flows": [{"id": "read-back", "tool": "files__read", "action": "ask",
                       "reason": "a path a result named",
                       "provenance": {"pointer": "/name", "seen_in": ["untrusted"]}}]}"#,
    ));
    let via = through(&Principal::new("alice", Vec::<String>::new()), &set());
    let read = |name: &str| {
        let call =
            ToolCall::new("c", "files__read", json!({"name": name})).with_principal(via.clone());
        match controller.handle(call) {
            Outcome::Completed(result) if !result.is_error => "ran",
            Outcome::Completed(_) => "denied",
            Outcome::PendingApproval(_) => "asks",
        }
    };
    assert_eq!(read("notes"), "ran");
    // Every tool returns "ran": now a value a result carried.
    assert_eq!(read("ran"), "asks");
    assert_eq!(read("other"), "ran");
}
