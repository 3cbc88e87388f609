//! The load-time index must give exactly the decisions of a linear scan: compared over random
//! policies (many rules on one tool, indexed and unindexed conditions, both path modes) and a pool
//! of arguments holding every kind of value the index treats specially.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::condition::{CallPaths, Condition, PathOptions};
use super::scan::pick_linear;
use super::{PolicyConfig, RuleConfig, RulePolicy};
use crate::decision::{PolicyAction, PolicyDecision};
use crate::{ToolDefinition, ToolError, ToolRegistry, ToolSpec};

fn registry() -> ToolRegistry {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let schema = json!({"type": "object", "properties": {
        "path": {"type": "string"}, "command": {"type": "string"},
        "argv": {"type": "array", "items": {"type": "string"}}, "mode": {"type": "string"},
        "dest": {"type": "string"}, "user": {"type": "string"}}});
    ToolRegistry::new([ToolDefinition::new(ToolSpec::new("t", "", schema), noop).unwrap()]).unwrap()
}

const PROGRAMS: [&str; 7] = ["git", "GIT", "git-lfs", "sudo", "ls", "/usr/bin/git", "env"];
const SUBCOMMANDS: [&str; 3] = ["push", "status", "pull"];

/// Condition number `n` of a pool of about 290. Paths are judged on two fields and texts compared
/// on two, and `/command` is indexed both as a command and as text: rules must share a group only
/// with rules of the same kind on the same field.
fn condition(n: usize) -> Condition {
    let k = n % 7;
    match n / 7 % 21 {
        0 => Condition::path_glob("/path", format!("/d{k}/*")),
        1 => Condition::path_glob("/path", format!("/d{k}/**")),
        2 => Condition::path_glob("/path", format!("*.p{k}")),
        3 => Condition::path_within("/path", [format!("/d{k}")]),
        4 => Condition::path_within("/path", [format!("/d{k}/s"), format!("/e{k}")]),
        5 => Condition::command_prefix("/command", [PROGRAMS[k], SUBCOMMANDS[n % 3]]),
        6 => Condition::command_prefix("/command", [PROGRAMS[k]]),
        7 => Condition::argv_prefix("/argv", [PROGRAMS[k], SUBCOMMANDS[n % 3]]),
        8 => Condition::one_of(
            "/mode",
            [json!(format!("m{k}")), json!(format!("m{}", k + 1))],
        ),
        9 => Condition::All(vec![
            Condition::path_glob("/path", format!("/d{k}/**")),
            Condition::equals("/mode", json!(format!("m{}", n % 3))),
        ]),
        10 => Condition::path_within("/dest", [format!("/d{k}")]),
        11 => Condition::one_of("/user", [json!(format!("m{k}"))]),
        12 => Condition::one_of(
            "/command",
            [json!(format!("{} {}", PROGRAMS[k], SUBCOMMANDS[n % 3]))],
        ),
        // Deep keys sharing their first components: roots and literal glob prefixes at several
        // depths under one directory, so the trie's walk and its stops are both exercised.
        13 => Condition::path_within("/path", [format!("/srv/k{k}"), format!("/srv/k{k}/deep")]),
        14 => Condition::path_glob("/path", format!("/srv/k{k}/*")),
        15 => Condition::path_glob("/path", format!("/srv/*/k{k}")),
        16 => Condition::path_glob("/path", format!("/srv/k{k}/s/x.p{}", n % 3)),
        17 => Condition::path_within("/path", [format!("/d{k}/s/t"), "/srv".to_owned()]),
        // Many subcommands of one program, longer prefixes, and a subcommand in capitals:
        // narrowed by the word after the program.
        18 => Condition::command_prefix("/command", ["git", SUBCOMMANDS[n % 3], "origin"]),
        19 => Condition::argv_prefix("/argv", [PROGRAMS[k]]),
        20 => Condition::command_prefix("/command", [PROGRAMS[k], ["Push", "lfs", "-C"][n % 3]]),
        _ => Condition::glob("/mode", format!("m{k}*")),
    }
}

