//! Evasions, each a named case: paths out of the workspace or spelled to hide what they name, and
//! commands hidden behind shell syntax, partial tokens, another field or the wrong type.

use super::*;

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
