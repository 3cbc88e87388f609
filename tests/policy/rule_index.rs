//! The rule index decides as a linear scan of the rules would: random small policies over hostile
//! values, every spelling of two denied commands, split argv tokens, wrappers and wrong types,
//! case-insensitive paths, `all` / `any` / `not` mixes, and a target rule alone or among fillers.

use std::sync::Arc;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::*;

fn rule_tools() -> ToolRegistry {
    registry([ToolDefinition::new(
        ToolSpec::new(
            "t",
            "",
            json!({"type": "object", "properties": {
                "command": {"type": "string"},
                "argv": {"type": "array", "items": {"type": "string"}},
                "path": {"type": "string"},
                "url": {"type": "string"},
                "n": {"type": "number"}
            }}),
        ),
        |_: &Value| -> Result<String, ToolError> { Ok(String::new()) },
    )
    .unwrap()])
}

/// The decision a linear scan makes, from the explanation's per-rule traces (each rule judged on
/// its own): the first action in precedence with a rule that applied; of its rules, the first
/// that held, else the first that applied undetermined.
fn linear_expectation(policy: &RulePolicy, arguments: &Value) -> (PolicyAction, Option<String>) {
    let explanation = policy.explain_arguments("t", arguments);
    for action in [PolicyAction::Deny, PolicyAction::Ask, PolicyAction::Allow] {
        let applied: Vec<_> = explanation
            .rules
            .iter()
            .filter(|rule| rule.action == action && rule.applied)
            .collect();
        let chosen = applied
            .iter()
            .find(|rule| rule.determined)
            .or_else(|| applied.first());
        if let Some(rule) = chosen {
            return (action, Some(rule.rule_id.to_string()));
        }
    }
    (PolicyAction::Deny, None)
}

const CONDITIONS: &[&str] = &[
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "status"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["GIT", "push"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["/usr/bin/git", "push"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["sudo"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["git-lfs"]}}"#,
    r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["git", "push"]}}"#,
    r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["env"]}}"#,
    r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["Rm", "-rf"]}}"#,
    r#"{"path_within": {"pointer": "/path", "roots": ["/work"]}}"#,
    r#"{"path_within": {"pointer": "/path", "roots": ["/etc", "/Root/Secret"]}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "/etc/*"}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "/Work/**/*.pem"}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "*.pem"}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "/tmp/a?b"}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "/W?rk/x"}}"#,
    r#"{"one_of": {"pointer": "/url", "values": ["a.example", "b.example"]}}"#,
    r#"{"equals": {"pointer": "/url", "value": "a.example"}}"#,
    r#"{"one_of": {"pointer": "/url", "values": ["1", 1]}}"#,
    r#"{"range": {"pointer": "/n", "min": 0, "max": 10}}"#,
    r#"{"all": [{"path_within": {"pointer": "/path", "roots": ["/work"]}}, {"not": {"path_glob": {"pointer": "/path", "pattern": "*.pem"}}}]}"#,
    r#"{"all": [{"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}, {"command_option": {"pointer": "/command", "options": ["-r", "--recursive"]}}]}"#,
    r#"{"all": [{"range": {"pointer": "/n", "min": 1}}, {"one_of": {"pointer": "/url", "values": ["a.example"]}}, {"path_within": {"pointer": "/path", "roots": ["/etc"]}}]}"#,
    r#"{"any": [{"path_within": {"pointer": "/path", "roots": ["/etc"]}}, {"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}]}"#,
    r#"{"not": {"path_within": {"pointer": "/path", "roots": ["/work"]}}}"#,
    r#"{"not": {"command_prefix": {"pointer": "/command", "prefix": ["git", "status"]}}}"#,
    r#"{"all": [{"not": {"one_of": {"pointer": "/url", "values": ["a.example"]}}}, {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}]}"#,
];

