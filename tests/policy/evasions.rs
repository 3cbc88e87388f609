//! Evasion classes, each a catalogue of spellings an attacker would try against a
//! realistic policy: paths, commands, lists and numbers. (Registry replacement has its own file:
//! `fits_registry.rs`.) Every case asserts the decision the policy must reach; a
//! spelling that evades a deny or ask rule fails its case by name.

use std::sync::Arc;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::rules::{LoadProblem, PolicyLoadError};
use toolgate::*;

/// The tools the evasion catalogues (and the reasons' cases) are judged against.
pub(super) fn tools() -> ToolRegistry {
    let runs = Arc::default();
    let string = json!({"type": "string"});
    registry([
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": string}, "required": ["path"]}),
            &runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {"command": string}, "required": ["command"]}),
            &runs,
        ),
        counted(
            "exec",
            json!({"type": "object", "properties": {"argv": {"type": "array", "items": string}}, "required": ["argv"]}),
            &runs,
        ),
        counted(
            "copy",
            json!({"type": "object", "properties": {
                "paths": {"type": "array", "items": string},
                "files": {"type": "array", "items": {"type": "object", "properties": {"path": string, "mode": string}}},
                "pair": {"type": "array", "prefixItems": [string, string]}
            }}),
            &runs,
        ),
        counted(
            "fetch",
            json!({"type": "object", "properties": {"port": {"type": "number"}, "count": {"type": "number"}, "url": string}}),
            &runs,
        ),
    ])
}

pub(super) fn load(text: &str) -> RulePolicy {
    RulePolicy::from_json(text, &tools()).unwrap_or_else(|error| panic!("{error}"))
}

fn load_problems(text: &str) -> Vec<LoadProblem> {
    match RulePolicy::from_json(text, &tools()) {
        Err(PolicyLoadError::Invalid { problems }) => problems,
        other => panic!("expected load problems, got {other:?}"),
    }
}

