//! The scenarios of `benches/gate.rs` and `benches/policy.rs`, run a given number of times, for
//! counting instructions under `valgrind --tool=callgrind` (see `scripts/bench-instructions`). Time on a
//! shared machine drifts by tens of percent; instruction counts do not.
//!
//! Usage: `instructions <scenario> <iterations>`. Only the work inside [`measured`] is counted
//! (`--toggle-collect`); building each iteration's input (criterion's `iter_batched` setup) and
//! dropping what it returns are not. The script runs 1 and 1,001 iterations and divides the
//! difference by 1,000, so first-call costs (thread-local caches, lazy statics) fall out too.

use std::hint::black_box;

#[path = "shapes/many_keys.rs"]
mod shapes;

#[path = "shapes/provenance.rs"]
mod provenance;

use serde_json::{Value, json};
use toolgate::approvals::PendingApprovals;
use toolgate::rules::{Condition, PolicyConfig, RuleConfig};
use toolgate::{
    ApprovalResponse, Outcome, Policy, PolicyAction, Reason, RulePolicy, ToolCall, ToolController,
    ToolDefinition, ToolError, ToolPolicy, ToolRegistry, ToolResult, ToolRuntime, ToolSpec,
};

/// Every scenario, in the order `scripts/bench-instructions` reports them.
const SCENARIOS: &[&str] = &[
    "floor_allow",
    "allow",
    "deny",
    "unknown_tool",
    "ask_approve_execute",
    "part_prepare_and_decide",
    "part_hold_and_answer",
    "part_recheck_digest",
    "rules_allow",
    "rules_allow_rate_limited",
    "rules_allow_rate_limited_per_key",
    "policy_1_rule_allow",
    "policy_1_rule_default_deny",
    "policy_10_rules_allow",
    "policy_10_rules_default_deny",
    "policy_1_on_tool_paths_allow",
    "policy_1000_on_tool_paths_allow",
    "policy_1_on_tool_commands_allow",
    "policy_1000_on_tool_commands_allow",
    "policy_roots_1_allow",
    "policy_roots_1000_best_allow",
    "policy_roots_1000_worst_allow",
    "policy_roots_1000_random_allow",
    "policy_roots_10000_best_allow",
    "policy_roots_10000_worst_allow",
    "policy_roots_10000_random_allow",
    "policy_subcommands_1_allow",
    "policy_subcommands_1000_best_allow",
    "policy_subcommands_1000_worst_allow",
    "policy_subcommands_1000_random_allow",
    "policy_subcommands_10000_best_allow",
    "policy_subcommands_10000_worst_allow",
    "policy_subcommands_10000_random_allow",
    "provenance_result_10kb_plain",
    "provenance_result_10kb_recorded",
    "provenance_one_flow_rule",
    "provenance_one_condition",
    "provenance_session_1000_results",
];

/// The counted region: callgrind's `--toggle-collect=*measured*` counts only what runs inside.
#[inline(never)]
fn measured<I, O>(work: &impl Fn(I) -> O, input: I) -> O {
    work(black_box(input))
}

fn repeat<I, O>(iterations: u64, setup: impl Fn() -> I, work: impl Fn(I) -> O) {
    for _ in 0..iterations {
        let input = setup();
        let output = measured(&work, input);
        drop(black_box(output));
    }
}

fn calculator_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": false
    })
}

fn add(args: &Value) -> Result<String, ToolError> {
    let (a, b) = (
        args["a"].as_i64().unwrap_or(0),
        args["b"].as_i64().unwrap_or(0),
    );
    Ok((a + b).to_string())
}

fn controller(allowed: &[&str], asked: &[&str]) -> ToolController {
    let spec = ToolSpec::new("calculator", "Add a and b.", calculator_schema());
    let registry = ToolRegistry::new([ToolDefinition::new(spec, add).expect("schema compiles")])
        .expect("one tool");
    let policy = ToolPolicy::new(allowed.iter().copied(), asked.iter().copied()).expect("disjoint");
    ToolController::new(registry, policy)
}

/// A controller over the calculator under a rule policy allowing it, with `limits` (JSON).
fn rules_controller(limits: &str) -> ToolController {
    let spec = ToolSpec::new("calculator", "Add a and b.", calculator_schema());
    let registry = ToolRegistry::new([ToolDefinition::new(spec, add).expect("schema compiles")])
        .expect("one tool");
    let policy = RulePolicy::from_json(
        &format!(
            r#"{{"rules": [{{"id": "calc", "tool": "calculator", "action": "allow", "reason": "arithmetic"}}],
                "limits": [{limits}]}}"#
        ),
        &registry,
    )
    .expect("policy loads");
    ToolController::new(registry, policy)
}

/// The calculator's runtime and a `ToolPolicy` that asks for it.
fn runtime_and_asking_policy() -> (ToolRuntime, ToolPolicy) {
    let spec = ToolSpec::new("calculator", "Add a and b.", calculator_schema());
    let registry = ToolRegistry::new([ToolDefinition::new(spec, add).expect("schema compiles")])
        .expect("one tool");
    let policy = ToolPolicy::new(Vec::<String>::new(), ["calculator"]).expect("disjoint");
    (ToolRuntime::new(registry), policy)
}

