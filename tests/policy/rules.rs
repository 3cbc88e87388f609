//! The rule policy from the outside: evasions (each a named case), load errors, precedence,
//! permutation invariance, explanations, digests and replacement on a running controller.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::common::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::rules::{Condition, LoadProblem, PolicyConfig, PolicyLoadError, RuleConfig};
use toolgate::*;

fn tools(runs: &Arc<AtomicUsize>) -> ToolRegistry {
    registry([
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            runs,
        ),
        counted(
            "write_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}),
            runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
            runs,
        ),
        counted(
            "exec",
            json!({"type": "object", "properties": {"argv": {"type": "array", "items": {"type": "string"}}}, "required": ["argv"]}),
            runs,
        ),
        counted(
            "fetch",
            json!({"type": "object", "properties": {"url": {"type": "string"}, "port": {"type": "integer"}, "note": {"type": "string"}}}),
            runs,
        ),
    ])
}

const WORKSPACE_POLICY: &str = r#"{"paths": {"working_directory": "/work"}, "rules": [
  {"id": "read-workspace", "tool": "read_file", "action": "allow", "reason": "reading inside the workspace",
   "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}},
   "match": [{"path": "/work/src/lib.rs"}, {"path": "src/lib.rs"}],
   "not_match": [{"path": "/work-evil/x"}, {"path": "/work/../etc/passwd"}]},
  {"id": "read-secrets", "tool": "read_file", "action": "deny", "reason": "secrets are never read",
   "when": {"path_glob": {"pointer": "/path", "pattern": "*.pem"}}},
  {"id": "read-elsewhere", "tool": "read_file", "action": "ask", "reason": "reading outside the workspace",
   "when": {"not": {"path_within": {"pointer": "/path", "roots": ["/work"]}}},
   "not_match": [{"path": "/work/a.txt"}, {"path": "a.txt"}]},
  {"id": "git-status", "tool": "shell", "action": "allow", "reason": "read-only git",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["git", "status"]}},
   "match": [{"command": "git status --short"}], "not_match": [{"command": "git status; git push"}]},
  {"id": "git-push", "tool": "shell", "action": "deny", "reason": "pushing is for people",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}},
  {"id": "exec-git-status", "tool": "exec", "action": "allow", "reason": "read-only git",
   "when": {"argv_prefix": {"pointer": "/argv", "prefix": ["git", "status"]}}},
  {"id": "fetch-ports", "tool": "fetch", "action": "allow", "reason": "unprivileged ports on the internal host",
   "when": {"all": [
     {"range": {"pointer": "/port", "min": 1024, "max": 65535}},
     {"one_of": {"pointer": "/url", "values": ["http://internal", "http://internal/"]}}
   ]}}
]}"#;

fn workspace_policy(registry: &ToolRegistry) -> RulePolicy {
    RulePolicy::from_json(WORKSPACE_POLICY, registry).unwrap_or_else(|error| panic!("{error}"))
}

fn decide(policy: &RulePolicy, tool: &str, arguments: Value) -> (PolicyAction, Option<String>) {
    let decision = policy.decide_arguments(tool, &arguments);
    (decision.action, decision.rule_id.map(|id| id.to_string()))
}

fn action(policy: &RulePolicy, tool: &str, arguments: Value) -> PolicyAction {
    decide(policy, tool, arguments).0
}

fn read(path: &str) -> Value {
    json!({ "path": path })
}

// ---- precedence, explanation, digest -----------------------------------------------------------

#[test]
fn precedence_is_deny_then_ask_then_allow_then_default() {
    let policy = RulePolicy::new(
        PolicyConfig::new([
            RuleConfig::new("allow-md", "read_file", PolicyAction::Allow, "docs")
                .when(Condition::glob("/path", "*.md")),
            RuleConfig::new("ask-private", "read_file", PolicyAction::Ask, "private")
                .when(Condition::glob("/path", "*private*")),
            RuleConfig::new("deny-key", "read_file", PolicyAction::Deny, "keys")
                .when(Condition::glob("/path", "*key*")),
        ]),
        &tools(&Arc::default()),
    )
    .unwrap();
    let at = |path: &str| decide(&policy, "read_file", read(path));
    assert_eq!(at("a.md"), (PolicyAction::Allow, Some("allow-md".into())));
    assert_eq!(
        at("private.md"),
        (PolicyAction::Ask, Some("ask-private".into()))
    );
    assert_eq!(
        at("private-key.md"),
        (PolicyAction::Deny, Some("deny-key".into()))
    );
    let default = policy.decide_arguments("read_file", &read("a.txt"));
    assert_eq!(
        (default.action, default.rule_id),
        (PolicyAction::Deny, None)
    );
    assert!(default.reason.as_str().contains("default deny"));
    assert_eq!(
        policy.decide_arguments("write_file", &json!({})).action,
        PolicyAction::Deny
    );
}