/// Checks every (arguments, expected action) pair and reports all evasions at once.
fn expect_all(policy: &RulePolicy, tool: &str, cases: &[(Value, PolicyAction)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(arguments, expected)| {
            let got = policy.decide_arguments(tool, arguments).action;
            (got != *expected).then(|| format!("{arguments}: {got} instead of {expected}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(cases.len() >= 10, "a catalogue has at least 10 cases");
}

use PolicyAction::{Allow, Ask, Deny};

// ---- class 3: paths are judged by what they name -----------------------------------------------

const PATHS: &str = r#"{"paths": {"working_directory": "/work"}, "rules": [
  {"id": "ws", "tool": "read_file", "action": "allow", "reason": "workspace",
   "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}},
  {"id": "secrets", "tool": "read_file", "action": "deny", "reason": "secrets",
   "when": {"path_glob": {"pointer": "/path", "pattern": "/work/secrets/**"}}},
  {"id": "keys", "tool": "read_file", "action": "deny", "reason": "keys",
   "when": {"path_glob": {"pointer": "/path", "pattern": "*.pem"}}}
]}"#;

#[test]
fn paths_every_spelling_of_a_denied_file_is_denied() {
    let policy = load(PATHS);
    let path = |p: &str| json!({"path": p});
    let cases: Vec<(Value, PolicyAction)> = [
        "/work/secrets/key",
        "/work//secrets/key",
        "/work/./secrets/key",
        "/work/x/../secrets/key",
        "//work/secrets/key",
        "/work/secrets/./key",
        "/work/secrets//key",
        "/work/secrets/",
        "/work/secrets",
        "/work/secrets/.",
        "/work/secrets/a/b/c",
        "secrets/key",
        "./secrets/key",
        "x/../secrets/key",
        "x/y/../../secrets/key",
        "/../work/secrets/key",
        "/work/keys/server.pem",
        "server.pem",
        "a/b/./c.pem",
        "/work/secrets\\key",
        "C:\\work\\secrets\\key",
        "C:/work/secrets/key",
        "\\\\host\\share\\key",
        "file:///work/secrets/key",
        "~/secrets/key",
        "$PWD/secrets/key",
        "%2fwork%2fsecrets%2fkey",
        "/work/secrets\u{0}/../ok",
        "/work/\nsecrets/key",
        "",
    ]
    .into_iter()
    .map(|p| (path(p), Deny))
    .collect();
    expect_all(&policy, "read_file", &cases);
    // Inside the workspace and not denied: allowed, whatever the spelling.
    let allowed: Vec<(Value, PolicyAction)> = [
        "/work/a.txt",
        "a.txt",
        "./a.txt",
        "/work//src/./lib.rs",
        "src/../a.txt",
        "/work/secretsx/key",
        "/work/secret/key",
        "/work/secrets.txt",
        "/work/pem",
        "/work/a.pem.txt",
    ]
    .into_iter()
    .map(|p| (path(p), Allow))
    .collect();
    expect_all(&policy, "read_file", &allowed);
}

#[test]
fn paths_relative_spellings_resolve_against_the_one_working_directory_only() {
    let policy = load(
        r#"{"paths": {"working_directory": "/work"}, "rules": [
      {"id": "ws", "tool": "read_file", "action": "allow", "reason": "w",
       "when": {"path_within": {"pointer": "/path", "roots": ["/work", "/tmp/scratch"]}}},
      {"id": "tmp-secret", "tool": "read_file", "action": "deny", "reason": "s",
       "when": {"path_glob": {"pointer": "/path", "pattern": "/tmp/scratch/secret"}}}
    ]}"#,
    );
    let cases: Vec<(Value, PolicyAction)> = vec![
        // Relative paths are /work/…, never /tmp/scratch/…: not the denied file, but inside /work.
        (json!({"path": "secret"}), Allow),
        (json!({"path": "./secret"}), Allow),
        (json!({"path": "../tmp/scratch/secret"}), Deny),
        (json!({"path": "../../tmp/scratch/secret"}), Deny),
        (json!({"path": "../tmp/scratch/a"}), Allow),
        (json!({"path": "../etc/passwd"}), Deny),
        (json!({"path": "/tmp/scratch/secret"}), Deny),
        (json!({"path": "/tmp/scratch//secret"}), Deny),
        (json!({"path": "/tmp/scratch/x/../secret"}), Deny),
        (json!({"path": "/tmp/scratch/a"}), Allow),
        (json!({"path": ".."}), Deny),
    ];
    expect_all(&policy, "read_file", &cases);

    // Without a working directory, a relative path cannot be judged: never allowed.
    let unanchored = load(
        r#"{"rules": [{"id": "ws", "tool": "read_file", "action": "allow", "reason": "w",
            "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}}]}"#,
    );
    for relative in ["a.txt", "./a.txt", "src/lib.rs", "..", "."] {
        assert_eq!(
            unanchored
                .decide_arguments("read_file", &json!({"path": relative}))
                .action,
            Deny,
            "{relative}"
        );
    }
    assert_eq!(
        unanchored
            .decide_arguments("read_file", &json!({"path": "/work/a.txt"}))
            .action,
        Allow
    );
}

#[test]
fn paths_case_insensitive_file_systems_fold_case() {
    let policy = load(
        r#"{"paths": {"working_directory": "/Work", "case_insensitive": true}, "rules": [
      {"id": "ws", "tool": "read_file", "action": "allow", "reason": "w",
       "when": {"path_within": {"pointer": "/path", "roots": ["/Work"]}}},
      {"id": "secrets", "tool": "read_file", "action": "deny", "reason": "s",
       "when": {"path_glob": {"pointer": "/path", "pattern": "/work/Secrets/**"}}}
    ]}"#,
    );
    let path = |p: &str| json!({"path": p});
    let cases = vec![
        (path("/work/secrets/key"), Deny),
        (path("/WORK/SECRETS/KEY"), Deny),
        (path("/Work/sEcReTs/key"), Deny),
        (path("SECRETS/key"), Deny),
        (path("/work/x/../SECRETS/key"), Deny),
        (path("/work/secrets/clé"), Deny), // non-ASCII: undetermined under case folding
        (path("/work/ſecrets/key"), Deny), // ſ folds to s on some file systems
        (path("/work/secrets./key"), Deny), // Windows drops trailing dots and spaces
        (path("/work/secrets /key"), Deny),
        (path("/work/key.pem."), Deny),
        (path("/work/SECRE~1/key"), Deny), // an 8.3 short name
        (path("//work/x"), Deny),          // a UNC path: another machine
        (path("/WORK/a.txt"), Allow),
        (path("/work/A.TXT"), Allow),
        (path("a.txt"), Allow),
        (path("/elsewhere/a"), Deny),
    ];
    expect_all(&policy, "read_file", &cases);
}

