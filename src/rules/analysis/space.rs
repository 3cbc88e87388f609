//! The calls of one tool that tell the given policies' rules apart: the classes of each
//! argument the rules read, the callers their `principals` tell apart, and the base calls they
//! are set on.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{CALL_BUDGET, PolicyConfig, calls, cells, covers, pattern};
use crate::contract::{Principal, ToolCall};
use crate::registry::ToolRegistry;
use cells::{Atoms, Candidate};

/// The calls of one tool that tell the given policies' rules apart.
pub(super) struct Space {
    pub(super) tool: String,
    pub(super) base: Value,
    /// Every base call of a schema with required-key alternatives (`oneOf` / `anyOf` of
    /// `required` lists), `base` first: a combination invalid on one may be valid on another.
    pub(super) bases: Vec<Value>,
    pub(super) pointers: Vec<(String, Vec<Candidate>)>,
    // The roots `path_within` names at each pointer, to say what a candidate path means.
    pub(super) roots: std::collections::BTreeMap<String, Vec<String>>,
    pub(super) principals: Vec<Option<Principal>>,
    pub(super) incomplete: Option<String>,
    /// The name no string of the policies holds: what "any other value" and "any other caller"
    /// are built from.
    pub(super) fresh: String,
}

impl Space {
    /// The classes of `tool`'s calls for `policies`, or why no call could be built.
    pub(super) fn new(
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
            for rule in config.rules.iter().filter(|rule| covers(rule, tool)) {
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
        if let Some(draft) = calls::older_draft(schema) {
            incomplete.get_or_insert(format!(
                "the schema of {tool:?} is of draft {draft:?}; the analysis reads 2019-09 and 2020-12"
            ));
        }
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
        // Text compared normalized is equal across spellings the classes below do not stand
        // for: a spelling equal to a literal once normalized, yet another path as sent (one
        // policy refuses a pointer read both ways at load; layers are loaded apart), and a
        // spelling the schema takes of a literal it refuses (`PROD` of `prod`).
        let normalized = configs.iter().any(|config| config.text.normalize);
        if normalized
            && let Some((pointer, _)) = atoms
                .by_pointer
                .iter()
                .find(|(_, found)| found.names_text() && !found.roots().is_empty())
        {
            incomplete.get_or_insert(format!(
                "text compared normalized at {pointer} is also judged as a path"
            ));
        }
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
                    && candidate.value.as_ref().is_some_and(|value| {
                        found.only_a_literal(value) && !(normalized && holds_text(value))
                    })
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
    pub(super) fn calls(&self, registry: &ToolRegistry) -> (Vec<ToolCall>, Option<String>) {
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

/// Whether `value` is or holds a string: compared normalized, a list or an object holding one
/// stands for other spellings the schema may take (an independent attack: `{"env": "PROD"}`,
/// refused by an enum of `prod`, was taken for a class no call holds, and two policies that
/// decide `{"env": "prod"}` apart were called the same).
fn holds_text(value: &Value) -> bool {
    match value {
        Value::String(_) => true,
        Value::Array(items) => items.iter().any(holds_text),
        Value::Object(members) => members.values().any(holds_text),
        _ => false,
    }
}