#[test]
fn explain_names_the_deciding_rule_and_every_rule_of_the_tool() {
    let registry = tools(&Arc::default());
    let policy = workspace_policy(&registry);
    let explanation = policy.explain_arguments("read_file", &read("/work/id.pem"));
    assert_eq!(explanation.decision.action, PolicyAction::Deny);
    assert_eq!(
        explanation.decision.rule_id.as_deref(),
        Some("read-secrets")
    );
    let traces: Vec<(&str, PolicyAction, bool)> = explanation
        .rules
        .iter()
        .map(|trace| (&*trace.rule_id, trace.action, trace.applied))
        .collect();
    assert_eq!(
        traces,
        [
            ("read-secrets", PolicyAction::Deny, true),
            ("read-elsewhere", PolicyAction::Ask, false),
            ("read-workspace", PolicyAction::Allow, true),
        ]
    );
    let nul = policy.explain_arguments("read_file", &read("a\0"));
    assert!(nul.rules.iter().any(|trace| !trace.determined));

    // Through the runtime, on a validated call.
    let runtime = ToolRuntime::new(registry);
    let prepared = runtime
        .prepare(ToolCall::new("c", "read_file", read("/work/a")))
        .unwrap();
    assert_eq!(
        policy.explain(&prepared).decision.rule_id.as_deref(),
        Some("read-workspace")
    );
    assert_eq!(
        policy.decide(&prepared).rule_id.as_deref(),
        Some("read-workspace")
    );
}

#[test]
fn digest_ignores_order_and_formatting_and_changes_with_meaning() {
    let registry = tools(&Arc::default());
    let original = workspace_policy(&registry);
    let mut config = original.config().clone();
    config.rules.reverse();
    let reordered = RulePolicy::new(config.clone(), &registry).unwrap();
    assert_eq!(original.digest(), reordered.digest());
    let reformatted =
        RulePolicy::from_json(&serde_json::to_string_pretty(&config).unwrap(), &registry).unwrap();
    assert_eq!(original.digest(), reformatted.digest());

    config.rules[0].reason.push('!');
    let changed = RulePolicy::new(config, &registry).unwrap();
    assert_ne!(original.digest(), changed.digest());
    assert!(original.digest().starts_with("sha256:"));

    let decision = original.decide_arguments("read_file", &read("/work/a"));
    assert_eq!(decision.policy_digest.as_deref(), Some(original.digest()));
    let default = original.decide_arguments("nope", &json!({}));
    assert_eq!(default.policy_digest.as_deref(), Some(original.digest()));
}

// ---- replacement on a running controller -------------------------------------------------------

#[test]
fn a_policy_that_fails_to_load_leaves_the_old_one_in_force() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(tools(&runs), workspace_policy(&tools(&runs)));
    let bad = r#"{"rules": [{"id": "x", "tool": "read_file", "action": "allow", "reason": "all reads"},
                            {"id": "y", "tool": "nope", "action": "allow", "reason": "r"}]}"#;
    let error = controller
        .try_replace_policy(|registry| RulePolicy::from_json(bad, registry))
        .unwrap_err();
    assert!(error.to_string().contains("\"nope\""), "{error}");
    // The old policy still asks about /etc; the half-valid new one would have allowed it.
    assert!(matches!(
        controller.handle(ToolCall::new("c", "read_file", read("/etc/passwd"))),
        Outcome::PendingApproval(_)
    ));
}

#[test]
fn waiting_approvals_are_decided_again_under_a_new_rule_policy() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(tools(&runs), workspace_policy(&tools(&runs)));
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c9", "read_file", read("/etc/hosts")))
    else {
        panic!("outside the workspace: ask");
    };
    let stricter = r#"{"rules": [{"id": "no-etc", "tool": "read_file", "action": "deny", "reason": "never /etc",
        "when": {"path_within": {"pointer": "/path", "roots": ["/etc"]}}}]}"#;
    controller
        .try_replace_policy(|registry| RulePolicy::from_json(stricter, registry))
        .unwrap();
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert_eq!(
        result,
        ToolResult::error("c9", "denied after approval: never /etc")
    );
    assert_eq!(run_count(&runs), 0);
}