#[test]
fn paths_raw_comparisons_on_path_fields_are_load_errors() {
    for (condition, why) in [
        (
            r#"{"glob": {"pointer": "/path", "pattern": "/work/secrets/*"}}"#,
            "judged as a path",
        ),
        (
            r#"{"glob": {"pointer": "/path", "pattern": "*.pem"}}"#,
            "judged as a path",
        ),
        (
            r#"{"equals": {"pointer": "/path", "value": "/work/secrets/key"}}"#,
            "judged as a path",
        ),
        (
            r#"{"one_of": {"pointer": "/path", "values": ["/work/.env"]}}"#,
            "judged as a path",
        ),
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [
          {{"id": "ws", "tool": "read_file", "action": "allow", "reason": "w",
           "when": {{"path_within": {{"pointer": "/path", "roots": ["/work"]}}}}}},
          {{"id": "d", "tool": "read_file", "action": "deny", "reason": "d", "when": {condition}}}
        ]}}"#
        ));
        assert!(
            problems[0].message.contains(why),
            "{condition}: {problems:?}"
        );
    }
    // Where no path condition judges the field, a deny or ask comparing text with '/' is refused
    // too, unless the glob says it means the raw string.
    for (action, condition) in [
        (
            "deny",
            r#"{"glob": {"pointer": "/path", "pattern": "/etc/*"}}"#,
        ),
        (
            "ask",
            r#"{"equals": {"pointer": "/path", "value": "/etc/shadow"}}"#,
        ),
        (
            "deny",
            r#"{"one_of": {"pointer": "/path", "values": ["a", "/etc/shadow"]}}"#,
        ),
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "d", "tool": "read_file", "action": "{action}", "reason": "d", "when": {condition}}}]}}"#
        ));
        assert!(problems[0].message.contains("re-spelling"), "{problems:?}");
    }
    // Under a `not` in an allow rule, the comparison must catch every spelling as well.
    let problems = load_problems(
        r#"{"rules": [{"id": "a", "tool": "read_file", "action": "allow", "reason": "a",
            "when": {"not": {"glob": {"pointer": "/path", "pattern": "/etc/*"}}}}]}"#,
    );
    assert!(problems[0].message.contains("re-spelling"), "{problems:?}");
    // A positive allow may compare raw text (it can only be stricter), and a raw glob opts out.
    load(
        r#"{"rules": [
      {"id": "a", "tool": "fetch", "action": "allow", "reason": "a",
       "when": {"one_of": {"pointer": "/url", "values": ["http://internal/"]}}},
      {"id": "d", "tool": "fetch", "action": "deny", "reason": "d",
       "when": {"glob": {"pointer": "/url", "pattern": "http://evil/*", "raw": true}}}
    ]}"#,
    );
}

#[test]
fn paths_the_whole_file_system_as_a_root_needs_an_opt_in() {
    for root in ["/", "//", "/.", "/..", "/tmp/.."] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "a", "tool": "read_file", "action": "allow", "reason": "a",
                "when": {{"path_within": {{"pointer": "/path", "roots": ["{root}"]}}}}}}]}}"#
        ));
        assert!(
            problems[0].message.contains("whole file system"),
            "{root}: {problems:?}"
        );
    }
    let everything = load(
        r#"{"rules": [{"id": "a", "tool": "read_file", "action": "allow", "reason": "a",
            "when": {"path_within": {"pointer": "/path", "roots": ["/"], "allow_root": true}}}]}"#,
    );
    assert_eq!(
        everything
            .decide_arguments("read_file", &json!({"path": "/etc/passwd"}))
            .action,
        Allow
    );
    for bad in ["relative", "C:\\", "~/x", "/a/$B"] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "a", "tool": "read_file", "action": "allow", "reason": "a",
                "when": {{"path_within": {{"pointer": "/path", "roots": [{bad:?}]}}}}}}]}}"#
        ));
        assert!(
            problems[0].message.contains("not a plain absolute path"),
            "{bad}"
        );
    }
}

