//! What a policy allows, answered for every valid call: the diff of two policies with a witness
//! call, and the rules that can never decide one.
//!
//! For each tool, the analysis collects every condition of both policies' rules on it and cuts
//! each argument they read into classes of values those conditions judge alike (see the classes
//! below), and the callers into classes the rules' `principals` tell apart. It then builds one call
//! per combination of classes — each validated against the tool's schema — and decides it with
//! both policies, exactly as the controller would.
//!
//! # Guarantees
//!
//! - **Never a false "same".** [`ToolDiff::Same`] only when the classes provably cover every valid
//!   call: every condition on the tool is of a kind whose classes are known exactly (`equals`,
//!   `one_of`, `range`, `path_within`, and `all` / `any` / `not` of them), the arguments they read
//!   are independent (no pointer inside another), a call of every class was built and was valid,
//!   both policies read paths and text alike, and the combinations fit the budget. Otherwise
//!   [`ToolDiff::Unknown`], with the reason.
//! - **Every witness is real.** A [`Witness`] is a call valid against the tool's schema that both
//!   policies decided, through the same code the controller runs, and decided differently (another
//!   action, or an ask answerable by other people). Its arguments are built from the policies'
//!   own literals, roots and patterns — never from a call anyone made.
//! - Flow rules and rate limits are not compared: they judge a call by what its session did
//!   before. Two policies whose flow rules, limits or labels differ are never "same" on any tool
//!   (the answer is "unknown", naming them), and a witness is decided on an empty history.
//!
//! Conditions the analysis cannot cut into classes — `path_glob`, `glob`, `argv_prefix`,
//! `command_prefix`, `command_option`, `every`, `some` — still give candidates made from their
//! patterns (a path the glob matches, the prefix with an option before the subcommand, …), so a
//! difference they cause is often found; when none is, the answer is "unknown", never "same".

mod answerers;
mod calls;
mod cells;
mod explain;
mod findings;
mod fresh;
mod number_spellings;
mod pattern;
mod space;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

pub use explain::{CallExplanation, explain};
pub use findings::{Finding, FindingKind, findings};

use super::groups::{ToolPattern, is_pattern};
use super::{PolicyConfig, RulePolicy};
use crate::contract::{Principal, ToolCall};
use crate::decision::{PolicyDecision, RateSlot};
use crate::policy::{LayerError, Layers, Policy};
use crate::registry::ToolRegistry;
use crate::runtime::PreparedToolCall;
use answerers::differ;
use space::Space;

/// The most calls decided per tool (per policy) before the analysis answers "unknown".
pub const CALL_BUDGET: usize = 20_000;

/// The most calls one [`diff`] decides over every tool together (per policy); the tools past it
/// are "unknown (budget)", whatever the policies hold.
pub const DIFF_BUDGET: usize = 400_000;

/// One policy, or a stack of layers (highest first), as the analysis decides with it.
#[derive(Debug)]
pub struct Analysed {
    layers: Vec<(String, Arc<RulePolicy>)>,
    stack: Option<Layers>,
}

impl Analysed {
    /// One policy.
    pub fn policy(policy: RulePolicy) -> Self {
        Self {
            layers: vec![("policy".to_owned(), Arc::new(policy))],
            stack: None,
        }
    }

    /// A stack of layers, highest first, deciding as [`Layers`] does.
    ///
    /// # Errors
    ///
    /// [`LayerError::BadName`] for an empty or repeated name.
    pub fn layers(
        layers: impl IntoIterator<Item = (impl Into<String>, RulePolicy)>,
    ) -> Result<Self, LayerError> {
        let layers: Vec<(String, Arc<RulePolicy>)> = layers
            .into_iter()
            .map(|(name, policy)| (name.into(), Arc::new(policy)))
            .collect();
        let mut stack = Layers::new();
        for (name, policy) in &layers {
            stack = stack.layer(name.clone(), Arc::clone(policy))?;
        }
        Ok(Self {
            layers,
            stack: Some(stack),
        })
    }

    /// The same stack without layer `name` (for "does this layer add anything").
    fn without(&self, name: &str) -> Self {
        let layers: Vec<(String, Arc<RulePolicy>)> = self
            .layers
            .iter()
            .filter(|(other, _)| other != name)
            .cloned()
            .collect();
        let mut stack = Layers::new();
        for (name, policy) in &layers {
            stack = stack
                .layer(name.clone(), Arc::clone(policy))
                .unwrap_or_else(|_| Layers::new());
        }
        Self {
            layers,
            stack: Some(stack),
        }
    }

    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        match (&self.stack, self.layers.first()) {
            (Some(stack), _) => stack.decide(call),
            (None, Some((_, policy))) => policy.decide(call),
            (None, None) => Layers::new().decide(call),
        }
    }

    fn rate_slots(&self, call: &PreparedToolCall) -> Result<Vec<RateSlot>, PolicyDecision> {
        match (&self.stack, self.layers.first()) {
            (Some(stack), _) => stack.rate_slots(call),
            (None, Some((_, policy))) => policy.rate_slots(call),
            (None, None) => Ok(Vec::new()),
        }
    }

    fn configs(&self) -> impl Iterator<Item = &PolicyConfig> {
        self.layers.iter().map(|(_, policy)| policy.config())
    }
}

