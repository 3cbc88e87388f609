//! Tool groups. A rule's `tool` may be a pattern over whole tool names; deny >
//! ask > allow holds across exact and pattern rules alike, an exact rule is named before a pattern
//! rule of the same action, a pattern matching no tool is a load error, every tool it covers is
//! checked, and a tool registered later is covered.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::rules::PolicyLoadError;
use toolgate::*;

use PolicyAction::{Allow, Ask, Deny};

fn path_schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}})
}

fn tools(runs: &Arc<AtomicUsize>, names: &[&str]) -> ToolRegistry {
    registry(names.iter().map(|name| counted(name, path_schema(), runs)))
}

const SERVER: &[&str] = &["srv__read", "srv__write", "srv__delete", "other", "srv_x"];

fn load(text: &str, names: &[&str]) -> RulePolicy {
    RulePolicy::from_json(text, &tools(&Arc::default(), names)).unwrap_or_else(|e| panic!("{e}"))
}

fn problems(text: &str, names: &[&str]) -> Vec<String> {
    match RulePolicy::from_json(text, &tools(&Arc::default(), names)) {
        Err(PolicyLoadError::Invalid { problems }) => problems
            .into_iter()
            .map(|p| format!("{}: {}", p.place, p.message))
            .collect(),
        other => panic!("expected load problems, got {other:?}"),
    }
}

fn decided(policy: &RulePolicy, tool: &str, path: &str) -> (PolicyAction, Option<String>) {
    let decision = policy.decide_arguments(tool, &json!({"path": path}));
    (
        decision.action,
        decision.rule_id.as_deref().map(str::to_owned),
    )
}

#[test]
fn groups_a_pattern_covers_every_matching_tool_and_nothing_else() {
    let policy = load(
        r#"{"rules": [
      {"id": "server", "tool": "srv__*", "action": "allow", "reason": "the server's tools"},
      {"id": "delete", "tool": "srv__delete", "action": "deny", "reason": "deleting is for people"},
      {"id": "one", "tool": "srv_?", "action": "ask", "reason": "one-letter tools"}
    ]}"#,
        SERVER,
    );
    let cases = [
        ("srv__read", Allow, Some("server")),
        ("srv__write", Allow, Some("server")),
        ("srv__delete", Deny, Some("delete")),
        ("srv_x", Ask, Some("one")),
        ("other", Deny, None),
        ("SRV__read", Deny, None),
        ("srv__", Ask, Some("one")), // an unregistered name, matched by `?`
        ("srv_", Deny, None),
        ("xsrv__read", Deny, None),
    ];
    for (tool, action, rule) in cases {
        assert_eq!(
            decided(&policy, tool, "/a"),
            (action, rule.map(str::to_owned)),
            "{tool}"
        );
    }
    assert!(policy.denies_every_call("srv__delete"));
    assert!(!policy.denies_every_call("srv__read"));
    assert!(policy.denies_every_call("other"));
}

#[test]
fn groups_deny_beats_ask_beats_allow_across_exact_and_pattern_rules() {
    // Every pairing of an exact rule and a pattern rule, both applying: the stricter action wins
    // whichever names the tool exactly, and on a tie the exact rule is named.
    let actions = [Allow, Ask, Deny];
    for exact in actions {
        for pattern in actions {
            let policy = load(
                &format!(
                    r#"{{"rules": [
              {{"id": "a-pattern", "tool": "srv__*", "action": "{pattern}", "reason": "p",
               "when": {{"path_glob": {{"pointer": "/path", "pattern": "/x/**"}}}}}},
              {{"id": "z-exact", "tool": "srv__read", "action": "{exact}", "reason": "e",
               "when": {{"path_within": {{"pointer": "/path", "roots": ["/x"]}}}}}}
            ]}}"#
                ),
                SERVER,
            );
            let strictest = |a: PolicyAction, b: PolicyAction| {
                let rank = |x| actions.iter().position(|&y| y == x);
                if rank(a) >= rank(b) { a } else { b }
            };
            let winner = strictest(exact, pattern);
            let named = if exact == winner {
                "z-exact"
            } else {
                "a-pattern"
            };
            assert_eq!(
                decided(&policy, "srv__read", "/x/f"),
                (winner, Some(named.to_owned())),
                "exact {exact}, pattern {pattern}"
            );
            // Where only the pattern applies, it decides alone.
            assert_eq!(
                decided(&policy, "srv__write", "/x/f"),
                (pattern, Some("a-pattern".to_owned())),
            );
        }
    }
}