// ---- class 4: options do not hide a subcommand ----------------------------------------------------

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

// ---- class 5: lists -------------------------------------------------------------------------------

const LISTS: &str = r#"{"paths": {"working_directory": "/work"}, "rules": [
  {"id": "copy-ws", "tool": "copy", "action": "allow", "reason": "every path in the workspace",
   "when": {"every": {"pointer": "/paths", "condition": {"path_within": {"pointer": "", "roots": ["/work"]}}}}},
  {"id": "copy-secret", "tool": "copy", "action": "deny", "reason": "no secrets",
   "when": {"some": {"pointer": "/paths", "condition": {"path_glob": {"pointer": "", "pattern": "/work/secrets/**"}}}}}
]}"#;

#[test]
fn lists_every_element_is_judged() {
    let policy = load(LISTS);
    let paths = |p: Value| json!({"paths": p});
    let cases = vec![
        (paths(json!(["/work/a", "/work/b"])), Allow),
        (paths(json!(["a", "b/c"])), Allow),
        (paths(json!([])), Allow),
        (paths(json!(["/work/a", "/etc/passwd"])), Deny),
        (paths(json!(["/etc/passwd", "/work/a"])), Deny),
        (paths(json!(["/work/a", "/work/secrets/key"])), Deny),
        (paths(json!(["/work/a", "secrets//key"])), Deny),
        (paths(json!(["/work/a", "x/../secrets/key"])), Deny),
        (paths(json!(["/work/a", 7])), Deny),
        (paths(json!(["/work/a", null])), Deny),
        (paths(json!(["/work/a", ["/etc/passwd"]])), Deny),
        (paths(json!("/work/a")), Deny),
        (paths(json!({"0": "/work/a"})), Deny),
        (json!({}), Deny),
    ];
    expect_all(&policy, "copy", &cases);
}

#[test]
fn lists_of_objects_are_judged_field_by_field() {
    let policy = load(
        r#"{"rules": [
      {"id": "ro", "tool": "copy", "action": "allow", "reason": "read-only files in /work",
       "when": {"every": {"pointer": "/files", "condition": {"all": [
          {"path_within": {"pointer": "/path", "roots": ["/work"]}},
          {"equals": {"pointer": "/mode", "value": "r"}}]}}}},
      {"id": "w", "tool": "copy", "action": "ask", "reason": "a write",
       "when": {"some": {"pointer": "/files", "condition": {"equals": {"pointer": "/mode", "value": "w"}}}}}
    ]}"#,
    );
    let files = |f: Value| json!({"files": f});
    let cases = vec![
        (files(json!([{"path": "/work/a", "mode": "r"}])), Allow),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"path": "/work/b", "mode": "r"}])),
            Allow,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"path": "/work/b", "mode": "w"}])),
            Ask,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "w"}, {"path": "/work/b", "mode": "r"}])),
            Ask,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"path": "/etc/b", "mode": "r"}])),
            Deny,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"mode": "r"}])),
            Deny,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"path": "/work/b"}])),
            Deny,
        ),
        (files(json!([{"path": "/work/a", "mode": "r"}, "x"])), Deny),
        (files(json!([{"path": 1, "mode": "r"}])), Deny),
        (files(json!([{"path": "/work/a", "mode": ["w"]}])), Deny),
    ];
    expect_all(&policy, "copy", &cases);
}

