//! Issue 37, item 4: the analysis is bounded before the work is done — the calls one tool and
//! one diff decide stay within their budgets however many principals, groups and values the
//! rules name.

use std::sync::Arc;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::rules::analysis::{self, Analysed, CALL_BUDGET, DIFF_BUDGET, ToolDiff};
use toolgate::*;

fn tools(count: usize) -> ToolRegistry {
    let runs = Arc::default();
    registry((0..count).map(|index| {
        counted(
            &format!("pay_{index}"),
            json!({"type": "object", "properties": {
                "currency": {"type": "string"}, "cents": {"type": "integer"}, "note": {"type": "string"}
            }, "required": ["cents"]}),
            &runs,
        )
    }))
}

/// 300 rules on each tool, each for its own principal, with values and bounds of its own.
fn crowded(tools: usize, shift: i64) -> String {
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
    json!({ "rules": rules }).to_string()
}

fn calls_of(diff: &ToolDiff) -> usize {
    match diff {
        ToolDiff::Same { calls, .. } | ToolDiff::Unknown { calls, .. } => *calls,
        ToolDiff::Differs { .. } => 0,
        _ => 0,
    }
}

#[test]
fn three_hundred_principals_do_not_multiply_past_the_budget() {
    let registry = tools(1);
    let load = |text: &str| Analysed::policy(RulePolicy::from_json(text, &registry).unwrap());
    let (old, new) = (load(&crowded(1, 0)), load(&crowded(1, 0)));
    let diffs = analysis::diff(&old, &new, &registry);
    let ToolDiff::Unknown { reason, calls, .. } = &diffs[0] else {
        panic!("{:?}", diffs[0])
    };
    assert!(
        reason.contains("budget") || reason.contains("groups"),
        "{reason}"
    );
    assert!(*calls <= 2 * CALL_BUDGET, "{calls} calls decided");
}

#[test]
fn one_diff_stops_at_its_budget_and_names_it() {
    let registry = tools(30);
    let load = |text: &str| Analysed::policy(RulePolicy::from_json(text, &registry).unwrap());
    let (old, new) = (load(&crowded(30, 0)), load(&crowded(30, 5)));
    let diffs = analysis::diff(&old, &new, &registry);
    let decided: usize = diffs.iter().map(calls_of).sum();
    assert!(decided <= DIFF_BUDGET, "{decided}");
    assert!(
        diffs
            .iter()
            .any(|diff| matches!(diff, ToolDiff::Unknown { reason, .. }
            if reason.starts_with("unknown (budget)"))),
        "a diff this large is cut: {:?}",
        diffs.iter().map(|d| d.tool()).collect::<Vec<_>>()
    );
    let _: Value = serde_json::to_value(&diffs).unwrap();
}
