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

mod fillers;
mod two_denies;
