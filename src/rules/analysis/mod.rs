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

mod calls;
mod cells;
mod explain;
mod findings;
mod pattern;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

pub use explain::{CallExplanation, explain};
pub use findings::{Finding, FindingKind, findings};

use super::groups::{ToolPattern, is_pattern};
use super::{PolicyConfig, RulePolicy};
use crate::contract::{Principal, ToolCall};
use crate::policy::{LayerError, Layers, Policy, PolicyDecision};
use crate::registry::ToolRegistry;
use crate::runtime::PreparedToolCall;
use cells::{Atoms, Candidate};

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
    registry
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
        .collect()
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
            .filter(|config| {
                !(config.flows.is_empty() && config.limits.is_empty() && config.labels.is_empty())
            })
            .map(|config| {
                [
                    serde_json::to_value(&config.flows).unwrap_or(Value::Null),
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
    let differs = |index: usize| {
        old.len() != new.len() || old.iter().zip(&new).any(|(a, b)| a[index] != b[index])
    };
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

/// The calls of one tool that tell the given policies' rules apart.
struct Space {
    tool: String,
    base: Value,
    /// Every base call of a schema with required-key alternatives (`oneOf` / `anyOf` of
    /// `required` lists), `base` first: a combination invalid on one may be valid on another.
    bases: Vec<Value>,
    pointers: Vec<(String, Vec<Candidate>)>,
    // The roots `path_within` names at each pointer, to say what a candidate path means.
    roots: std::collections::BTreeMap<String, Vec<String>>,
    principals: Vec<Option<Principal>>,
    incomplete: Option<String>,
    /// The name no string of the policies holds: what "any other value" and "any other caller"
    /// are built from.
    fresh: String,
}

impl Space {
    /// The classes of `tool`'s calls for `policies`, or why no call could be built.
    fn new(
        configs: &[&PolicyConfig],
        registry: &ToolRegistry,
        tool: &str,
        fresh: &str,
    ) -> Result<Self, String> {
        let definition = registry
            .resolve(tool)
            .ok_or_else(|| format!("tool {tool:?} is not in the registry"))?;
        let schema = &definition.spec().input_schema;
        let fresh = fresh.to_owned();
        let mut atoms = Atoms::new(fresh.clone());
        let mut ids = BTreeSet::new();
        let mut groups = BTreeSet::new();
        for config in configs {
            for rule in config.rules.iter().filter(|rule| covers(&rule.tool, tool)) {
                if let Some(when) = &rule.when {
                    atoms.add(&rule.id, when);
                }
                if let Some(principals) = &rule.principals {
                    ids.extend(principals.ids.iter().cloned());
                    groups.extend(principals.groups.iter().cloned());
                }
            }
        }
        let mut incomplete = atoms.incomplete.take();
        if let Some((outer, inner)) = atoms.nested_pointers() {
            incomplete.get_or_insert(format!("rules read both {outer} and {inner} inside it"));
        }
        if let Some(first) = configs.first()
            && configs
                .iter()
                .any(|c| c.paths != first.paths || c.text != first.text)
        {
            incomplete.get_or_insert("the policies read paths or text differently".to_owned());
        }
        // Each alternative of a required-key `anyOf` / `oneOf` that makes a valid call; the
        // first is the base every class is set on.
        let bases: Vec<Value> = (0..calls::alternatives(schema).max(1))
            .map(|alternative| calls::base_value_with(schema, 0, alternative))
            .filter(|base| definition.check(base).is_ok())
            .collect();
        let base = bases.first().cloned().ok_or_else(|| {
            format!("no call valid against the schema of {tool:?} could be built")
        })?;
        let mut pointers = Vec::new();
        for (pointer, found) in &atoms.by_pointer {
            let (types, enumerated) = calls::types_at(schema, pointer);
            let mut kept = Vec::new();
            let candidates = found.candidates(types, enumerated.as_deref(), &fresh);
            let fits = |value: Option<&Value>| {
                bases.iter().any(|base| {
                    let mut arguments = base.clone();
                    calls::set(&mut arguments, pointer, value)
                        && definition.check(&arguments).is_ok()
                })
            };
            for candidate in &candidates {
                let candidate = candidate.clone();
                if fits(candidate.value.as_ref()) {
                    kept.push(candidate);
                    continue;
                }
                // "Any other string" where the schema asks for a pattern: a string the pattern
                // accepts, holding the fresh name or equal to no value named here.
                let other = (candidate.value.as_ref() == Some(&Value::from(fresh.as_str())))
                    .then(|| calls::pattern_at(schema, pointer))
                    .flatten()
                    .filter(|_| found.roots().is_empty())
                    .and_then(|pattern| {
                        pattern::matching(pattern, &fresh)
                            .into_iter()
                            .map(Value::from)
                            // Equal to no value named here, however the policies compare text.
                            .filter(|value| {
                                let text = value.as_str().map(cells::as_compared);
                                !candidates.iter().any(|c| {
                                    c.value
                                        .as_ref()
                                        .and_then(Value::as_str)
                                        .map(cells::as_compared)
                                        == text
                                })
                            })
                            .find(|value| fits(Some(value)))
                    });
                // "Any other list": the empty one is refused (`minItems`), so one holding the
                // fresh name, or the schema's own plain element, stands for it.
                let other = other.or_else(|| {
                    (candidate.value.as_ref() == Some(&Value::Array(Vec::new())))
                        .then(|| {
                            let item = calls::items_at(schema, pointer)
                                .map_or(Value::Null, |items| calls::base_value(items, 1));
                            [Value::from(fresh.as_str()), item]
                                .into_iter()
                                .map(|element| Value::Array(vec![element]))
                                .find(|list| {
                                    !candidates.iter().any(|c| c.value.as_ref() == Some(list))
                                        && fits(Some(list))
                                })
                        })
                        .flatten()
                });
                if let Some(value) = other {
                    kept.push(Candidate {
                        value: Some(value),
                        required: true,
                    });
                } else if calls::declared_plainly(schema, pointer)
                    && candidate
                        .value
                        .as_ref()
                        .is_some_and(|value| found.only_a_literal(value))
                {
                    // A value no valid call can hold: its class is empty.
                } else if candidate.required {
                    incomplete.get_or_insert(format!(
                        "a value of one class at {pointer} does not fit the schema of {tool:?}"
                    ));
                }
            }
            pointers.push((pointer.clone(), kept));
        }
        let principals = principal_classes(&ids, &groups, &fresh, &mut incomplete);
        let roots = atoms
            .by_pointer
            .iter()
            .map(|(pointer, found)| (pointer.clone(), found.roots().to_vec()))
            .collect();
        Ok(Self {
            tool: tool.to_owned(),
            base,
            bases,
            pointers,
            roots,
            principals,
            incomplete,
            fresh,
        })
    }

    /// How many calls the whole product holds (saturating).
    fn size(&self) -> usize {
        self.pointers
            .iter()
            .map(|(_, candidates)| candidates.len().max(1))
            .fold(self.principals.len(), usize::saturating_mul)
    }

    /// `arguments` (built on the first base), or the same classes set on the first other base
    /// that makes a valid call (a schema with required-key alternatives).
    fn on_a_valid_base(&self, arguments: Value, registry: &ToolRegistry) -> Value {
        let Some(definition) = registry.resolve(&self.tool) else {
            return arguments;
        };
        if self.bases.len() < 2 || definition.check(&arguments).is_ok() {
            return arguments;
        }
        for base in &self.bases[1..] {
            let mut moved = base.clone();
            for (pointer, _) in &self.pointers {
                let value = calls::get(&arguments, pointer);
                calls::set(&mut moved, pointer, value);
            }
            if definition.check(&moved).is_ok() {
                return moved;
            }
        }
        arguments
    }

    /// Every combination, or (past the budget) each pointer's candidates on the base call alone.
    fn calls(&self, registry: &ToolRegistry) -> (Vec<ToolCall>, Option<String>) {
        let mut incomplete = self.incomplete.clone();
        let mut argument_sets: Vec<Value> = Vec::new();
        if self.size() <= CALL_BUDGET {
            argument_sets.push(self.base.clone());
            for (pointer, candidates) in &self.pointers {
                let mut next = Vec::with_capacity(argument_sets.len() * candidates.len());
                for arguments in &argument_sets {
                    for candidate in candidates {
                        let mut changed = arguments.clone();
                        calls::set(&mut changed, pointer, candidate.value.as_ref());
                        next.push(changed);
                    }
                }
                if !candidates.is_empty() {
                    argument_sets = next;
                }
            }
        } else {
            incomplete.get_or_insert(format!(
                "{} combinations of argument and caller classes exceed the budget of {CALL_BUDGET}",
                self.size()
            ));
            argument_sets.push(self.base.clone());
            for (pointer, candidates) in &self.pointers {
                for candidate in candidates {
                    let mut changed = self.base.clone();
                    calls::set(&mut changed, pointer, candidate.value.as_ref());
                    argument_sets.push(changed);
                }
            }
        }
        // Within the budget every set meets every caller class; past it, the base call meets
        // every caller class and each single change only the caller-less one (so the calls stay
        // within twice the budget however many ids and groups the rules name).
        let within = self.size() <= CALL_BUDGET;
        let mut out = Vec::with_capacity(argument_sets.len() + self.principals.len());
        for (index, arguments) in argument_sets.into_iter().enumerate() {
            let arguments = self.on_a_valid_base(arguments, registry);
            let callers = if within || index == 0 {
                &self.principals[..]
            } else {
                &self.principals[..1]
            };
            for principal in callers.iter().take(CALL_BUDGET) {
                let mut call = ToolCall::new("analysis", self.tool.clone(), arguments.clone());
                if let Some(principal) = principal {
                    call = call.with_principal(principal.clone());
                }
                out.push(call);
            }
        }
        (out, incomplete)
    }
}

/// Whether a rule's `tool` (a name or a pattern) covers `tool`.
fn covers(written: &str, tool: &str) -> bool {
    if is_pattern(written) {
        ToolPattern::new(written).matches(tool)
    } else {
        written == tool
    }
}

/// No principal, and one principal per class the rules tell apart: each named id or another, in
/// each set of the named groups (up to 2^6 sets).
fn principal_classes(
    ids: &BTreeSet<String>,
    groups: &BTreeSet<String>,
    fresh: &str,
    incomplete: &mut Option<String>,
) -> Vec<Option<Principal>> {
    let mut out = vec![None];
    if ids.is_empty() && groups.is_empty() {
        return out;
    }
    let groups: Vec<&String> = groups.iter().collect();
    let mut sets: Vec<Vec<&String>> = Vec::new();
    if groups.len() <= 6 {
        for mask in 0..(1_u32 << groups.len()) {
            sets.push(
                (0..groups.len())
                    .filter(|bit| mask & (1 << bit) != 0)
                    .map(|bit| groups[bit])
                    .collect(),
            );
        }
    } else {
        incomplete.get_or_insert(format!(
            "rules name {} groups; only each one alone is tried",
            groups.len()
        ));
        sets.push(Vec::new());
        sets.extend(groups.iter().map(|group| vec![*group]));
    }
    let other = fresh.to_owned();
    for id in ids.iter().chain(std::iter::once(&other)) {
        for set in &sets {
            out.push(Some(Principal::new(id.clone(), set.iter().copied())));
        }
    }
    out
}

/// Prepares `call` as the controller would: the tool resolved, the arguments validated.
fn prepare(registry: &ToolRegistry, call: ToolCall) -> Option<PreparedToolCall> {
    crate::runtime::prepare_in(registry, call).ok()
}

/// Whether two decisions differ for whoever calls: another action, or an ask answerable by other
/// people.
fn differ(a: &PolicyDecision, b: &PolicyDecision) -> bool {
    let approvers = |d: &PolicyDecision| {
        d.approvers
            .iter()
            .map(ToString::to_string)
            .collect::<BTreeSet<_>>()
    };
    a.action != b.action || approvers(a) != approvers(b)
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
