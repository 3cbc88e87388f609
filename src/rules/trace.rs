//! Why a call got its decision: every rule of its tool, evaluated for the call.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::condition::{CallPaths, Truth};
use super::{Rule, RulePolicy, groups};
use crate::decision::{PolicyAction, PolicyDecision};
use crate::runtime::PreparedToolCall;

/// How one rule evaluated for one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RuleTrace {
    /// The rule's id.
    pub rule_id: Arc<str>,
    /// The rule's action.
    pub action: PolicyAction,
    /// Whether the rule applied (for ask and deny rules, an undetermined condition applies).
    pub applied: bool,
    /// Whether its condition could be judged; `false` for wrong types, NUL bytes, shell syntax.
    pub determined: bool,
}

/// Why a call got its decision: the decision, and how every rule of the tool evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// The decision, with the deciding rule's id (`None` when the default decided).
    pub decision: PolicyDecision,
    /// Every rule on the call's tool, in precedence order (deny, ask, allow), then exact names
    /// before patterns, then by id.
    pub rules: Vec<RuleTrace>,
}

impl RulePolicy {
    /// The decision for `call` and how every rule of its tool evaluated.
    pub fn explain(&self, call: &PreparedToolCall) -> Explanation {
        self.explain_arguments(call.tool_name(), call.arguments())
    }

    /// As [`explain`](Self::explain), for arguments that were not validated.
    pub fn explain_arguments(&self, tool: &str, arguments: &Value) -> Explanation {
        let lists: Vec<(PolicyAction, Vec<&Rule>)> = match self.by_tool.get(tool) {
            Some(rules) => rules
                .by_precedence()
                .into_iter()
                .map(|(action, rules)| (action, rules.iter().collect()))
                .collect(),
            None => groups::rules_for(&self.groups, tool)
                .map(Vec::from)
                .unwrap_or_default(),
        };
        let rules = lists
            .into_iter()
            .flat_map(|(action, rules)| {
                rules.into_iter().map(move |rule| {
                    let truth = rule.truth(arguments, &mut CallPaths::new(&self.paths));
                    RuleTrace {
                        rule_id: Arc::clone(&rule.id),
                        action,
                        applied: rule.applies(action, arguments, &self.paths),
                        determined: !matches!(truth, Truth::Unknown(_)),
                    }
                })
            })
            .collect();
        Explanation {
            decision: self.decide_arguments(tool, arguments),
            rules,
        }
    }
}