#[test]
fn lists_a_pointer_to_one_index_of_a_list_is_a_load_error() {
    for pointer in ["/paths/0", "/paths/1", "/files/0/path", "/paths/-"] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "d", "tool": "copy", "action": "deny", "reason": "d",
                "when": {{"equals": {{"pointer": "{pointer}", "value": "x"}}}}}}]}}"#
        ));
        assert!(
            problems[0].message.contains("every or some"),
            "{pointer}: {problems:?}"
        );
    }
    // A tuple position (prefixItems) is a field of its own.
    load(
        r#"{"rules": [{"id": "a", "tool": "copy", "action": "allow", "reason": "a",
            "when": {"equals": {"pointer": "/pair/0", "value": "x"}}}]}"#,
    );
    // every / some need a list and a condition on the element's own fields.
    for (pointer, inner) in [
        ("/pair/0", r#"{"equals": {"pointer": "", "value": "x"}}"#),
        (
            "/paths",
            r#"{"equals": {"pointer": "/path", "value": "x"}}"#,
        ),
        (
            "/files",
            r#"{"equals": {"pointer": "/owner", "value": "x"}}"#,
        ),
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "a", "tool": "copy", "action": "allow", "reason": "a",
                "when": {{"every": {{"pointer": "{pointer}", "condition": {inner}}}}}}}]}}"#
        ));
        assert!(!problems.is_empty(), "{pointer} {inner}");
    }
}

// ---- class 6: numbers as promised -----------------------------------------------------------------

#[test]
fn numbers_range_and_equals_compare_exactly_or_not_at_all() {
    let policy = load(
        r#"{"rules": [
      {"id": "ports", "tool": "fetch", "action": "allow", "reason": "unprivileged",
       "when": {"range": {"pointer": "/port", "min": 1024, "max": 9007199254740993}}},
      {"id": "max", "tool": "fetch", "action": "deny", "reason": "the largest count is reserved",
       "when": {"equals": {"pointer": "/count", "value": 18446744073709551615}}}
    ]}"#,
    );
    let port =
        |text: &str| serde_json::from_str::<Value>(&format!(r#"{{"port": {text}}}"#)).unwrap();
    let cases = vec![
        (port("1024"), Allow),
        (port("1024.0"), Allow),
        (port("1.024e3"), Allow),
        (port("1023.9999"), Deny),
        (port("1023"), Deny),
        (port("9007199254740993"), Allow),
        (port("9007199254740994"), Deny),
        (port("9007199254740992.0"), Deny), // 2^53 as a float: may have been rounded
        (port("9007199254740993.0"), Deny), // parses to 2^53: undetermined, never allowed
        (port("18446744073709551616"), Deny), // beyond 64 bits
        (port("1e300"), Deny),
        (port("-0.0"), Deny),
        (port("\"2048\""), Deny),
    ];
    expect_all(&policy, "fetch", &cases);
    let count =
        |text: &str| serde_json::from_str::<Value>(&format!(r#"{{"count": {text}}}"#)).unwrap();
    for text in [
        "18446744073709551615",
        "18446744073709551615.0", // rounds to 2^64 as a float: cannot be told apart
        "18446744073709551616",
        "1.8446744073709551615e19",
    ] {
        assert_eq!(
            policy.decide_arguments("fetch", &count(text)).action,
            Deny,
            "{text}"
        );
    }
}

#[test]
fn numbers_bounds_that_cannot_be_compared_exactly_are_load_errors() {
    for condition in [
        r#"{"range": {"pointer": "/port", "max": 18446744073709551616}}"#,
        r#"{"range": {"pointer": "/port", "min": 9007199254740993.0}}"#,
        r#"{"range": {"pointer": "/port", "min": -1e300}}"#,
        r#"{"equals": {"pointer": "/port", "value": 1e20}}"#,
        r#"{"one_of": {"pointer": "/port", "values": [1, 36893488147419103232]}}"#,
        r#"{"range": {"pointer": "/port", "min": 10, "max": 9}}"#,
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "d", "tool": "fetch", "action": "deny", "reason": "d", "when": {condition}}}]}}"#
        ));
        assert_eq!(problems.len(), 1, "{condition}: {problems:?}");
    }
}

// ---- each class found as a witness ----------------------------------------------------------------
//
// A policy written the way an author slips — a raw glob for a directory, an exact argv for a
// prefix, `every` for `some`, a closed range for an open one — diffed against the policy they
// meant: the analysis finds the call that slips through, and both policies decide it apart.