/// How two policies compare on one tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolDiff {
    /// The same decision for every valid call (proven over `calls` calls, one per class).
    Same {
        /// The tool.
        tool: String,
        /// How many calls were decided.
        calls: usize,
    },
    /// Valid calls the two decide differently: one witness for each pair of decisions that
    /// differs (denied before and allowed now, allowed before and asked now, …), in the order
    /// found — so a change that loosens one case and tightens another shows both.
    Differs {
        /// The tool.
        tool: String,
        /// Each call with both decisions; at least one.
        witnesses: Vec<Witness>,
    },
    /// No difference was found, but the analysis cannot prove there is none.
    Unknown {
        /// The tool.
        tool: String,
        /// Why not.
        reason: String,
        /// How many calls were decided alike.
        calls: usize,
    },
}

impl ToolDiff {
    /// The tool compared.
    pub fn tool(&self) -> &str {
        match self {
            Self::Same { tool, .. } | Self::Differs { tool, .. } | Self::Unknown { tool, .. } => {
                tool
            }
        }
    }
}

/// A call valid against the tool's schema, and how each policy decided it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Witness {
    /// The arguments.
    pub arguments: Value,
    /// Who calls (`None`: a call made for no principal).
    pub principal: Option<Principal>,
    /// The first policy's decision.
    pub old: PolicyDecision,
    /// The second policy's decision.
    pub new: PolicyDecision,
}

/// Compares `old` and `new` on every tool of `registry`, in registration order.
pub fn diff(old: &Analysed, new: &Analysed, registry: &ToolRegistry) -> Vec<ToolDiff> {
    let configs: Vec<&PolicyConfig> = old.configs().chain(new.configs()).collect();
    let fresh = fresh_for(&configs);
    let uncompared = histories_differ(old, new);
    let mut remaining = DIFF_BUDGET;
    let diffs: Vec<ToolDiff> = registry
        .specs()
        .map(|spec| {
            match compare_tool(&[old, new], registry, &spec.name, &fresh, &mut remaining) {
                // What a session did before may decide a call differently: never "same".
                ToolDiff::Same { tool, calls } if let Some(reason) = &uncompared => {
                    ToolDiff::Unknown {
                        tool,
                        reason: reason.clone(),
                        calls,
                    }
                }
                other => other,
            }
        })
        .collect();
    // The same history rules still read what ran before: where one tool is not decided alike,
    // a session may have run it under one policy and not the other, and a flow rule, rate limit
    // or provenance rule then decides any later call differently ("deny `y` after `x`", with `x`
    // allowed by one and denied by the other, was called "same" for `y`).
    let unlike = diffs
        .iter()
        .find(|diff| !matches!(diff, ToolDiff::Same { .. }))
        .map(|diff| diff.tool().to_owned());
    match unlike {
        Some(unlike) if holds_history(old) || holds_history(new) => diffs
            .into_iter()
            .map(|diff| match diff {
                ToolDiff::Same { tool, calls } => ToolDiff::Unknown {
                    reason: format!(
                        "{unlike:?} is not decided alike, and the policies' flow rules, rate limits or result rules judge a call by what its session ran before"
                    ),
                    tool,
                    calls,
                },
                other => other,
            })
            .collect(),
        _ => diffs,
    }
}

/// Whether a layer of `analysed` judges a call by what its session ran before.
fn holds_history(analysed: &Analysed) -> bool {
    analysed.configs().any(keeps_history)
}

/// Whether `config` holds anything that judges a call by what its session ran before: flow
/// rules (provenance among them), rate limits, the labels flow rules read, the sources that
/// classify results, or result rules (their labels, and what results record).
fn keeps_history(config: &PolicyConfig) -> bool {
    !(config.flows.is_empty()
        && config.limits.is_empty()
        && config.labels.is_empty()
        && config.sources.is_none()
        && config.results.is_empty())
}

/// Why `old` and `new` may decide a call differently by what its session did before — their
/// flow rules, rate limits or the labels those read differ, and the analysis compares none of
/// them —, or `None` when they hold the same ones.
fn histories_differ(old: &Analysed, new: &Analysed) -> Option<String> {
    // A layer without any adds no history to compare (a stack and the same stack without such
    // a layer hold the same ones).
    let parts = |analysed: &Analysed| -> Vec<[Value; 3]> {
        analysed
            .configs()
            .filter(|config| keeps_history(config))
            .map(|config| {
                [
                    // Which tools are trusted decides what provenance rules see: a flow part.
                    // So do result rules, which label sessions for the flow rules.
                    match (&config.sources, config.results.is_empty()) {
                        (None, true) => serde_json::to_value(&config.flows).unwrap_or(Value::Null),
                        (sources, _) => serde_json::json!([config.flows, sources, config.results]),
                    },
                    serde_json::to_value(&config.limits).unwrap_or(Value::Null),
                    serde_json::to_value(&config.labels).unwrap_or(Value::Null),
                ]
            })
            .collect()
    };
    let (old, new) = (parts(old), parts(new));
    if old == new {
        return None;
    }
    // Each kind compared on its own, over the layers that hold any of it.
    let kind = |sides: &[[Value; 3]], index: usize| -> Vec<Value> {
        sides
            .iter()
            .map(|parts| parts[index].clone())
            .filter(|part| {
                !(part.as_array().is_some_and(Vec::is_empty)
                    || part.as_object().is_some_and(serde_json::Map::is_empty))
            })
            .collect()
    };
    let differs = |index: usize| kind(&old, index) != kind(&new, index);
    let what = match (differs(0) || differs(2), differs(1)) {
        (true, true) => "flow rules and rate limits",
        (true, false) => "flow rules",
        _ => "rate limits",
    };
    Some(format!(
        "the policies' {what} differ, and the analysis does not compare them (they judge a call by what its session did before)"
    ))
}

