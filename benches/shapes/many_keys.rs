//! The many-keys shape both `benches/policy.rs` and `benches/instructions.rs` measure: `count`
//! allow rules on `tool_000`, each with its own root under one shared directory
//! (`/srv/data/r00042`) or its own subcommand of one program (`git sub00042`) — what a
//! first-component or program index alone scans whole — and the arguments meeting one of them.

use serde_json::{Value, json};
use toolgate::rules::{Condition, PolicyConfig, RuleConfig};
use toolgate::{PolicyAction, RulePolicy, ToolRegistry};

/// Which of `count` rules a call meets: the first in naming order, the last, or a fixed one in
/// between (so every run measures the same work).
pub fn matched(count: usize, which: &str) -> usize {
    match which {
        "best" => 0,
        "worst" => count - 1,
        _ => (count * 7919 / 13) % count,
    }
}

/// The policy: `count` roots (`paths`) or subcommands on `tool_000` of `registry`.
pub fn policy(count: usize, paths: bool, registry: &ToolRegistry) -> RulePolicy {
    let rules: Vec<RuleConfig> = (0..count)
        .map(|i| {
            let condition = if paths {
                Condition::path_within("/path", [format!("/srv/data/r{i:05}")])
            } else {
                Condition::command_prefix("/command", ["git".to_owned(), format!("sub{i:05}")])
            };
            RuleConfig::new(format!("a{i:05}"), "tool_000", PolicyAction::Allow, "bench")
                .when(condition)
        })
        .collect();
    RulePolicy::new(PolicyConfig::new(rules), registry).expect("bench policy loads")
}

/// Arguments meeting rule `target`, checked to be decided by it.
pub fn meeting(policy: &RulePolicy, target: usize, paths: bool) -> Value {
    let arguments = if paths {
        json!({ "path": format!("/srv/data/r{target:05}/file.txt") })
    } else {
        json!({ "command": format!("git sub{target:05} --now") })
    };
    let decision = policy.decide_arguments("tool_000", &arguments);
    assert_eq!(decision.action, PolicyAction::Allow);
    assert_eq!(
        decision.rule_id.as_deref(),
        Some(format!("a{target:05}").as_str())
    );
    arguments
}