// ---- order never changes a decision (property) -------------------------------------------------

/// A pool of rules that load together (no repeats, no shadowing), mixing all three actions.
fn rule_pool() -> Vec<RuleConfig> {
    use PolicyAction::*;
    let glob = |p: &str| Condition::path_glob("/path", p);
    vec![
        RuleConfig::new("a1", "read_file", Allow, "r")
            .when(Condition::path_within("/path", ["/work"])),
        RuleConfig::new("a2", "read_file", Allow, "r").when(glob("*.md")),
        RuleConfig::new("a3", "read_file", Allow, "r").when(glob("/tmp/*")),
        RuleConfig::new("k1", "read_file", Ask, "r")
            .when(Condition::path_within("/path", ["/home"])),
        RuleConfig::new("k2", "read_file", Ask, "r").when(glob("*secret*")),
        RuleConfig::new("k3", "read_file", Ask, "r").when(glob("drafts/*")),
        RuleConfig::new("d1", "read_file", Deny, "r").when(glob("*.pem")),
        RuleConfig::new("d2", "read_file", Deny, "r")
            .when(Condition::path_within("/path", ["/work/.git"])),
        RuleConfig::new("d3", "read_file", Deny, "r").when(glob("*secret*key*")),
        RuleConfig::new("s1", "shell", Allow, "r")
            .when(Condition::command_prefix("/command", ["ls"])),
        RuleConfig::new("s2", "shell", Deny, "r")
            .when(Condition::command_prefix("/command", ["rm"])),
        RuleConfig::new("s3", "shell", Ask, "r")
            .when(Condition::command_prefix("/command", ["ls", "-R"])),
    ]
}

fn argument_pool() -> Vec<(&'static str, Value)> {
    let paths = [
        "/work/a.md",
        "/work/.git/config",
        "/work/id.pem",
        "/home/u/secret.md",
        "/home/u/x",
        "/tmp/secret-key",
        "/tmp/a",
        "a.md",
        "/etc/passwd",
        "/work/a\0",
        "../x.md",
    ];
    let commands = ["ls", "ls -R /", "rm -rf /", "ls; rm -rf /", "cat x"];
    paths
        .iter()
        .map(|path| ("read_file", json!({ "path": path })))
        .chain(
            commands
                .iter()
                .map(|command| ("shell", json!({ "command": command }))),
        )
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_order_rules_are_written_in_never_changes_a_decision(
        chosen in proptest::sample::subsequence(rule_pool(), 1..=12),
        seed in any::<u64>(),
    ) {
        let registry = tools(&Arc::default());
        let written = RulePolicy::new(PolicyConfig::new(chosen.clone()), &registry).unwrap();
        let mut shuffled = chosen;
        // A seeded Fisher–Yates shuffle, so a failure replays from proptest's seed.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let permuted = RulePolicy::new(PolicyConfig::new(shuffled), &registry).unwrap();
        prop_assert_eq!(written.digest(), permuted.digest());
        for (tool, arguments) in argument_pool() {
            prop_assert_eq!(
                written.explain_arguments(tool, &arguments),
                permuted.explain_arguments(tool, &arguments)
            );
        }
    }
}

#[test]
fn a_tool_covered_only_by_conditional_pattern_denies_is_denied_outright() {
    let tools = registry([counted(
        "srv__read",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        &Default::default(),
    )]);
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "d", "tool": "srv__*", "action": "deny", "reason": "d",
                       "when": {"equals": {"pointer": "/path", "value": "secret"}}}]}"#,
        &tools,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    // Allowed by nothing: every call is denied (the default), so the tool is not listed.
    assert!(policy.denies_every_call("srv__read"));
    // A tool the pattern covers that is registered later is judged by the group's rules.
    assert!(policy.denies_every_call("srv__later"));
    let exact = RulePolicy::from_json(
        r#"{"rules": [{"id": "d", "tool": "srv__read", "action": "deny", "reason": "d",
                       "when": {"equals": {"pointer": "/path", "value": "secret"}}}]}"#,
        &tools,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert!(exact.denies_every_call("srv__read"), "named exactly, too");
    let controller = ToolController::new(tools, policy);
    assert!(controller.listed_specs().is_empty());
}

mod evasions;
mod load_errors;
