//! Rule-policy decision time as the rule count grows: 1, 100 and 1,000 rules over 100 tools.
//! Rules are indexed by tool, so the total count should not matter; what remains is the rules of
//! the call's own tool (1, 1 and 10 here). The `1000_on_tool` cases put 1,000 rules on the called
//! tool itself (1,000 denies on distinct directories or programs, one allow): the load-time index
//! should keep them within 3x of the one-rule cases. The `many_keys` cases put 1,000 and 10,000
//! allow rules on one tool sharing a directory or a program, and match the first, the last and a
//! random one of them.

use std::hint::black_box;

#[path = "shapes/many_keys.rs"]
mod shapes;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::rules::{Condition, PolicyConfig, RuleConfig};
use toolgate::{PolicyAction, RulePolicy, ToolDefinition, ToolError, ToolRegistry, ToolSpec};

const TOOLS: usize = 100;

fn registry() -> ToolRegistry {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    ToolRegistry::new((0..TOOLS).map(|tool| {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}, "command": {"type": "string"}}});
        ToolDefinition::new(
            ToolSpec::new(format!("tool_{tool:03}"), "bench", schema),
            noop,
        )
        .expect("schema compiles")
    }))
    .expect("distinct names")
}

/// `count` rules, rule `i` on tool `tool_of(i)`, a third each allow / ask / deny, each on its own
/// directory.
fn policy(count: usize, tool_of: impl Fn(usize) -> usize, registry: &ToolRegistry) -> RulePolicy {
    let actions = [PolicyAction::Allow, PolicyAction::Ask, PolicyAction::Deny];
    let rules = (0..count)
        .map(|i| {
            RuleConfig::new(
                format!("r{i:04}"),
                format!("tool_{:03}", tool_of(i)),
                actions[(i / TOOLS) % 3],
                "bench",
            )
            .when(Condition::path_glob("/path", format!("/dir{i}/*")))
        })
        .collect::<Vec<_>>();
    RulePolicy::new(PolicyConfig::new(rules), registry).expect("bench policy loads")
}

/// 1,000 deny rules on `tool_000`, each on its own directory (`paths`) or program, and one allow.
fn on_tool(count: usize, paths: bool, registry: &ToolRegistry) -> RulePolicy {
    let mut rules: Vec<RuleConfig> = (0..count)
        .map(|i| {
            let condition = if paths {
                Condition::path_glob("/path", format!("/dir{i}/*"))
            } else {
                Condition::command_prefix("/command", [format!("prog{i}"), "run".to_owned()])
            };
            RuleConfig::new(format!("d{i:04}"), "tool_000", PolicyAction::Deny, "bench")
                .when(condition)
        })
        .collect();
    rules.push(
        RuleConfig::new("allow", "tool_000", PolicyAction::Allow, "bench").when(if paths {
            Condition::path_within("/path", ["/work"])
        } else {
            Condition::command_prefix("/command", ["git", "status"])
        }),
    );
    RulePolicy::new(PolicyConfig::new(rules), registry).expect("bench policy loads")
}

fn decide_on_tool(c: &mut Criterion) {
    let registry = registry();
    let path = json!({"path": "/work/src/file.txt"});
    let command = json!({"command": "git status --short"});
    let mut group = c.benchmark_group("policy_decide");
    for (name, policy, arguments) in [
        ("1_on_tool_paths", on_tool(0, true, &registry), &path),
        ("1000_on_tool_paths", on_tool(1000, true, &registry), &path),
        ("1_on_tool_commands", on_tool(0, false, &registry), &command),
        (
            "1000_on_tool_commands",
            on_tool(1000, false, &registry),
            &command,
        ),
    ] {
        assert_eq!(
            policy.decide_arguments("tool_000", arguments).action,
            PolicyAction::Allow
        );
        group.bench_function(format!("{name}_allow"), |b| {
            b.iter(|| policy.decide_arguments(black_box("tool_000"), black_box(arguments)))
        });
    }
    group.finish();
}

fn decide(c: &mut Criterion) {
    let registry = registry();
    let matching = json!({"path": "/dir0/file.txt"});
    let unmatched = json!({"path": "/elsewhere/file.txt"});
    let mut group = c.benchmark_group("policy_decide");
    // Spread evenly: the called tool has 1, 1 and 10 rules.
    let spread = |i: usize| i % TOOLS;
    // The called tool keeps its one rule; the other 99 tools carry the rest.
    let elsewhere = |i: usize| if i == 0 { 0 } else { 1 + i % (TOOLS - 1) };
    let cases = [
        ("1_rules", policy(1, spread, &registry)),
        ("100_rules", policy(100, spread, &registry)),
        ("1000_rules", policy(1000, spread, &registry)),
        ("1000_rules_1_on_tool", policy(1000, elsewhere, &registry)),
    ];
    for (name, policy) in &cases {
        group.bench_function(format!("{name}_allow"), |b| {
            b.iter(|| policy.decide_arguments(black_box("tool_000"), black_box(&matching)))
        });
        group.bench_function(format!("{name}_default_deny"), |b| {
            b.iter(|| policy.decide_arguments(black_box("tool_000"), black_box(&unmatched)))
        });
    }
    group.finish();
}

/// The best (first in naming order), worst (last) and a fixed random matching rule, at 1, 1,000
/// and 10,000 rules on the tool: each should stay within 3x of the one-rule case.
fn decide_whichever_rule_matches(c: &mut Criterion) {
    let registry = registry();
    let mut group = c.benchmark_group("policy_decide_many_keys");
    for (kind, paths) in [("roots", true), ("subcommands", false)] {
        for count in [1, 1000, 10_000] {
            let policy = shapes::policy(count, paths, &registry);
            let whiches: &[(&str, usize)] = if count == 1 {
                &[("best", 0)]
            } else {
                &[
                    ("best", 0),
                    ("worst", count - 1),
                    ("random", shapes::matched(count, "random")),
                ]
            };
            for &(which, target) in whiches {
                let arguments = shapes::meeting(&policy, target, paths);
                group.bench_function(format!("{kind}_{count}_{which}_allow"), |b| {
                    b.iter(|| policy.decide_arguments(black_box("tool_000"), black_box(&arguments)))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    decide,
    decide_on_tool,
    decide_whichever_rule_matches
);
criterion_main!(benches);
