//! Class 4, options do not hide a subcommand: in strings and in argv, options that make a reader
//! write can be matched, and tokens that can never match are load errors.

use super::*;

const COMMANDS: &str = r#"{"rules": [
  {"id": "git", "tool": "shell", "action": "allow", "reason": "git",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}},
  {"id": "git-push", "tool": "shell", "action": "deny", "reason": "push",
   "when": {"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}},
  {"id": "git-log-output", "tool": "shell", "action": "ask", "reason": "writes a file",
   "when": {"command_option": {"pointer": "/command", "options": ["--output", "-o"]}}},
  {"id": "argv-git", "tool": "exec", "action": "allow", "reason": "git",
   "when": {"argv_prefix": {"pointer": "/argv", "prefix": ["git"]}}},
  {"id": "argv-git-push", "tool": "exec", "action": "deny", "reason": "push",
   "when": {"argv_prefix": {"pointer": "/argv", "prefix": ["git", "push"]}}},
  {"id": "argv-sort", "tool": "exec", "action": "allow", "reason": "sort",
   "when": {"all": [{"argv_prefix": {"pointer": "/argv", "prefix": ["sort"]}},
                    {"not": {"command_option": {"pointer": "/argv", "options": ["-o", "--output"]}}}]}}
]}"#;

const PUSH_SPELLINGS: &[&str] = &[
    "git push",
    "git push origin main",
    "git -C . push",
    "git -C /tmp/repo push --force",
    "git -c k=v push",
    "git -c core.sshCommand=x push",
    "git --no-pager push",
    "git --git-dir=.git push",
    "git --work-tree . push",
    "git -C . -c a=b --no-pager push",
    "git -- push",
    "/usr/bin/git push",
    "./git push",
    "GIT push",
    "env git push",
    "env -i git push",
    "GIT_SSH_COMMAND=x git push",
    "sudo -u me git push",
    "nice -n 10 git push",
    "timeout 5 git -C . push",
    "bash -c git push",
    "eval git push",
    "valgrind git push",
    "pkexec git push",
    "git-push origin",
    "/usr/lib/git-core/git-push origin main",
    "git -c alias.x=push x",
    "git -calias.p=push p origin main",
];

#[test]
fn commands_options_before_a_subcommand_never_hide_it_in_strings() {
    let policy = load(COMMANDS);
    let mut cases: Vec<(Value, PolicyAction)> = PUSH_SPELLINGS
        .iter()
        .map(|c| (json!({"command": c}), Deny))
        .collect();
    cases.extend([
        (json!({"command": "git status"}), Allow),
        (json!({"command": "git log --oneline"}), Allow),
        (json!({"command": "git log --grep push"}), Allow),
        (json!({"command": "git push; true"}), Deny),
        (json!({"command": "git status && git push"}), Deny),
        (json!({"command": "=git push"}), Deny), // zsh: `=git` is git's path
    ]);
    expect_all(&policy, "shell", &cases);
}

#[test]
fn commands_options_before_a_subcommand_never_hide_it_in_argv() {
    let policy = load(COMMANDS);
    let mut cases: Vec<(Value, PolicyAction)> = PUSH_SPELLINGS
        .iter()
        .map(|c| {
            (
                json!({"argv": c.split_whitespace().collect::<Vec<_>>()}),
                Deny,
            )
        })
        .collect();
    cases.extend([
        (json!({"argv": ["git", "status"]}), Allow),
        (
            json!({"argv": ["git", "-C", "dir with space", "push"]}),
            Deny,
        ),
        (json!({"argv": ["git", "log", "push"]}), Allow),
        (json!({"argv": ["git", 7, "push"]}), Deny),
        (json!({"argv": "git push"}), Deny),
    ]);
    expect_all(&policy, "exec", &cases);
}

#[test]
fn commands_options_that_make_a_reader_write_can_be_matched() {
    let policy = load(COMMANDS);
    let shell = |c: &str| (json!({"command": c}), Ask);
    let cases = vec![
        shell("git log --output=/tmp/x"),
        shell("git log --output /tmp/x"),
        shell("git log --out=/tmp/x"),
        shell("git log --outp /tmp/x"),
        shell("git log -o x"),
        shell("git log -ox"),
        shell("git diff -po x"),
        (json!({"command": "git log --oneline"}), Allow),
        (json!({"command": "git log --graph"}), Allow),
        // Global options may redefine the subcommand (`-c alias.log=push`): the push deny applies.
        (json!({"command": "git -C . log --output=/tmp/x"}), Deny),
    ];
    expect_all(&policy, "shell", &cases);
    let argv = |a: &[&str]| json!({"argv": a});
    let cases = vec![
        (argv(&["sort", "-o", "out", "in"]), Deny),
        (argv(&["sort", "-oout", "in"]), Deny),
        (argv(&["sort", "-ro", "out", "in"]), Deny),
        (argv(&["sort", "--output=out", "in"]), Deny),
        (argv(&["sort", "--out=out", "in"]), Deny),
        (argv(&["sort", "--o", "out", "in"]), Deny),
        (argv(&["sort", "in", "-o", "out"]), Deny),
        (argv(&["sort", "-r", "in"]), Allow),
        (argv(&["sort", "--reverse", "in"]), Allow),
        (argv(&["sort", "in"]), Allow),
    ];
    expect_all(&policy, "exec", &cases);
}

#[test]
fn commands_tokens_that_can_never_match_are_load_errors() {
    for (leaf, prefix) in [
        ("argv_prefix", r#"["git push"]"#),
        ("argv_prefix", r#"["git", "push origin"]"#),
        ("argv_prefix", r#"["git\tpush"]"#),
        ("argv_prefix", r#"["git", ""]"#),
        ("command_prefix", r#"["git push"]"#),
        ("command_prefix", r#"["git;"]"#),
    ] {
        let pointer = if leaf == "argv_prefix" {
            "/argv"
        } else {
            "/command"
        };
        let tool = if leaf == "argv_prefix" {
            "exec"
        } else {
            "shell"
        };
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "d", "tool": "{tool}", "action": "deny", "reason": "d",
                "when": {{"{leaf}": {{"pointer": "{pointer}", "prefix": {prefix}}}}}}}]}}"#
        ));
        assert_eq!(problems.len(), 1, "{prefix}: {problems:?}");
    }
    for options in [
        r#"["output"]"#,
        r#"["-"]"#,
        r#"["--o"]"#,
        r#"["--out=x"]"#,
        "[]",
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "d", "tool": "shell", "action": "deny", "reason": "d",
                "when": {{"command_option": {{"pointer": "/command", "options": {options}}}}}}}]}}"#
        ));
        assert_eq!(problems.len(), 1, "{options}: {problems:?}");
    }
}
