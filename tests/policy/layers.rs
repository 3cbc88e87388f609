//! Layers: a deny in any layer wins, a lower layer never turns a higher deny or ask into an allow,
//! the decision names the layer, and each layer is checked against the registry on its own.

use std::sync::Arc;
use toolgate::policy::LayerError;
use toolgate::policy::Layers;
use toolgate::policy::Shadow;

use crate::common::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::*;

/// What a layer says about the one tool: an opinion, or nothing (its default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Says {
    Allow,
    Ask,
    Deny,
    Nothing,
}

fn layer_policy(says: Says) -> impl Policy {
    move |_: &PreparedToolCall| match says {
        Says::Allow => PolicyDecision::allow(Reason::from_static("layer allows")),
        Says::Ask => PolicyDecision::ask(Reason::from_static("layer asks")),
        Says::Deny => PolicyDecision::deny(Reason::from_static("layer denies")),
        Says::Nothing => PolicyDecision::fallback_deny(Reason::from_static("no rule")),
    }
}

fn prepared() -> PreparedToolCall {
    let runtime = ToolRuntime::new(registry([counted(
        "t",
        json!({"type": "object"}),
        &Arc::default(),
    )]));
    runtime
        .prepare(ToolCall::new("c", "t", json!({})))
        .expect("valid")
}

fn says() -> impl Strategy<Value = Says> {
    prop_oneof![
        Just(Says::Allow),
        Just(Says::Ask),
        Just(Says::Deny),
        Just(Says::Nothing)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Over random stacks: the result is the strictest opinion of any layer (deny > ask > allow),
    /// default deny when none has one, and the named layer is the highest holding that opinion.
    #[test]
    fn no_lower_layer_loosens_a_higher_one(stack in proptest::collection::vec(says(), 0..6)) {
        let mut layers = Layers::new();
        for (index, says) in stack.iter().enumerate() {
            layers = layers.layer(format!("l{index}"), layer_policy(*says)).unwrap();
        }
        let decision = layers.decide(&prepared());
        let strictest = [Says::Deny, Says::Ask, Says::Allow]
            .into_iter()
            .find(|opinion| stack.contains(opinion));
        match strictest {
            None => {
                prop_assert_eq!(decision.action, PolicyAction::Deny);
                prop_assert!(decision.fallback);
                prop_assert!(decision.layer.is_none());
            }
            Some(opinion) => {
                let expected = match opinion {
                    Says::Deny => PolicyAction::Deny,
                    Says::Ask => PolicyAction::Ask,
                    _ => PolicyAction::Allow,
                };
                prop_assert_eq!(decision.action, expected);
                prop_assert!(!decision.fallback);
                let highest = stack.iter().position(|s| *s == opinion).unwrap();
                let expected_layer = format!("l{highest}");
                prop_assert_eq!(decision.layer.as_deref(), Some(expected_layer.as_str()));
            }
        }
    }
}

fn tools() -> ToolRegistry {
    let runs = Arc::default();
    registry([
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            &runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            &runs,
        ),
    ])
}

const ORGANISATION: &str = r#"{"rules": [
  {"id": "no-push", "tool": "shell", "action": "deny", "reason": "pushing is for people",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}},
  {"id": "secrets", "tool": "read_file", "action": "deny", "reason": "secrets",
   "when": {"path_glob": {"pointer": "/path", "pattern": "/etc/**"}}}
]}"#;

const PROJECT: &str = r#"{"rules": [
  {"id": "shell", "tool": "shell", "action": "allow", "reason": "the project trusts its shell"},
  {"id": "read", "tool": "read_file", "action": "allow", "reason": "read anything"}
]}"#;

#[test]
fn rule_layers_name_the_layer_and_rule_that_decided() {
    let registry = tools();
    let layers = Layers::new()
        .layer(
            "organisation",
            RulePolicy::from_json(ORGANISATION, &registry).unwrap(),
        )
        .unwrap()
        .layer(
            "project",
            RulePolicy::from_json(PROJECT, &registry).unwrap(),
        )
        .unwrap();
    let controller = ToolController::try_new(registry, layers).unwrap();
    let run = |tool: &str, arguments: serde_json::Value| match controller
        .handle(ToolCall::new("c", tool, arguments))
    {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(request) => panic!("{request:?}"),
    };
    assert!(run("shell", json!({"command": "git push"})).is_error);
    assert!(run("shell", json!({"command": "git -C . push"})).is_error);
    assert!(!run("shell", json!({"command": "git status"})).is_error);
    assert!(run("read_file", json!({"path": "/etc//shadow"})).is_error);
    assert!(!run("read_file", json!({"path": "/work/a"})).is_error);
    let layers = Layers::new()
        .layer(
            "organisation",
            RulePolicy::from_json(ORGANISATION, &tools()).unwrap(),
        )
        .unwrap()
        .layer("project", RulePolicy::from_json(PROJECT, &tools()).unwrap())
        .unwrap();
    let runtime = ToolRuntime::new(tools());
    let push = runtime
        .prepare(ToolCall::new("c", "shell", json!({"command": "git push"})))
        .unwrap();
    let decision = layers.decide(&push);
    assert_eq!(decision.layer.as_deref(), Some("organisation"));
    assert_eq!(decision.rule_id.as_deref(), Some("no-push"));
    let status = runtime
        .prepare(ToolCall::new(
            "c",
            "shell",
            json!({"command": "git status"}),
        ))
        .unwrap();
    let decision = layers.decide(&status);
    assert_eq!(decision.layer.as_deref(), Some("project"));
    assert_eq!(decision.rule_id.as_deref(), Some("shell"));
}

