//! The policy analysis' budget: the diff and the dead-rule analysis of two 1,000-rule policies over
//! 50 tools (target: under 1 s together), and examples checked at load (target: under 1 ms each).
//!
//! Each tool has 20 rules over three fields — 8 on a path (roots, nested denies, an ask), 8 on an
//! integer amount with an environment, 4 on the environment — the shapes of a real policy. The
//! second policy moves one bound on every fifth tool, so the diff finds witnesses there and proves
//! the other 40 tools the same. `check_100_examples` checks 100 examples (each validated against
//! its tool's schema, then decided) as every load does: a hundredth of it is one example's cost.
//!
//! The worst shapes (issue 37, item 4: bounded before the work is done): `worst_300_principals`
//! is one tool with 300 rules, each for its own principal and one of 6 groups, with a value and a
//! bound of its own (the shape that once decided 1.19 million calls); `worst_budget_20_tools` is
//! twenty such tools (about 1.4 MB of policy JSON), which spends the diff's whole budget;
//! `worst_deep_schema` reads 40 pointers 12 objects deep; `worst_wide_one_of` compares a rule
//! listing 56,000 strings with itself.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::rules::PolicyExample;
use toolgate::rules::analysis::{self, Analysed, ToolDiff};
use toolgate::{RulePolicy, ToolDefinition, ToolError, ToolRegistry, ToolSpec};

const TOOLS: usize = 50;

fn registry() -> ToolRegistry {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let schema = json!({"type": "object", "properties": {
        "path": {"type": "string"},
        "amount": {"type": "integer"},
        "env": {"enum": ["dev", "staging", "prod"]}
    }, "required": ["path"]});
    ToolRegistry::new((0..TOOLS).map(|tool| {
        ToolDefinition::new(
            ToolSpec::new(format!("tool_{tool:02}"), "bench", schema.clone()),
            noop,
        )
        .expect("schema compiles")
    }))
    .expect("distinct names")
}

/// 20 rules for each tool; `shifted` moves one amount bound on every fifth tool.
fn rules(shifted: bool) -> Vec<Value> {
    let mut rules = Vec::new();
    for tool in 0..TOOLS {
        let name = format!("tool_{tool:02}");
        let mut rule = |id: String, action: &str, when: Value| {
            rules.push(
                json!({"id": id, "tool": name, "action": action, "reason": "bench", "when": when}),
            );
        };
        for dir in 0..5 {
            rule(
                format!("t{tool}-read-{dir}"),
                "allow",
                json!({"path_within": {"pointer": "/path", "roots": [format!("/srv/t{tool}/d{dir}")]}}),
            );
        }
        for dir in 0..2 {
            rule(
                format!("t{tool}-secret-{dir}"),
                "deny",
                json!({"path_within": {"pointer": "/path", "roots": [format!("/srv/t{tool}/d{dir}/secret")]}}),
            );
        }
        rule(
            format!("t{tool}-ask-x"),
            "ask",
            json!({"path_within": {"pointer": "/path", "roots": [format!("/srv/t{tool}/d4/x")]}}),
        );
        for step in 0..8_i64 {
            let mut bound = 100 * (step + 1);
            if shifted && tool % 5 == 0 && step == 6 {
                bound += 1;
            }
            let env = ["dev", "staging"][usize::try_from(step).unwrap() % 2];
            rule(
                format!("t{tool}-amount-{step}"),
                if step < 6 { "allow" } else { "ask" },
                json!({"all": [{"range": {"pointer": "/amount", "min": bound - 100, "max": bound}},
                               {"equals": {"pointer": "/env", "value": env}}]}),
            );
        }
        for (index, env) in ["dev", "staging", "prod", "prod"].iter().enumerate() {
            let action = ["allow", "allow", "ask", "deny"][index];
            let when = if index == 3 {
                json!({"all": [{"equals": {"pointer": "/env", "value": env}}, {"range": {"pointer": "/amount", "min": 10_000}}]})
            } else {
                json!({"equals": {"pointer": "/env", "value": env}})
            };
            rule(format!("t{tool}-env-{index}"), action, when);
        }
    }
    rules
}