/// The name no string of `configs` holds (see `cells::fresh_name`): read once per analysis.
fn fresh_for(configs: &[&PolicyConfig]) -> String {
    let written: Vec<Value> = configs
        .iter()
        .map(|config| serde_json::to_value(config).unwrap_or(Value::Null))
        .collect();
    let mut strings = Vec::new();
    for value in &written {
        cells::strings_in(value, &mut strings);
    }
    cells::fresh_name(strings)
}

/// Whether `rule` (its `tool` a name or a pattern) covers `tool`, as the policy decides it.
fn covers(rule: &crate::rules::RuleConfig, tool: &str) -> bool {
    if is_pattern(&rule.tool) {
        ToolPattern::new(&rule.tool).covers(tool, rule.action)
    } else {
        rule.tool == tool
    }
}

/// Prepares `call` as the controller would: the tool resolved, the arguments validated.
fn prepare(registry: &ToolRegistry, call: ToolCall) -> Option<PreparedToolCall> {
    crate::runtime::prepare_in(registry, call).ok()
}

fn compare_tool(
    policies: &[&Analysed; 2],
    registry: &ToolRegistry,
    tool: &str,
    fresh: &str,
    remaining: &mut usize,
) -> ToolDiff {
    let configs: Vec<&PolicyConfig> = policies.iter().flat_map(|p| p.configs()).collect();
    let space = match Space::new(&configs, registry, tool, fresh) {
        Ok(space) => space,
        Err(reason) => {
            return ToolDiff::Unknown {
                tool: tool.to_owned(),
                reason,
                calls: 0,
            };
        }
    };
    let (calls, mut incomplete) = space.calls(registry);
    if calls.len() > *remaining {
        return ToolDiff::Unknown {
            tool: tool.to_owned(),
            reason: format!(
                "unknown (budget): the {DIFF_BUDGET} calls one diff decides were spent on the tools before it"
            ),
            calls: 0,
        };
    }
    *remaining -= calls.len();
    let mut decided = 0;
    let mut witnesses: Vec<Witness> = Vec::new();
    for call in calls {
        let principal = call.principal.as_deref().cloned();
        let Some(prepared) = prepare(registry, call) else {
            incomplete.get_or_insert(format!(
                "a combination of argument classes does not fit the schema of {tool:?}"
            ));
            continue;
        };
        let old = policies[0].decide(&prepared);
        let new = policies[1].decide(&prepared);
        decided += 1;
        let seen = |w: &Witness| (w.old.action, w.new.action) == (old.action, new.action);
        if differ(&old, &new) && !witnesses.iter().any(seen) {
            witnesses.push(Witness {
                arguments: prepared.arguments().clone(),
                principal,
                old,
                new,
            });
        }
    }
    if !witnesses.is_empty() {
        return ToolDiff::Differs {
            tool: tool.to_owned(),
            witnesses,
        };
    }
    match incomplete {
        None => ToolDiff::Same {
            tool: tool.to_owned(),
            calls: decided,
        },
        Some(reason) => ToolDiff::Unknown {
            tool: tool.to_owned(),
            reason,
            calls: decided,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{PolicyConfig, fresh_for};

    #[test]
    fn the_fresh_name_is_held_by_no_string_of_the_policies_however_they_compare_text() {
        let config = |text: &str| -> PolicyConfig { serde_json::from_str(text).unwrap() };
        let plain = config(r#"{"rules": []}"#);
        assert_eq!(fresh_for(&[&plain]), "zz-toolgate-fresh");
        let taken = config(
            r#"{"rules": [{"id": "xyzzy ZZ-TOOLGATE-FRESH", "tool": "t", "action": "allow",
                "reason": "zz-toolgate-fresh-1 and zz-toolgate-freſh-2",
                "when": {"one_of": {"pointer": "/zz-toolgate-fresh-3", "values": ["xyzzy"]}}}]}"#,
        );
        let other = config(r#"{"rules": [], "labels": {"zz-toolgate-fresh-4": []}}"#);
        let fresh = fresh_for(&[&plain, &taken, &other]);
        assert_eq!(fresh, "zz-toolgate-fresh-5");
        let written = serde_json::to_string(&[&taken, &other]).unwrap();
        assert!(!written.to_lowercase().contains(&fresh));
    }
}