#[test]
fn groups_patterns_are_checked_against_the_registry() {
    let none = problems(
        r#"{"rules": [{"id": "n", "tool": "mail__*", "action": "allow", "reason": "r"}]}"#,
        SERVER,
    );
    assert_eq!(
        none,
        [r#"rules[0] (id "n"): tool pattern "mail__*" matches no tool in the registry"#]
    );
    // A pattern's pointers must name a field of every tool it covers.
    let runs = Arc::default();
    let mixed = registry([
        counted("srv__read", path_schema(), &runs),
        counted(
            "srv__ping",
            json!({"type": "object", "properties": {}}),
            &runs,
        ),
    ]);
    let text = r#"{"rules": [{"id": "d", "tool": "srv__*", "action": "deny", "reason": "r",
        "when": {"path_glob": {"pointer": "/path", "pattern": "/etc/**"}}}]}"#;
    let Err(PolicyLoadError::Invalid { problems }) = RulePolicy::from_json(text, &mixed) else {
        panic!("a pointer missing on one covered tool must be refused");
    };
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].place.contains("srv__ping"), "{problems:?}");
    assert!(
        problems[0].message.contains("names no field"),
        "{problems:?}"
    );
    // Examples are checked on every covered tool too.
    let example = problems_of_examples();
    assert!(example.iter().all(|p| p.contains("applies")), "{example:?}");
    assert_eq!(example.len(), 3, "{example:?}");
}

fn problems_of_examples() -> Vec<String> {
    problems(
        r#"{"rules": [{"id": "d", "tool": "srv__*", "action": "deny", "reason": "r",
        "when": {"path_glob": {"pointer": "/path", "pattern": "/etc/**"}},
        "not_match": [{"path": "/etc/passwd"}]}]}"#,
        SERVER,
    )
}

#[test]
fn groups_an_unconditional_pattern_deny_shadowing_an_exact_allow_is_a_load_error() {
    let found = problems(
        r#"{"rules": [
      {"id": "all", "tool": "srv__*", "action": "deny", "reason": "off"},
      {"id": "read", "tool": "srv__read", "action": "allow", "reason": "r"}
    ]}"#,
        SERVER,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("can never decide"), "{found:?}");
}

#[test]
fn groups_a_tool_registered_later_is_covered_by_a_pattern() {
    let runs = Arc::default();
    let text = r#"{"rules": [
      {"id": "server", "tool": "srv__*", "action": "allow", "reason": "the server's tools",
       "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}},
      {"id": "secrets", "tool": "srv__*", "action": "deny", "reason": "no secrets",
       "when": {"path_glob": {"pointer": "/path", "pattern": "/work/secrets/**"}}}
    ]}"#;
    let first = tools(&runs, &["srv__read"]);
    let policy = RulePolicy::from_json(text, &first).expect("loads");
    // Decided straight from the patterns, before and after the controller sees the new registry.
    assert_eq!(
        decided(&policy, "srv__new", "/work/a"),
        (Allow, Some("server".to_owned()))
    );
    assert_eq!(
        decided(&policy, "srv__new", "/work/secrets/k"),
        (Deny, Some("secrets".to_owned()))
    );
    assert_eq!(decided(&policy, "other", "/work/a"), (Deny, None));
    let explained = policy.explain_arguments("srv__new", &json!({"path": "/work/secrets/k"}));
    assert_eq!(explained.rules.len(), 2);
    assert!(!policy.denies_every_call("srv__new"));

    let controller = ToolController::try_new(first, policy).expect("fits");
    controller
        .replace_registry(tools(&runs, &["srv__read", "srv__new"]))
        .expect("the new tool has the fields the patterns judge");
    let call = |tool: &str, path: &str| match controller.handle(ToolCall::new(
        "c",
        tool,
        json!({"path": path}),
    )) {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(request) => panic!("unexpected ask: {request:?}"),
    };
    assert!(!call("srv__new", "/work/a").is_error);
    assert!(call("srv__new", "/work/secrets/k").is_error);
    assert_eq!(run_count(&runs), 1);
    // A later tool the patterns cannot judge is refused with the registry.
    let lacking = registry([
        counted("srv__read", path_schema(), &runs),
        counted(
            "srv__bare",
            json!({"type": "object", "properties": {}}),
            &runs,
        ),
    ]);
    let refused = controller
        .replace_registry(lacking)
        .expect_err("srv__bare has no /path");
    assert!(refused.to_string().contains("srv__bare"), "{refused}");
}

