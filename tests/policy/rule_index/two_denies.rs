//! Two deny rules beside an allow: every spelling of two denied commands, split argv tokens,
//! wrappers and wrong types, case-insensitive paths, and all / any / not mixes.

use super::*;

fn small_policy(paths: &str, rules: &[(&str, &str)]) -> RulePolicy {
    let rules: Vec<String> = rules
        .iter()
        .enumerate()
        .map(|(index, (action, condition))| {
            format!(
                r#"{{"id": "r{index}", "tool": "t", "action": "{action}", "reason": "probe", "when": {condition}}}"#
            )
        })
        .collect();
    let text = format!(r#"{{"paths": {paths}, "rules": [{}]}}"#, rules.join(","));
    RulePolicy::from_json(&text, &rule_tools()).unwrap_or_else(|error| panic!("{error}\n{text}"))
}

fn action_of(policy: &RulePolicy, arguments: Value) -> PolicyAction {
    policy.decide_arguments("t", &arguments).action
}

/// Two deny rules on commands, one allow: every spelling that may reach `git push` is denied
/// (undetermined values included), only a plain `git status` is allowed.
#[test]
fn rule_index_two_command_denies_hold_for_every_spelling() {
    let policy = small_policy(
        "{}",
        &[
            (
                "deny",
                r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}"#,
            ),
            (
                "deny",
                r#"{"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}"#,
            ),
            (
                "allow",
                r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "status"]}}"#,
            ),
            (
                "allow",
                r#"{"command_prefix": {"pointer": "/command", "prefix": ["ls"]}}"#,
            ),
        ],
    );
    for denied in [
        "git push",
        "env git push",
        "sudo GIT push",
        "/usr/bin/git push --force",
        "git-push origin",
        "git -C . push",
        "GIT_DIR=x git push",
        "git status; git push",
        "git status && rm -rf /",
        "git\u{0}push",
        "nice -n 5 git push",
        "RM -rf /",
        "/bin/rm x",
        "ls $(rm -rf /)",
        "ls `git push`",
    ] {
        assert_eq!(
            action_of(&policy, json!({"command": denied})),
            PolicyAction::Deny,
            "{denied:?}"
        );
    }
    for wrong_type in [
        json!(1),
        json!(["git", "push"]),
        json!(null),
        json!({"a": "git push"}),
    ] {
        let action = action_of(&policy, json!({"command": wrong_type.clone()}));
        assert_eq!(action, PolicyAction::Deny, "{wrong_type}");
    }
    assert_eq!(
        action_of(&policy, json!({"command": "git status -s"})),
        PolicyAction::Allow
    );
    assert_eq!(
        action_of(&policy, json!({"command": "ls -la"})),
        PolicyAction::Allow
    );
}

/// Argv forms: tokens holding whitespace, wrong types and wrappers keep the denies.
#[test]
fn rule_index_two_argv_denies_hold_for_split_tokens_wrappers_and_wrong_types() {
    let policy = small_policy(
        "{}",
        &[
            (
                "deny",
                r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["git", "push"]}}"#,
            ),
            (
                "deny",
                r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["rm"]}}"#,
            ),
            (
                "allow",
                r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["git", "status"]}}"#,
            ),
            (
                "allow",
                r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["ls"]}}"#,
            ),
        ],
    );
    for denied in [
        json!(["git push"]),
        json!(["env", "git", "push"]),
        json!(["sudo", "-u", "x", "GIT", "push"]),
        json!(["git", "-c", "alias.x=push", "x"]),
        json!(["git\tpush"]),
        json!(["/bin/rm", "-rf", "/"]),
        json!(["git", 1, "push"]),
        json!([null]),
        json!("git push"),
        json!(7),
    ] {
        assert_eq!(
            action_of(&policy, json!({"argv": denied.clone()})),
            PolicyAction::Deny,
            "{denied}"
        );
    }
    assert_eq!(
        action_of(&policy, json!({"argv": ["git", "status"]})),
        PolicyAction::Allow
    );
    assert_eq!(
        action_of(&policy, json!({"argv": ["ls", "-l"]})),
        PolicyAction::Allow
    );
}

