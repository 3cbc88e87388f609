//! An independent attack on the newest features — layers, shadow mode, tool groups, indexed rules,
//! async checks, structured output — kept as regression tests. Each asserts the safe behaviour;
//! three of them failed when first written (a panicking shadow candidate, a shadow counted twice
//! beside an async check, an async check answering after its timeout) and were fixed.

#[path = "support/common.rs"]
mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolgate::definition::BoxFuture;
use toolgate::*;

fn path_schema() -> Value {
    json!({"type": "object", "properties": {
        "path": {"type": "string"}, "command": {"type": "string"},
        "argv": {"type": "array", "items": {"type": "string"}}, "mode": {"type": "string"}}})
}

fn tools(runs: &Arc<AtomicUsize>, names: &[&str]) -> ToolRegistry {
    registry(names.iter().map(|name| counted(name, path_schema(), runs)))
}

fn rules(text: &str, registry: &ToolRegistry) -> RulePolicy {
    RulePolicy::from_json(text, registry).unwrap_or_else(|e| panic!("{e}"))
}

fn ran(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Completed(result) if !result.is_error)
}

// ---- 1. Layers -------------------------------------------------------------------------------

#[test]
fn layers_lower_deny_rule_beats_higher_allow() {
    let runs = Arc::default();
    let reg = tools(&runs, &["shell"]);
    let org = ToolPolicy::new(["shell"], Vec::<String>::new()).unwrap();
    let project = rules(
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
    let runtime = ToolRuntime::new(tools(&Arc::default(), names));
    let prepared = runtime
        .prepare(ToolCall::new("c", tool, args))
        .unwrap_or_else(|_| panic!("prepares"));
    policy.decide(&prepared).action
}

#[test]
fn layers_nested_stack_keeps_inner_deny_and_ask() {
    let runs = Arc::default();
    let reg = tools(&runs, &["a", "b"]);
    let inner = Layers::new()
        .layer("i1", ToolPolicy::new(Vec::<String>::new(), ["a"]).unwrap())
        .unwrap()
        .layer(
            "i2",
            rules(
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
    let reg = tools(&runs, &["a"]);
    let shadow = Shadow::new(
        rules(
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
    let reg = tools(&runs, &["shell"]);
    let org = rules(
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

// ---- 2. Shadow -------------------------------------------------------------------------------

#[test]
fn shadow_panicking_candidate_still_returns_enforced_decision() {
    let runs = Arc::default();
    let reg = tools(&runs, &["a"]);
    let candidate = |_: &PreparedToolCall| -> PolicyDecision { panic!("candidate bug") };
    let shadow = Shadow::new(
        ToolPolicy::new(["a"], Vec::<String>::new()).unwrap(),
        candidate,
    );
    let runtime = ToolRuntime::new(reg);
    let prepared = runtime
        .prepare(ToolCall::new("c", "a", json!({})))
        .unwrap_or_else(|_| panic!("prepares"));
    let decided = catch_unwind(AssertUnwindSafe(|| shadow.decide(&prepared).action));
    assert_eq!(
        decided.ok(),
        Some(PolicyAction::Allow),
        "a candidate under trial must not change what the enforced policy returns"
    );
}

#[test]
fn shadow_with_async_check_counts_each_call_once() {
    let runs = Arc::default();
    let reg = tools(&runs, &["a"]);
    let shadow = Arc::new(Shadow::new(
        ToolPolicy::new(["a"], Vec::<String>::new()).unwrap(),
        ToolPolicy::new(Vec::<String>::new(), ["a"]).unwrap(),
    ));
    let check = |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(async { PolicyDecision::allow(Reason::from_static("ok")) })
    };
    let controller = ToolController::try_new(reg, Arc::clone(&shadow))
        .unwrap()
        .with_async_check(check, Duration::from_secs(1));
    assert!(ran(&controller.handle(ToolCall::new("c", "a", json!({})))));
    let report = shadow.report();
    assert_eq!(
        (report.calls, report.differing),
        (1, 1),
        "one call must be counted once"
    );
}

// ---- 3. Tool groups --------------------------------------------------------------------------

#[test]
fn groups_pattern_deny_covers_tool_registered_later() {
    let runs = Arc::default();
    let reg = tools(&runs, &["srv__read", "other"]);
    let policy = rules(
        r#"{"rules": [
          {"id": "deny-srv", "tool": "srv__*", "action": "deny", "reason": "server off"},
          {"id": "allow-other", "tool": "other", "action": "allow", "reason": "ok"}]}"#,
        &reg,
    );
    let controller = ToolController::try_new(reg, policy).unwrap();
    controller
        .replace_registry(tools(
            &runs,
            &["srv__read", "other", "srv__delete", "srv__Ünï"],
        ))
        .unwrap_or_else(|e| panic!("{e}"));
    for tool in ["srv__delete", "srv__read"] {
        let outcome = controller.handle(ToolCall::new("c", tool, json!({})));
        assert!(!ran(&outcome), "{tool} ran");
    }
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn groups_question_mark_matches_one_unicode_character() {
    let runs = Arc::default();
    let reg = match ToolRegistry::new([
        counted("t_é", path_schema(), &runs),
        counted("u", path_schema(), &runs),
    ]) {
        Ok(reg) => reg,
        Err(_) => return, // the registry refuses non-ASCII names: nothing to evade
    };
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "d", "tool": "t_?", "action": "deny", "reason": "no"},
                      {"id": "a", "tool": "u", "action": "allow", "reason": "yes"}]}"#,
        &reg,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let decision = policy.decide_arguments("t_é", &json!({}));
    assert_eq!(
        (decision.action, decision.fallback),
        (PolicyAction::Deny, false)
    );
}

#[test]
fn groups_escaped_star_is_literal_and_not_a_wildcard_allow() {
    let runs = Arc::default();
    let reg = tools(&runs, &["srv__read", "srvXread"]);
    // `\*` is a literal star: it must not allow srv__read.
    let loaded = RulePolicy::from_json(
        r#"{"rules": [{"id": "a", "tool": "srv\\*", "action": "allow", "reason": "x"}]}"#,
        &reg,
    );
    if let Ok(policy) = loaded {
        assert_ne!(
            policy.decide_arguments("srv__read", &json!({})).action,
            PolicyAction::Allow
        );
    }
}

// ---- 4. Indexed rules vs linear --------------------------------------------------------------

/// `target` alone (linear) and `target` among 9 unrelated filler rules of the same action and of
/// allow (indexed) must decide the same action.
fn index_agrees(paths: Value, target: Value, arguments: &[Value]) {
    let runs = Arc::default();
    let reg = tools(&runs, &["t"]);
    let action = target["action"].as_str().unwrap().to_owned();
    let mut padded = vec![target.clone()];
    for n in 0..9 {
        padded.push(json!({"id": format!("zz{n}"), "tool": "t", "action": action,
            "reason": "filler", "when": {"equals": {"pointer": "/mode", "value": format!("filler{n}")}}}));
    }
    let alone = json!({"paths": paths, "rules": [target]});
    let indexed = json!({"paths": paths, "rules": padded});
    let (Ok(alone), Ok(indexed)) = (
        RulePolicy::from_json(&alone.to_string(), &reg),
        RulePolicy::from_json(&indexed.to_string(), &reg),
    ) else {
        return;
    };
    for args in arguments {
        assert_eq!(
            alone.decide_arguments("t", args).action,
            indexed.decide_arguments("t", args).action,
            "{args}"
        );
    }
}

#[test]
fn index_matches_linear_on_tricky_values() {
    let path_args: Vec<Value> = [
        "src/a",
        "./src/a",
        "/ws/src/a",
        "/ws/SRC/a",
        "/wsx/a",
        "/ws",
        "/ws/",
        "ws/a",
        "/ws/./a",
        "/ws/../ws/a",
        "/wś/a",
        "/WS/a",
        "src",
        "../ws/a",
        "/ws//a",
    ]
    .iter()
    .map(|p| json!({"path": p}))
    .collect();
    for ci in [false, true] {
        let paths = json!({"working_directory": "/ws", "case_insensitive": ci});
        for action in ["deny", "ask", "allow"] {
            for when in [
                json!({"path_glob": {"pointer": "/path", "pattern": "src/*"}}),
                json!({"path_glob": {"pointer": "/path", "pattern": "/ws/*"}}),
                json!({"path_glob": {"pointer": "/path", "pattern": "/WS/*"}}),
                json!({"path_glob": {"pointer": "/path", "pattern": "/w\\s/*"}}),
                json!({"path_within": {"pointer": "/path", "roots": ["/ws"]}}),
                json!({"path_within": {"pointer": "/path", "roots": ["/ws/src", "/wsx"]}}),
                json!({"path_within": {"pointer": "/path", "roots": ["src"]}}),
                json!({"all": [{"path_within": {"pointer": "/path", "roots": ["/ws"]}},
                               {"not": {"equals": {"pointer": "/mode", "value": "x"}}}]}),
            ] {
                index_agrees(
                    paths.clone(),
                    json!({"id": "target", "tool": "t", "action": action, "reason": "r", "when": when}),
                    &path_args,
                );
            }
        }
    }
}

#[test]
fn index_matches_linear_on_commands_and_text() {
    let args: Vec<Value> = [
        json!({"command": "Git-Push x"}),
        json!({"command": "git\u{a0}push"}),
        json!({"command": "/usr/bin/GIT push"}),
        json!({"command": "env GIT=1 git push"}),
        json!({"command": "git--push"}),
        json!({"command": "git- push"}),
        json!({"argv": ["git\u{a0}push"]}),
        json!({"argv": [" git", "push "]}),
        json!({"argv": ["GIT-PUSH"]}),
        json!({"argv": ["/bin/git-lfs", "pull"]}),
        json!({"mode": "RM"}),
        json!({"mode": "rm"}),
        json!({"mode": "rm "}),
        json!({"mode": "r\u{0}m"}),
        json!({}),
    ]
    .to_vec();
    for action in ["deny", "ask", "allow"] {
        for when in [
            json!({"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}),
            json!({"command_prefix": {"pointer": "/command", "prefix": ["git-push"]}}),
            json!({"command_prefix": {"pointer": "/command", "prefix": ["GIT"]}}),
            json!({"argv_prefix": {"pointer": "/argv", "prefix": ["git", "push"]}}),
            json!({"argv_prefix": {"pointer": "/argv", "prefix": ["git-lfs"]}}),
            json!({"argv_prefix": {"pointer": "/argv", "prefix": ["/bin/git-lfs"]}}),
            json!({"one_of": {"pointer": "/mode", "values": ["rm", "RM "]}}),
            json!({"equals": {"pointer": "/mode", "value": "rm"}}),
            json!({"all": [{"command_prefix": {"pointer": "/command", "prefix": ["git"]}},
                           {"one_of": {"pointer": "/mode", "values": ["rm"]}}]}),
        ] {
            index_agrees(
                json!({}),
                json!({"id": "target", "tool": "t", "action": action, "reason": "r", "when": when}),
                &args,
            );
        }
    }
}