#[test]
fn groups_pattern_deny_covers_tool_registered_later() {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["srv__read", "other"]);
    let policy = rule_policy(
        r#"{"rules": [
          {"id": "deny-srv", "tool": "srv__*", "action": "deny", "reason": "server off"},
          {"id": "allow-other", "tool": "other", "action": "allow", "reason": "ok"}]}"#,
        &reg,
    );
    let controller = ToolController::try_new(reg, policy).unwrap();
    // A non-ASCII name registers only where look-alike checks can read it (feature `unicode`).
    let mut later = vec!["srv__read", "other", "srv__delete"];
    if cfg!(feature = "unicode") {
        later.push("srv__Ünï");
    }
    controller
        .replace_registry(probe_tools(&runs, &later))
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
        counted("t_é", probe_schema(), &runs),
        counted("u", probe_schema(), &runs),
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
    let reg = probe_tools(&runs, &["srv__read", "srvXread"]);
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

#[test]
fn groups_a_pattern_allows_a_gate_only_if_it_ends_with_its_method() {
    // Gates of an MCP server's resources and prompts are named with the method as suffix; a rule
    // written for tools must not start allowing them when a server begins to serve them, whatever
    // the separator (`srv/…` holds a `/` too), while a deny pattern covers them like tools.
    let names = [
        "srv__read",
        "srv__resources/read",
        "srv__prompts/get",
        "srv/resources/read",
        "srv__user/update",
    ];
    let policy = load(
        r#"{"rules": [
      {"id": "server", "tool": "srv__*", "action": "allow", "reason": "the server's tools"}
    ]}"#,
        &names,
    );
    assert_eq!(decided(&policy, "srv__read", "/a").0, Allow);
    // A tool whose name holds a `/` is a tool.
    assert_eq!(decided(&policy, "srv__user/update", "/a").0, Allow);
    for gate in [
        "srv__resources/read",
        "srv__prompts/get",
        "srv/resources/read",
    ] {
        assert_eq!(decided(&policy, gate, "/a").0, Deny, "{gate}");
    }
    // With `/` as the separator, an allow on `srv/*` covers no gate of `srv` (here: nothing).
    assert_eq!(
        problems(
            r#"{"rules": [{"id": "slashed", "tool": "srv/*", "action": "allow", "reason": "r"}]}"#,
            &names
        ),
        vec![r#"rules[0] (id "slashed"): tool pattern "srv/*" matches no tool in the registry"#]
    );
    let policy = load(
        r#"{"rules": [
      {"id": "reads", "tool": "srv__*resources/read", "action": "allow", "reason": "reads"},
      {"id": "gets", "tool": "*prompts/get", "action": "ask", "reason": "gets"},
      {"id": "tools", "tool": "srv__*", "action": "allow", "reason": "tools"}
    ]}"#,
        &names,
    );
    assert_eq!(
        decided(&policy, "srv__resources/read", "/a"),
        (Allow, Some("reads".to_owned()))
    );
    assert_eq!(
        decided(&policy, "srv__prompts/get", "/a"),
        (Ask, Some("gets".to_owned()))
    );
    assert_eq!(decided(&policy, "srv/resources/read", "/a").0, Deny);
    // A deny pattern stops gates too: a kill switch on `*` is not escaped by an exact allow
    // (which the loader then calls inert).
    let found = problems(
        r#"{"rules": [
      {"id": "read", "tool": "srv__resources/read", "action": "allow", "reason": "reads"},
      {"id": "stop", "tool": "*", "action": "deny", "reason": "suspended"}
    ]}"#,
        &names,
    );
    assert!(
        found.iter().any(|problem| problem
            .contains(r#"rule "stop" denies tool "srv__resources/read" unconditionally"#)),
        "{found:?}"
    );
}