fn completed(outcome: Outcome) -> ToolResult {
    match outcome {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(_) => panic!("expected a result"),
    }
}

/// As in `benches/policy.rs`: 100 tools, `count` rules, rule `i` on tool `i % 100`, a third each
/// allow / ask / deny, each a `path_glob` on its own directory. Tool 0 has 1 rule of 1 and 10
/// rules of 1,000.
fn rule_policy(count: usize) -> RulePolicy {
    const TOOLS: usize = 100;
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let registry = ToolRegistry::new((0..TOOLS).map(|tool| {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        ToolDefinition::new(
            ToolSpec::new(format!("tool_{tool:03}"), "bench", schema),
            noop,
        )
        .expect("schema compiles")
    }))
    .expect("distinct names");
    let actions = [PolicyAction::Allow, PolicyAction::Ask, PolicyAction::Deny];
    let rules = (0..count).map(|i| {
        RuleConfig::new(
            format!("r{i:04}"),
            format!("tool_{:03}", i % TOOLS),
            actions[(i / TOOLS) % 3],
            "bench",
        )
        .when(Condition::path_glob("/path", format!("/dir{i}/*")))
    });
    RulePolicy::new(PolicyConfig::new(rules.collect::<Vec<_>>()), &registry)
        .expect("bench policy loads")
}

fn policy(iterations: u64, rules: usize, arguments: Value) {
    let policy = rule_policy(rules);
    repeat(
        iterations,
        || (),
        |()| drop(black_box(policy.decide_arguments("tool_000", &arguments))),
    );
}

/// `tool_000`, whose arguments hold a `path` and a `command`.
fn one_tool() -> ToolRegistry {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}, "command": {"type": "string"}}});
    ToolRegistry::new([
        ToolDefinition::new(ToolSpec::new("tool_000", "bench", schema), noop)
            .expect("schema compiles"),
    ])
    .expect("one tool")
}

/// As in `benches/policy.rs`: `count` deny rules on the called tool, each on its own directory
/// (`paths`) or program, and one allow rule that the call meets.
fn on_tool(iterations: u64, count: usize, paths: bool) {
    let registry = one_tool();
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
    let policy = RulePolicy::new(PolicyConfig::new(rules), &registry).expect("bench policy loads");
    let arguments = if paths {
        json!({"path": "/work/src/file.txt"})
    } else {
        json!({"command": "git status --short"})
    };
    repeat(
        iterations,
        || (),
        |()| drop(black_box(policy.decide_arguments("tool_000", &arguments))),
    );
}