#[test]
fn a_layer_that_does_not_fit_is_refused_and_the_stack_keeps_its_last_good_version() {
    let tools = tools();
    let layers = Layers::new()
        .layer(
            "organisation",
            RulePolicy::from_json(ORGANISATION, &tools).unwrap(),
        )
        .unwrap()
        .layer("project", RulePolicy::from_json(PROJECT, &tools).unwrap())
        .unwrap();
    let controller = ToolController::try_new(tools, layers.clone()).unwrap();
    // A project layer written for other tools: its own load would fail against these; built
    // against a registry where `shell` takes `cmd`, it does not fit the one in force.
    let other = registry([counted(
        "shell",
        json!({"type": "object", "properties": {"cmd": {"type": "string"}}}),
        &Arc::default(),
    )]);
    let misfit = RulePolicy::from_json(
        r#"{"rules": [{"id": "s", "tool": "shell", "action": "allow", "reason": "r",
            "when": {"command_prefix": {"pointer": "/cmd", "prefix": ["ls"]}}}]}"#,
        &other,
    )
    .unwrap();
    let error = controller
        .replace_policy(layers.replace("project", misfit).unwrap())
        .unwrap_err();
    assert!(
        error.problems[0].place.starts_with("layer \"project\""),
        "{error}"
    );
    // The stack in force still decides with the project's last good version.
    let Outcome::Completed(result) =
        controller.handle(ToolCall::new("c", "shell", json!({"command": "ls"})))
    else {
        panic!("decided");
    };
    assert!(!result.is_error, "{result:?}");
    assert!(matches!(
        layers.replace("nope", ToolPolicy::default()),
        Err(LayerError::Unknown { .. })
    ));
    assert!(matches!(
        Layers::new()
            .layer("a", ToolPolicy::default())
            .unwrap()
            .layer("a", ToolPolicy::default()),
        Err(LayerError::BadName { .. })
    ));
    assert_eq!(format!("{layers:?}"), r#"["organisation", "project"]"#);
    assert_eq!(
        layers.names().collect::<Vec<_>>(),
        ["organisation", "project"]
    );
}

#[test]
fn a_tool_is_left_out_of_the_list_only_when_every_layer_denies_every_call_to_it() {
    let listed = |layers: &[&str]| {
        let registry = tools();
        let mut stack = Layers::new();
        for (index, text) in layers.iter().enumerate() {
            let policy = RulePolicy::from_json(text, &registry).unwrap();
            stack = stack.layer(format!("layer{index}"), policy).unwrap();
        }
        let controller = ToolController::try_new(registry, stack).unwrap();
        let mut names: Vec<String> = controller
            .listed_specs()
            .into_iter()
            .map(|spec| spec.name)
            .collect();
        names.sort();
        names
    };
    let deny_shell = r#"{"rules": [{"id": "no-shell", "tool": "shell", "action": "deny", "reason": "no"},
                                    {"id": "read", "tool": "read_file", "action": "allow", "reason": "r"}]}"#;
    let silent = r#"{"rules": []}"#;
    // A deny in one layer, no opinion in the other: every call is denied, so it is not listed.
    assert_eq!(listed(&[deny_shell, silent]), ["read_file"]);
    assert_eq!(listed(&[silent, deny_shell]), ["read_file"]);
    // Nothing allows anything: nothing is listed.
    assert!(listed(&[silent, silent]).is_empty());
    assert!(listed(&[]).is_empty());
    // A layer that allows it keeps it listed (its calls are still denied by the other layer).
    assert_eq!(listed(&[deny_shell, PROJECT]), ["read_file", "shell"]);
    assert_eq!(listed(&[PROJECT, silent]), ["read_file", "shell"]);
}