/// Case-insensitive paths with two deny rules: every ASCII case of a denied root is denied, every
/// spelling that cannot be judged is denied, the workspace is allowed.
#[test]
fn rule_index_two_path_denies_hold_case_insensitively() {
    let policy = small_policy(
        r#"{"working_directory": "/Work", "case_insensitive": true}"#,
        &[
            (
                "deny",
                r#"{"path_within": {"pointer": "/path", "roots": ["/Etc", "/root"]}}"#,
            ),
            (
                "deny",
                r#"{"path_glob": {"pointer": "/path", "pattern": "/Work/Secrets/*"}}"#,
            ),
            (
                "allow",
                r#"{"path_within": {"pointer": "/path", "roots": ["/work"]}}"#,
            ),
            (
                "allow",
                r#"{"path_within": {"pointer": "/path", "roots": ["/tmp"]}}"#,
            ),
        ],
    );
    for denied in [
        "/etc/passwd",
        "/ETC/passwd",
        "/eTc/x",
        "/ROOT/.ssh/id",
        "/work/secrets/k",
        "/WORK/SECRETS/k",
        "secrets/k",
        "SECRETS/k",
        "../etc/passwd",
        "/work/../ETC/passwd",
        "//etc/passwd",
        "/étc/x",
        "/work/secrets./k",
        "/etc\u{0}",
        "/work/SECRE~1/k",
        "C:\\etc",
        "~/x",
        "$HOME/x",
    ] {
        assert_eq!(
            action_of(&policy, json!({"path": denied})),
            PolicyAction::Deny,
            "{denied:?}"
        );
    }
    for allowed in ["/work/a", "/WORK/a", "a", "/TMP/x"] {
        assert_eq!(
            action_of(&policy, json!({"path": allowed})),
            PolicyAction::Allow,
            "{allowed:?}"
        );
    }
    assert_eq!(action_of(&policy, json!({"path": 1})), PolicyAction::Deny);
}

/// `all` / `any` / `not` mixes over two deny rules: an indexed leaf that is false leaves its `all`
/// false; an unindexed rule is always evaluated; undetermined values still deny.
#[test]
fn rule_index_two_denies_with_all_any_not_mixes() {
    let policy = small_policy(
        r#"{"working_directory": "/work"}"#,
        &[
            (
                "deny",
                r#"{"all": [{"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}, {"path_within": {"pointer": "/path", "roots": ["/work"]}}]}"#,
            ),
            (
                "deny",
                r#"{"any": [{"one_of": {"pointer": "/url", "values": ["evil.example"]}}, {"not": {"path_within": {"pointer": "/path", "roots": ["/work", "/tmp"]}}}]}"#,
            ),
            (
                "ask",
                r#"{"all": [{"path_glob": {"pointer": "/path", "pattern": "*.pem"}}, {"range": {"pointer": "/n", "max": 10}}]}"#,
            ),
            (
                "ask",
                r#"{"not": {"one_of": {"pointer": "/url", "values": ["a.example", "b.example"]}}}"#,
            ),
            (
                "allow",
                r#"{"path_within": {"pointer": "/path", "roots": ["/work"]}}"#,
            ),
            (
                "allow",
                r#"{"one_of": {"pointer": "/url", "values": ["a.example"]}}"#,
            ),
        ],
    );
    let cases = [
        (
            json!({"command": "rm x", "path": "/work/a"}),
            PolicyAction::Deny,
        ),
        (
            json!({"command": "rm x; ls", "path": "/work/a"}),
            PolicyAction::Deny,
        ),
        (
            json!({"command": "ls", "path": "/work/a", "url": "a.example"}),
            PolicyAction::Allow,
        ),
        (
            json!({"command": "ls", "path": "/etc/a", "url": "a.example"}),
            PolicyAction::Deny,
        ),
        (
            json!({"path": "/work/a", "url": "evil.example"}),
            PolicyAction::Deny,
        ),
        (json!({"path": "/work/a", "url": 5}), PolicyAction::Ask),
        (
            json!({"path": "/work/k.pem", "n": 3, "url": "a.example"}),
            PolicyAction::Ask,
        ),
        (
            json!({"path": "/work/k.pem", "n": 30, "url": "a.example"}),
            PolicyAction::Allow,
        ),
        (
            json!({"path": "/work/k.pem", "n": "3", "url": "a.example"}),
            PolicyAction::Ask,
        ),
        (
            json!({"path": "/tmp/a", "url": "a.example"}),
            PolicyAction::Allow,
        ),
        (
            json!({"path": "/tmp/a", "url": "A.EXAMPLE"}),
            PolicyAction::Ask,
        ),
        (
            json!({"path": "a\u{0}", "url": "a.example"}),
            PolicyAction::Deny,
        ),
        (
            json!({"path": "/work/a", "command": ["rm", "x"], "url": "a.example"}),
            PolicyAction::Deny,
        ),
        (json!({"url": "b.example"}), PolicyAction::Deny),
    ];
    for (arguments, expected) in cases {
        assert_eq!(
            action_of(&policy, arguments.clone()),
            expected,
            "{arguments}"
        );
        assert_eq!(
            linear_expectation(&policy, &arguments).0,
            expected,
            "{arguments}"
        );
    }
}