fn load(rules: Vec<Value>, examples: Vec<Value>, registry: &ToolRegistry) -> RulePolicy {
    let text = json!({"rules": rules, "examples": examples}).to_string();
    RulePolicy::from_json(&text, registry).unwrap_or_else(|error| panic!("{error}"))
}

fn examples(count: usize) -> Vec<Value> {
    (0..count)
        .map(|index| {
            let tool = index % TOOLS;
            json!({"tool": format!("tool_{tool:02}"),
                   "arguments": {"path": format!("/srv/t{tool}/d0/file{index}")},
                   "expect": "allow", "rule": format!("t{tool}-read-0")})
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let registry = registry();
    let old = Analysed::policy(load(rules(false), Vec::new(), &registry));
    let new = Analysed::policy(load(rules(true), Vec::new(), &registry));
    let diffs = analysis::diff(&old, &new, &registry);
    let differing = diffs
        .iter()
        .filter(|diff| matches!(diff, ToolDiff::Differs { .. }))
        .count();
    let same = diffs
        .iter()
        .filter(|diff| matches!(diff, ToolDiff::Same { .. }))
        .count();
    assert_eq!(
        (differing, same),
        (TOOLS / 5, TOOLS - TOOLS / 5),
        "{diffs:#?}"
    );
    let findings = analysis::findings(&new, &registry);
    eprintln!(
        "policy_analysis: {differing} tools differ, {same} proven the same; {} findings",
        findings.len()
    );

    let mut group = c.benchmark_group("policy_analysis");
    group.sample_size(10);
    group.bench_function("diff_1000_rules_50_tools", |b| {
        b.iter(|| black_box(analysis::diff(&old, &new, &registry)));
    });
    group.bench_function("findings_1000_rules_50_tools", |b| {
        b.iter(|| black_box(analysis::findings(&new, &registry)));
    });
    // What a load adds per example: checking 100 against the loaded policy.
    let loaded = load(rules(false), examples(100), &registry);
    let written: Vec<PolicyExample> = loaded.config().examples.clone();
    group.bench_function("check_100_examples", |b| {
        b.iter(|| {
            let problems = loaded.check_examples(black_box(&written), &registry);
            assert!(problems.is_empty());
        });
    });
    group.finish();
}

/// `tools` tools of 300 rules each: a principal of its own, one of 6 groups, a currency of its
/// own and an amount bound `shift` apart between the two policies.
fn crowded(tools: usize, shift: i64) -> (ToolRegistry, String) {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let schema = json!({"type": "object", "properties": {
        "currency": {"type": "string"}, "cents": {"type": "integer"}
    }, "required": ["cents"]});
    let registry = ToolRegistry::new((0..tools).map(|tool| {
        ToolDefinition::new(
            ToolSpec::new(format!("pay_{tool}"), "bench", schema.clone()),
            noop,
        )
        .expect("schema compiles")
    }))
    .expect("distinct names");
    let mut rules = Vec::new();
    for tool in 0..tools {
        for index in 0..300_i64 {
            rules.push(json!({
                "id": format!("r{tool}-{index}"), "tool": format!("pay_{tool}"),
                "action": "allow", "reason": "r",
                "principals": {"ids": [format!("p{index}")], "groups": [format!("g{}", index % 6)]},
                "when": {"all": [
                    {"one_of": {"pointer": "/currency", "values": [format!("C{index}")]}},
                    {"range": {"pointer": "/cents", "max": index * 10 + shift}}
                ]}
            }));
        }
    }
    (registry, json!({ "rules": rules }).to_string())
}

/// One tool whose 40 rules read pointers 12 objects deep.
fn deep() -> (ToolRegistry, String, String) {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let mut schema = json!({"type": "object", "properties": {
        "leaf": {"type": "string"}, "n": {"type": "integer"}
    }});
    for level in (0..12).rev() {
        schema = json!({"type": "object", "properties": {
            format!("l{level}"): schema, "leaf": {"type": "string"}, "n": {"type": "integer"}
        }});
    }
    let registry =
        ToolRegistry::new([
            ToolDefinition::new(ToolSpec::new("deep", "bench", schema), noop)
                .expect("schema compiles"),
        ])
        .expect("one tool");
    let policy = |shift: i64| {
        let rules: Vec<Value> = (0..40_i64)
            .map(|index| {
                let depth = usize::try_from(index % 12).unwrap_or(0);
                let path: String = (0..depth).map(|level| format!("/l{level}")).collect();
                json!({"id": format!("d{index}"), "tool": "deep", "action": "allow", "reason": "r",
                       "when": {"range": {"pointer": format!("{path}/l{depth}/n"), "max": index + shift}}})
            })
            .collect();
        json!({ "rules": rules }).to_string()
    };
    (registry, policy(0), policy(1))
}

fn worst(c: &mut Criterion) {
    let mut group = c.benchmark_group("policy_analysis_worst");
    group.sample_size(10);
    let (registry, text) = crowded(1, 0);
    let one = || Analysed::policy(RulePolicy::from_json(&text, &registry).expect("loads"));
    let (old, new) = (one(), one());
    group.bench_function("worst_300_principals", |b| {
        b.iter(|| black_box(analysis::diff(&old, &new, &registry)));
    });
    let (registry, old_text) = crowded(20, 0);
    let (_, new_text) = crowded(20, 5);
    eprintln!(
        "policy_analysis_worst: two policies of {} and {} bytes",
        old_text.len(),
        new_text.len()
    );
    let old = Analysed::policy(RulePolicy::from_json(&old_text, &registry).expect("loads"));
    let new = Analysed::policy(RulePolicy::from_json(&new_text, &registry).expect("loads"));
    group.bench_function("worst_budget_20_tools", |b| {
        b.iter(|| black_box(analysis::diff(&old, &new, &registry)));
    });
    let (registry, old_text, new_text) = deep();
    let old = Analysed::policy(RulePolicy::from_json(&old_text, &registry).expect("loads"));
    let new = Analysed::policy(RulePolicy::from_json(&new_text, &registry).expect("loads"));
    group.bench_function("worst_deep_schema", |b| {
        b.iter(|| black_box(analysis::diff(&old, &new, &registry)));
    });
    let (registry, text) = wide();
    let old = Analysed::policy(RulePolicy::from_json(&text, &registry).expect("loads"));
    let new = Analysed::policy(RulePolicy::from_json(&text, &registry).expect("loads"));
    group.bench_function("worst_wide_one_of", |b| {
        b.iter(|| black_box(analysis::diff(&old, &new, &registry)));
    });
    group.finish();
}

/// One rule whose `one_of` lists 56,000 strings (the policy 0.49 MB, the pair under 1 MB): each
/// literal a class of its own, and each call deciding it once (an independent attack found both
/// quadratic: 16.8 s).
fn wide() -> (ToolRegistry, String) {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let schema = json!({"type": "object", "properties": {"note": {"type": "string"}},
        "required": ["note"]});
    let registry =
        ToolRegistry::new([
            ToolDefinition::new(ToolSpec::new("pay", "bench", schema), noop)
                .expect("schema compiles"),
        ])
        .expect("one tool");
    let values: Vec<String> = (0..56_000).map(|n| format!("v{n}")).collect();
    let policy = json!({"rules": [{"id": "r", "tool": "pay", "action": "allow", "reason": "bench",
        "when": {"one_of": {"pointer": "/note", "values": values}}}]});
    (registry, policy.to_string())
}

criterion_group!(benches, bench, worst);
criterion_main!(benches);