#[test]
fn a_tool_named_only_by_patterns_is_hidden_only_when_they_deny_every_call() {
    let registry = tools();
    let policy = |rules: &str| {
        RulePolicy::from_json(&format!(r#"{{"rules": [{rules}]}}"#), &registry).unwrap()
    };
    // `really_new` is not registered (`re*` also matches `read_file`, `sh*` `shell`): it is decided from the patterns alone.
    let ask = r#"{"id": "srv-ask", "tool": "re*", "action": "ask", "reason": "a person checks"}"#;
    let allow = r#"{"id": "srv-allow", "tool": "re*", "action": "allow", "reason": "fine"}"#;
    let deny = r#"{"id": "srv-deny", "tool": "re*", "action": "deny", "reason": "no"}"#;
    let elsewhere = r#"{"id": "other", "tool": "sh*", "action": "allow", "reason": "fine"}"#;
    assert!(!policy(ask).denies_every_call("really_new"), "an ask alone");
    assert!(
        !policy(allow).denies_every_call("really_new"),
        "an allow alone"
    );
    assert!(policy(deny).denies_every_call("really_new"));
    assert!(policy(elsewhere).denies_every_call("really_new"));
    assert!(policy("").denies_every_call("really_new"));
}

// ---- stacks, shadows and undetermined denies as layers -----------------------------------------

#[test]
fn layers_lower_deny_rule_beats_higher_allow() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["shell"]);
    let org = ToolPolicy::new(["shell"], Vec::<String>::new()).unwrap();
    let project = rule_policy(
        r#"{"rules": [{"id": "no-rm", "tool": "shell", "action": "deny", "reason": "no rm",
            "when": {"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}}]}"#,
        &reg,
    );
    let layers = Layers::new()
        .layer("org", org)
        .unwrap()
        .layer("project", project)
        .unwrap();
    let decision = layers_decide(&layers, &["shell"], "shell", json!({"command": "rm -rf /"}));
    assert_eq!(decision, PolicyAction::Deny);
}

fn layers_decide(policy: &Layers, names: &[&str], tool: &str, args: Value) -> PolicyAction {
    let runtime = ToolRuntime::new(probe_tools(&Arc::default(), names));
    let prepared = runtime
        .prepare(ToolCall::new("c", tool, args))
        .unwrap_or_else(|_| panic!("prepares"));
    policy.decide(&prepared).action
}

#[test]
fn layers_nested_stack_keeps_inner_deny_and_ask() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["a", "b"]);
    let inner = Layers::new()
        .layer("i1", ToolPolicy::new(Vec::<String>::new(), ["a"]).unwrap())
        .unwrap()
        .layer(
            "i2",
            rule_policy(
                r#"{"rules": [{"id": "d", "tool": "b", "action": "deny", "reason": "no b"}]}"#,
                &reg,
            ),
        )
        .unwrap();
    let outer = Layers::new()
        .layer("inner", inner)
        .unwrap()
        .layer(
            "open",
            ToolPolicy::new(["a", "b"], Vec::<String>::new()).unwrap(),
        )
        .unwrap();
    assert_eq!(
        layers_decide(&outer, &["a", "b"], "a", json!({})),
        PolicyAction::Ask
    );
    assert_eq!(
        layers_decide(&outer, &["a", "b"], "b", json!({})),
        PolicyAction::Deny
    );
}

#[test]
fn layers_shadow_layer_keeps_enforced_deny() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["a"]);
    let shadow = Shadow::new(
        rule_policy(
            r#"{"rules": [{"id": "d", "tool": "a", "action": "deny", "reason": "no a"}]}"#,
            &reg,
        ),
        ToolPolicy::default(),
    );
    let layers = Layers::new()
        .layer("s", shadow)
        .unwrap()
        .layer(
            "open",
            ToolPolicy::new(["a"], Vec::<String>::new()).unwrap(),
        )
        .unwrap();
    assert_eq!(
        layers_decide(&layers, &["a"], "a", json!({})),
        PolicyAction::Deny
    );
}

#[test]
fn layers_undetermined_deny_is_not_fallback() {
    // A deny that applies only because its condition could not be judged is still a deny.
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["shell"]);
    let org = rule_policy(
        r#"{"rules": [{"id": "no-rm", "tool": "shell", "action": "deny", "reason": "no rm",
            "when": {"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}}]}"#,
        &reg,
    );
    let layers = Layers::new()
        .layer("org", org)
        .unwrap()
        .layer(
            "p",
            ToolPolicy::new(["shell"], Vec::<String>::new()).unwrap(),
        )
        .unwrap();
    assert_eq!(
        layers_decide(
            &layers,
            &["shell"],
            "shell",
            json!({"command": "x=$(rm -rf /)"})
        ),
        PolicyAction::Deny
    );
}