fn arguments() -> Vec<Value> {
    let paths = [
        json!("/d1/x"),
        json!("/d2/y/z"),
        json!("/"),
        json!("d1/x"),
        json!("/d1/x\u{0}"),
        json!("~/d1"),
        json!("/D1/X"),
        json!("/d1/../d2/x.p3"),
        json!("/e3/q"),
        json!("//d4//s/x"),
        json!("/srv/k3/deep/x"),
        json!("/srv/k2/s/x.p1"),
        json!("/SRV/K1/s/x.p2"),
        json!("/srv/a/k4"),
        json!("/srv"),
        json!("/d5/s/t/u"),
        json!("/srv/k6/../k5/x"),
        json!(7),
    ];
    let commands = [
        json!("git push"),
        json!("GIT status"),
        json!("/usr/bin/git pull"),
        json!("sudo git push"),
        json!("git-lfs pull"),
        json!("ls -la"),
        json!("git status; ls"),
        json!("git -C . push"),
        json!(""),
        json!(["git", "push"]),
        json!("git PUSH origin"),
        json!("git-push origin"),
        json!("GIT-Pull x"),
        json!("git"),
        json!("git status --short"),
        json!("/usr/bin/git-lfs pull"),
        json!("env git push origin"),
        json!("git push -f origin"),
        json!("git lfs pull"),
    ];
    let argvs = [
        json!(["git", "push"]),
        json!(["/usr/bin/git", "status"]),
        json!(["env", "git", "pull"]),
        json!(["git", 1]),
        json!("git push"),
        json!(["git lfs", "pull"]),
        json!(["git", "-c", "x", "push"]),
        json!(["git push now"]),
        json!(["git-status"]),
        json!(["sudo", "GIT", "Push"]),
        json!(["ſudo", "git", "push"]),
        json!(["lſ", "-la"]),
        json!(["/usr/bin/lſ", "x"]),
        json!(["\u{212A}it-push"]),
    ];
    let modes = [json!("m1"), json!("m2x"), json!(3), json!("zz")];
    let mut all = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        for (j, command) in commands.iter().enumerate() {
            let mut arguments = json!({"path": path, "command": command});
            if (i + j) % 2 == 0 {
                arguments["argv"] = argvs[(i + j) % argvs.len()].clone();
            }
            if (i * j) % 3 != 1 {
                arguments["mode"] = modes[(i + 2 * j) % modes.len()].clone();
            }
            // The other path and text fields, often holding what the first ones' rules look for.
            if (i + j) % 3 != 0 {
                arguments["dest"] = paths[(i + j) % paths.len()].clone();
                arguments["user"] = modes[(i * j + 1) % modes.len()].clone();
            }
            all.push(arguments);
        }
    }
    all.push(json!({}));
    all
}

/// The decision of a plain scan over every rule, as before the index.
fn linear(policy: &RulePolicy, arguments: &Value) -> PolicyDecision {
    let rules = &policy.by_tool["t"];
    let mut paths = CallPaths::new(&policy.paths);
    for (action, list) in rules.by_precedence() {
        if let Some(pick) = pick_linear(list.iter(), action, None, arguments, &mut paths) {
            return policy.picked(action, pick);
        }
    }
    policy.default_decision()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, max_global_rejects: 16_384, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn index_decides_exactly_as_a_linear_scan(
        chosen in proptest::collection::vec((0usize..294, 0usize..3), 8..60),
        working_directory in any::<bool>(),
        case_insensitive in any::<bool>(),
    ) {
        let actions = [PolicyAction::Allow, PolicyAction::Ask, PolicyAction::Deny];
        let mut seen = std::collections::HashSet::new();
        let rules: Vec<RuleConfig> = chosen
            .into_iter()
            .filter(|(n, _)| seen.insert(*n))
            .map(|(n, action)| {
                RuleConfig::new(format!("r{n:03}"), "t", actions[action], format!("reason {n}"))
                    .when(condition(n))
            })
            .collect();
        let mut paths = PathOptions::default();
        if working_directory {
            paths.working_directory = Some("/d1".to_owned());
        }
        paths.case_insensitive = case_insensitive;
        let policy = RulePolicy::new(PolicyConfig::new(rules).with_paths(paths), &registry());
        let policy = match policy {
            Ok(policy) => policy,
            Err(error) => return Err(TestCaseError::reject(error.to_string())),
        };
        for arguments in arguments() {
            prop_assert_eq!(
                policy.decide_arguments("t", &arguments),
                linear(&policy, &arguments),
                "{}", arguments
            );
        }
    }
}
