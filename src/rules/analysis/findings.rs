//! Rules that can never decide a call, and layers that change no decision — found over the same
//! classes of calls as the diff, and reported only where those classes cover every valid call.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Analysed, Space, ToolDiff, covers, diff, prepare};
use crate::decision::PolicyAction;
use crate::policy::Policy;
use crate::registry::ToolRegistry;
use crate::rules::RulePolicy;

/// What a finding says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FindingKind {
    /// The rule applies to no valid call (its condition never holds for its callers).
    Dead,
    /// The rule applies to some calls, but another rule decides every one of them.
    Shadowed,
    /// Removing the layer changes no decision on any tool (its rate limits aside).
    LayerAddsNothing,
}

/// A rule or layer that adds nothing to what the policy decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// What was found.
    pub kind: FindingKind,
    /// The layer (for a stack; `policy` for one policy).
    pub layer: String,
    /// The rule, for a rule finding.
    pub rule_id: Option<String>,
    /// The sentence a person reads: the rule or layer, and what it means.
    pub message: String,
}

/// What the calls of one tool showed about one layer's rules.
#[derive(Default)]
struct Seen {
    decided: BTreeSet<String>,
    applied: BTreeSet<String>,
    // Tools on which the classes did not cover every call: rules on them are not judged.
    unproven: BTreeSet<String>,
}

/// The dead and shadowed rules of every layer of `policy`, and the layers that add nothing.
/// A rule covering a tool whose calls the analysis cannot cover (see the [module](super) docs) is
/// never reported: a finding is a proof, not a guess.
pub fn findings(policy: &Analysed, registry: &ToolRegistry) -> Vec<Finding> {
    let mut out = Vec::new();
    for (layer, rules) in &policy.layers {
        out.extend(layer_rules(layer, rules, registry));
    }
    if policy.layers.len() > 1 {
        for (layer, rules) in &policy.layers {
            if !rules.config().limits.is_empty() {
                continue;
            }
            let without = policy.without(layer);
            let same = diff(policy, &without, registry)
                .iter()
                .all(|tool| matches!(tool, ToolDiff::Same { .. }));
            if same {
                out.push(Finding {
                    kind: FindingKind::LayerAddsNothing,
                    layer: layer.clone(),
                    rule_id: None,
                    message: format!(
                        "layer {layer:?} changes no decision: the stack decides every call alike without it"
                    ),
                });
            }
        }
    }
    out
}

fn layer_rules(layer: &str, policy: &RulePolicy, registry: &ToolRegistry) -> Vec<Finding> {
    let config = policy.config();
    let fresh = super::fresh_for(&[config]);
    let mut seen = Seen::default();
    for spec in registry.specs() {
        let tool = spec.name.as_str();
        let on_tool: Vec<&str> = config
            .rules
            .iter()
            .filter(|rule| covers(rule, tool))
            .map(|rule| rule.id.as_str())
            .collect();
        if on_tool.is_empty() {
            continue;
        }
        let space = match Space::new(&[config], registry, tool, &fresh) {
            Ok(space) => space,
            Err(_) => {
                seen.unproven.insert(tool.to_owned());
                continue;
            }
        };
        let (calls, incomplete) = space.calls(registry);
        if incomplete.is_some() {
            seen.unproven.insert(tool.to_owned());
            continue;
        }
        let mut prepared_calls = Vec::with_capacity(calls.len());
        for call in calls {
            let Some(prepared) = prepare(registry, call) else {
                seen.unproven.insert(tool.to_owned());
                break;
            };
            if let Some(rule) = &policy.decide(&prepared).rule_id {
                seen.decided.insert(rule.to_string());
            }
            prepared_calls.push(prepared);
        }
        // Only a rule that decided nothing needs telling dead from shadowed: explaining every
        // call costs three times its decision.
        if on_tool.iter().any(|id| !seen.decided.contains(*id)) {
            for prepared in &prepared_calls {
                let explained = policy.explain_arguments(tool, prepared.arguments());
                for trace in explained.rules.iter().filter(|trace| trace.applied) {
                    seen.applied.insert(trace.rule_id.to_string());
                }
            }
        }
    }
    let mut tools_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for rule in &config.rules {
        let tools = registry
            .specs()
            .map(|spec| spec.name.as_str())
            .filter(|tool| covers(rule, tool));
        tools_of.entry(rule.id.as_str()).or_default().extend(tools);
    }
    let mut out = Vec::new();
    for rule in &config.rules {
        let id = rule.id.as_str();
        let proven = tools_of[id]
            .iter()
            .all(|tool| !seen.unproven.contains(*tool));
        if !proven || seen.decided.contains(id) {
            continue;
        }
        let asks = if rule.action == PolicyAction::Ask {
            "; it can never ask"
        } else {
            ""
        };
        let (kind, message) = if seen.applied.contains(id) {
            (
                FindingKind::Shadowed,
                format!(
                    "rule {id:?} never decides a call: another rule decides every call it applies to{asks}"
                ),
            )
        } else {
            (
                FindingKind::Dead,
                format!("rule {id:?} applies to no valid call{asks}"),
            )
        };
        out.push(Finding {
            kind,
            layer: layer.to_owned(),
            rule_id: Some(id.to_owned()),
            message,
        });
    }
    out
}