fn witness_between(intended: &str, written: &str, tool: &str) -> Value {
    use toolgate::rules::analysis::{self, Analysed, ToolDiff};
    let registry = tools();
    let diffs = analysis::diff(
        &Analysed::policy(load(intended)),
        &Analysed::policy(load(written)),
        &registry,
    );
    let found = diffs.iter().find(|diff| diff.tool() == tool).unwrap();
    let ToolDiff::Differs { witnesses, .. } = found else {
        panic!("no witness on {tool}: {found:?}")
    };
    // The call that slips through: denied as intended, not denied as written.
    let slipped = witnesses
        .iter()
        .find(|witness| witness.old.action == Deny && witness.new.action != Deny)
        .unwrap_or_else(|| panic!("nothing slips through on {tool}: {witnesses:?}"));
    slipped.arguments.clone()
}

#[test]
fn each_evasion_class_is_found_as_a_witness_by_the_diff() {
    let allow_all = |tool: &str| {
        format!(r#"{{"id": "all", "tool": "{tool}", "action": "allow", "reason": "r"}}"#)
    };
    // Paths: a raw glob on the directory's children misses other spellings of what is inside.
    let intended = format!(
        r#"{{"rules": [{}, {{"id": "secrets", "tool": "read_file", "action": "deny", "reason": "r",
            "when": {{"path_within": {{"pointer": "/path", "roots": ["/work/secrets"]}}}}}}]}}"#,
        allow_all("read_file")
    );
    let written = format!(
        r#"{{"rules": [{}, {{"id": "secrets", "tool": "read_file", "action": "deny", "reason": "r",
            "when": {{"glob": {{"pointer": "/path", "pattern": "/work/secrets/*", "raw": true}}}}}}]}}"#,
        allow_all("read_file")
    );
    // (The first found is a relative path: no working directory, so the intended rule cannot
    // judge it and denies; the raw glob does not match it.)
    let slipped = witness_between(&intended, &written, "read_file");
    assert!(slipped["path"].is_string(), "{slipped}");

    // Commands: an exact argv where a prefix was meant: one more word gets through.
    let intended = format!(
        r#"{{"rules": [{}, {{"id": "push", "tool": "exec", "action": "deny", "reason": "r",
            "when": {{"argv_prefix": {{"pointer": "/argv", "prefix": ["git", "push"]}}}}}}]}}"#,
        allow_all("exec")
    );
    let written = format!(
        r#"{{"rules": [{}, {{"id": "push", "tool": "exec", "action": "deny", "reason": "r",
            "when": {{"equals": {{"pointer": "/argv", "value": ["git", "push"]}}}}}}]}}"#,
        allow_all("exec")
    );
    let slipped = witness_between(&intended, &written, "exec");
    assert_eq!(slipped["argv"][0], "git", "{slipped}");

    // Lists: `every` where `some` was meant: one secret among plain paths gets through.
    let intended = format!(
        r#"{{"rules": [{}, {{"id": "secret", "tool": "copy", "action": "deny", "reason": "r",
            "when": {{"some": {{"pointer": "/paths", "condition": {{"path_within": {{"pointer": "", "roots": ["/work/secrets"]}}}}}}}}}}]}}"#,
        allow_all("copy")
    );
    let written = intended.replace(r#""some""#, r#""every""#);
    let slipped = witness_between(&intended, &written, "copy");
    assert!(slipped["paths"].as_array().unwrap().len() >= 2, "{slipped}");

    // Numbers: a closed range where an open one was meant: past its top gets through.
    let intended = format!(
        r#"{{"rules": [{}, {{"id": "big", "tool": "fetch", "action": "deny", "reason": "r",
            "when": {{"range": {{"pointer": "/count", "min": 1000}}}}}}]}}"#,
        allow_all("fetch")
    );
    let written = intended.replace(r#""min": 1000"#, r#""min": 1000, "max": 99999"#);
    let slipped = witness_between(&intended, &written, "fetch");
    assert!(slipped["count"].as_f64().unwrap() > 99_999.0, "{slipped}");
}