/// `count` allow rules sharing a directory or a program (see `shapes/many_keys.rs`), the call
/// meeting rule `matched(count, which)`.
fn many_keys(iterations: u64, count: usize, which: &str, paths: bool) {
    let registry = one_tool();
    let policy = shapes::policy(count, paths, &registry);
    let arguments = shapes::meeting(&policy, shapes::matched(count, which), paths);
    repeat(
        iterations,
        || (),
        |()| drop(black_box(policy.decide_arguments("tool_000", &arguments))),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(scenario), Some(iterations)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<u64>().ok()),
    ) else {
        eprintln!(
            "usage: instructions <scenario> <iterations>\nscenarios: {}",
            SCENARIOS.join(" ")
        );
        std::process::exit(2);
    };
    let valid = json!({"a": 40, "b": 2});
    let call = |tool: &str| ToolCall::new("call_1", tool, valid.clone());
    let matching = json!({"path": "/dir0/file.txt"});
    let unmatched = json!({"path": "/elsewhere/file.txt"});
    match scenario.as_str() {
        "floor_allow" => {
            let validator = jsonschema::options()
                .offline()
                .build(&calculator_schema())
                .expect("schema compiles");
            repeat(
                iterations,
                || call("calculator"),
                |call: ToolCall| {
                    assert!(validator.is_valid(&call.arguments));
                    let content = add(&call.arguments).expect("adds");
                    ToolResult::ok(call.call_id, content)
                },
            );
        }
        "allow" => {
            let allow = controller(&["calculator"], &[]);
            repeat(
                iterations,
                || call("calculator"),
                |call| completed(allow.handle(call)),
            );
        }
        "deny" => {
            let deny = controller(&[], &[]);
            repeat(
                iterations,
                || call("calculator"),
                |call| completed(deny.handle(call)),
            );
        }
        "unknown_tool" => {
            let allow = controller(&["calculator"], &[]);
            repeat(
                iterations,
                || call("delete_everything"),
                |call| completed(allow.handle(call)),
            );
        }
        "ask_approve_execute" => {
            let ask = controller(&[], &["calculator"]);
            repeat(
                iterations,
                || call("calculator"),
                |call| {
                    let Outcome::PendingApproval(request) = ask.handle(call) else {
                        panic!("calculator asks");
                    };
                    ask.resolve(ApprovalResponse::approve(request.approval_id))
                        .expect("pending")
                },
            );
        }
        // The parts of the round trip the design requires besides one allow path (as
        // `round_trip_parts` in benches/gate.rs).
        "part_prepare_and_decide" => {
            let (runtime, policy) = runtime_and_asking_policy();
            repeat(
                iterations,
                || call("calculator"),
                |call| {
                    let prepared = runtime.prepare(call).expect("valid");
                    drop(black_box(policy.decide(&prepared)));
                    drop(prepared);
                },
            );
        }
        "part_hold_and_answer" => {
            let (runtime, _) = runtime_and_asking_policy();
            let pending = PendingApprovals::new();
            let reason = Reason::new("bench").expect("not empty");
            repeat(
                iterations,
                || runtime.prepare(call("calculator")).expect("valid"),
                |prepared| {
                    let request = pending.request(prepared, reason.clone()).expect("held");
                    let answered = pending
                        .answer(ApprovalResponse::approve(request.approval_id))
                        .expect("pending");
                    drop((request, answered));
                },
            );
        }
        "part_recheck_digest" => {
            let (runtime, _) = runtime_and_asking_policy();
            let pending = PendingApprovals::new();
            let prepared = runtime.prepare(call("calculator")).expect("valid");
            let request = pending
                .request(prepared, Reason::new("bench").expect("not empty"))
                .expect("held");
            repeat(iterations, || (), |()| assert!(request.digest_matches()));
        }
        "rules_allow" | "rules_allow_rate_limited" | "rules_allow_rate_limited_per_key" => {
            // Caps no run of this benchmark reaches: every call takes its slot and runs.
            let limits = match scenario.as_str() {
                "rules_allow" => "",
                "rules_allow_rate_limited" => {
                    r#"{"id": "cap", "tool": "calculator", "max": 100000, "per": "day", "over": "deny", "reason": "cap"}"#
                }
                _ => {
                    r#"{"id": "cap", "tool": "calculator", "max": 100000, "per": "day", "over": "deny", "reason": "cap", "key": {"pointer": "/a"}}"#
                }
            };
            let controller = rules_controller(limits);
            repeat(
                iterations,
                || call("calculator"),
                |call| completed(controller.handle(call)),
            );
        }
        "policy_1_rule_allow" => policy(iterations, 1, matching),
        "policy_1_rule_default_deny" => policy(iterations, 1, unmatched),
        "policy_10_rules_allow" => policy(iterations, 1000, matching),
        "policy_10_rules_default_deny" => policy(iterations, 1000, unmatched),
        "policy_1_on_tool_paths_allow" => on_tool(iterations, 0, true),
        "policy_1000_on_tool_paths_allow" => on_tool(iterations, 1000, true),
        "policy_1_on_tool_commands_allow" => on_tool(iterations, 0, false),
        "policy_1000_on_tool_commands_allow" => on_tool(iterations, 1000, false),
        many if many.starts_with("policy_roots_") || many.starts_with("policy_subcommands_") => {
            let paths = many.starts_with("policy_roots_");
            let rest = many
                .trim_start_matches("policy_roots_")
                .trim_start_matches("policy_subcommands_")
                .trim_end_matches("_allow");
            let (count, which) = rest.split_once('_').unwrap_or((rest, "best"));
            let count: usize = count.parse().expect("a rule count");
            many_keys(iterations, count, which, paths);
        }
        "provenance_result_10kb_plain" => {
            let plain = provenance::controller("");
            repeat(
                iterations,
                || (),
                |()| provenance::allowed(&plain, "read_page", json!({})),
            );
        }
        "provenance_result_10kb_recorded" => {
            // A fresh session every 400 results (made outside the count): a session's bound
            // (100,000 values) is never reached, as in `benches/provenance.rs`.
            let session = std::cell::RefCell::new(provenance::controller(provenance::PROVENANCE));
            let made = std::cell::Cell::new(0_u64);
            repeat(
                iterations,
                || {
                    made.set(made.get() + 1);
                    if made.get().is_multiple_of(400) {
                        *session.borrow_mut() = provenance::controller(provenance::PROVENANCE);
                    }
                },
                |()| provenance::allowed(&session.borrow(), "read_page", json!({})),
            );
        }
        "provenance_one_flow_rule" => {
            let flowing = provenance::controller(provenance::FLOW);
            let payee = json!({"iban": provenance::PAYEE});
            repeat(
                iterations,
                || payee.clone(),
                |payee| provenance::allowed(&flowing, "send_money", payee),
            );
        }
        "provenance_one_condition" | "provenance_session_1000_results" => {
            let results = if scenario == "provenance_one_condition" {
                10
            } else {
                1_000
            };
            let session = provenance::session_with(results);
            let payee = json!({"iban": provenance::PAYEE});
            repeat(
                iterations,
                || payee.clone(),
                |payee| provenance::allowed(&session, "send_money", payee),
            );
        }
        other => {
            eprintln!("unknown scenario {other}; one of: {}", SCENARIOS.join(" "));
            std::process::exit(2);
        }
    }
}