fn argument_pool() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "command",
            vec![
                json!("git push"),
                json!("git status --short"),
                json!("git status; git push"),
                json!("env git push"),
                json!("sudo GIT push"),
                json!("/usr/bin/git push"),
                json!("git-push origin"),
                json!("git -C . push"),
                json!("GIT_DIR=x git push"),
                json!("git\u{0}push"),
                json!("git\tpush"),
                json!("git\npush"),
                json!("rm -rf /"),
                json!("RM -r x"),
                json!("echo git push"),
                json!("git-lfs push"),
                json!("=git push"),
                json!("gít push"),
                json!(""),
                json!(42),
                json!(["git", "push"]),
            ],
        ),
        (
            "argv",
            vec![
                json!(["git", "push"]),
                json!(["env", "git", "push"]),
                json!(["git push"]),
                json!(["Git", "Push"]),
                json!(["rm", "-rf", "/"]),
                json!(["RM", "-rf"]),
                json!(["/bin/rm", "-rf"]),
                json!([1, "git"]),
                json!(["git", 1]),
                json!("git push"),
                json!([]),
                json!(["git\u{a0}push"]),
                json!(["git-push"]),
            ],
        ),
        (
            "path",
            vec![
                json!("/work/a"),
                json!("/WORK/a"),
                json!("/Work/k.pem"),
                json!("/work/deep/k.pem"),
                json!("/etc/passwd"),
                json!("/ETC/passwd"),
                json!("etc/passwd"),
                json!("../etc/passwd"),
                json!("/work/../etc/passwd"),
                json!("//etc/passwd"),
                json!("/root/secret/x"),
                json!("/sécret"),
                json!("/work/a\u{0}"),
                json!("C:\\x"),
                json!("~/x"),
                json!("/tmp/a*b"),
                json!("/tmp/aXb"),
                json!("/Wark/x"),
                json!("/wOrk/x"),
                json!("/"),
                json!("/etc./passwd"),
                json!(7),
                json!(null),
            ],
        ),
        (
            "url",
            vec![
                json!("a.example"),
                json!("A.EXAMPLE"),
                json!("1"),
                json!(1),
                json!(1.0),
                json!(["a.example"]),
            ],
        ),
        (
            "n",
            vec![
                json!(5),
                json!(-1),
                json!("5"),
                json!(1e300),
                json!(18446744073709551615_u64),
            ],
        ),
    ]
}

/// A small deterministic generator, so every failure names a reproducible case.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % bound
    }
}

/// Random small policies (2 to 7 rules per action, where the index is now built) with the path
/// settings varied, over hostile argument values: the indexed decision (action and rule named)
/// is the linear scan's.
#[test]
fn rule_index_small_policies_decide_as_a_linear_scan() {
    let registry = rule_tools();
    let pool = argument_pool();
    let mut random = Lcg(0x5eed);
    let mut loaded = 0;
    let mut decided = 0;
    for case in 0..400 {
        let mut rules = Vec::new();
        let mut used: Vec<&str> = Vec::new();
        for action in ["deny", "ask", "allow"] {
            let count = 2 + random.next(6);
            for _ in 0..count {
                // Distinct conditions: a repeated one is refused at load.
                let condition = loop {
                    let candidate = CONDITIONS[random.next(CONDITIONS.len())];
                    if !used.contains(&candidate) {
                        used.push(candidate);
                        break candidate;
                    }
                };
                rules.push(format!(
                    r#"{{"id": "r{:02}", "tool": "t", "action": "{action}", "reason": "probe", "when": {condition}}}"#,
                    rules.len()
                ));
            }
        }
        let paths = match case % 4 {
            0 => r#"{}"#,
            1 => r#"{"working_directory": "/work"}"#,
            2 => r#"{"case_insensitive": true}"#,
            _ => r#"{"working_directory": "/Work", "case_insensitive": true}"#,
        };
        let text = format!(r#"{{"paths": {paths}, "rules": [{}]}}"#, rules.join(","));
        let policy = RulePolicy::from_json(&text, &registry)
            .unwrap_or_else(|error| panic!("{error}\n{text}"));
        loaded += 1;
        for _ in 0..60 {
            let mut arguments = serde_json::Map::new();
            for (field, values) in &pool {
                let pick = random.next(values.len() + 1);
                if let Some(value) = values.get(pick) {
                    arguments.insert((*field).to_owned(), value.clone());
                }
            }
            let arguments = Value::Object(arguments);
            let decision = policy.decide_arguments("t", &arguments);
            let got = (decision.action, decision.rule_id.map(|id| id.to_string()));
            assert_eq!(
                got,
                linear_expectation(&policy, &arguments),
                "case {case}: {arguments}\n{text}"
            );
            decided += 1;
        }
    }
    assert_eq!(loaded, 400);
    assert_eq!(decided, 400 * 60);
}

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

// ---- a target rule alone and among fillers ----------------------------------------------------

/// `target` alone (linear) and `target` among 9 unrelated filler rules of the same action and of
/// allow (indexed) must decide the same action.
fn index_agrees(paths: Value, target: Value, arguments: &[Value]) {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["t"]);
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
