//! The values that tell a tool's rules apart: for each pointer the rules read, one candidate per
//! class of values that every condition on that pointer judges alike — and whether the candidates
//! provably cover every class (then deciding one call per combination decides them all).
//!
//! A class is covered when this module knows the condition's semantics exactly: `equals` and
//! `one_of` (each literal is a class of its own; every other value of a type is one class),
//! `range` (the number line cut at every bound and literal, and the numbers that cannot be compared
//! exactly), `path_within` (inside each root but no deeper root, outside every root, and the
//! spellings that cannot be judged). For `path_glob`, `glob`, the command conditions and `every` /
//! `some`, candidates are still made from the patterns (to find a witness), but they do not cover
//! every class, and the analysis says why.

use std::collections::BTreeMap;

use serde_json::{Number, Value};

use super::calls::Types;
use crate::rules::Condition;

pub(super) use super::fresh::{as_compared, fresh_name, strings_in};
use super::number_spellings::{EXACT, spelled_otherwise};

/// What the conditions on one pointer look at.
#[derive(Debug, Default)]
pub(super) struct PointerAtoms {
    /// Literals of `equals` and `one_of`.
    literals: Vec<Value>,
    /// Each literal as JSON text: looked up in one step, not one comparison per literal (a rule
    /// of 56,000 literals took 16.8 s to compare with itself; an independent attack).
    literal_texts: std::collections::HashSet<String>,
    /// Bounds of `range`.
    bounds: Vec<Number>,
    /// Roots of `path_within`.
    roots: Vec<String>,
    /// Strings made from patterns (globs, path globs, command prefixes and options): candidates
    /// for a witness, covering no class for sure.
    extra: Vec<Value>,
}

/// The atoms of every condition of a tool's rules, by pointer, and why candidates made from them
/// may miss a class (`None`: they cover every class).
#[derive(Debug, Default)]
pub(super) struct Atoms {
    pub(super) by_pointer: BTreeMap<String, PointerAtoms>,
    pub(super) incomplete: Option<String>,
    /// The fresh name of this analysis ([`fresh_name`]).
    fresh: String,
}

impl Atoms {
    /// No atoms yet; values "equal to nothing the policies name" are built from `fresh`.
    pub(super) fn new(fresh: String) -> Self {
        Self {
            fresh,
            ..Self::default()
        }
    }

    fn at(&mut self, pointer: &str) -> &mut PointerAtoms {
        self.by_pointer.entry(pointer.to_owned()).or_default()
    }

    fn gap(&mut self, rule: &str, why: impl FnOnce() -> String) {
        if self.incomplete.is_none() {
            self.incomplete = Some(format!("rule {rule:?} {}", why()));
        }
    }

    /// Adds the leaves of `condition` (of rule `rule`).
    pub(super) fn add(&mut self, rule: &str, condition: &Condition) {
        let fresh = self.fresh.clone();
        match condition {
            Condition::All(items) | Condition::Any(items) => {
                for item in items {
                    self.add(rule, item);
                }
            }
            Condition::Not(inner) => self.add(rule, inner),
            Condition::Equals { pointer, value } => {
                self.literal(rule, pointer, value);
            }
            Condition::OneOf { pointer, values } => {
                for value in values {
                    self.literal(rule, pointer, value);
                }
            }
            Condition::Range { pointer, min, max } => {
                if min
                    .iter()
                    .chain(max)
                    .any(|bound| bound.as_f64().is_none_or(|x| x.abs() >= EXACT))
                {
                    self.gap(rule, || {
                        format!("bounds {pointer} past 2^53, where numbers are not cut exactly")
                    });
                }
                let at = self.at(pointer);
                at.bounds.extend(min.iter().chain(max).cloned());
            }
            Condition::PathWithin { pointer, roots, .. } => {
                self.at(pointer).roots.extend(roots.iter().cloned());
            }
            Condition::PathGlob { pointer, pattern } => {
                self.gap(rule, || format!("judges {pointer} with path_glob"));
                let path = if pattern.starts_with('/') {
                    pattern.clone()
                } else {
                    format!("/{fresh}/{pattern}")
                };
                let at = self.at(pointer);
                at.extra.push(Value::from(instantiate_glob(&path, &fresh)));
                at.extra
                    .push(Value::from(format!("{}/{fresh}", parent(&path))));
            }
            Condition::Glob {
                pointer, pattern, ..
            } => {
                self.gap(rule, || format!("judges {pointer} with glob"));
                self.at(pointer)
                    .extra
                    .push(Value::from(instantiate_glob(pattern, &fresh)));
            }
            Condition::ArgvPrefix { pointer, prefix } => {
                self.gap(rule, || format!("judges {pointer} with argv_prefix"));
                let at = self.at(pointer);
                for argv in command_spellings(prefix, &fresh) {
                    at.extra.push(Value::from(argv));
                }
            }
            Condition::CommandPrefix { pointer, prefix } => {
                self.gap(rule, || format!("judges {pointer} with command_prefix"));
                let at = self.at(pointer);
                for argv in command_spellings(prefix, &fresh) {
                    at.extra.push(Value::from(argv.join(" ")));
                }
                at.extra
                    .push(Value::from(format!("{} ; {fresh}", prefix.join(" "))));
            }
            Condition::CommandOption { pointer, options } => {
                self.gap(rule, || format!("judges {pointer} with command_option"));
                let at = self.at(pointer);
                for option in options {
                    at.extra.push(Value::from(format!("{fresh} {option}")));
                    at.extra
                        .push(Value::from(vec![fresh.clone(), option.clone()]));
                }
            }
            Condition::Every { pointer, condition } | Condition::Some { pointer, condition } => {
                self.gap(rule, || {
                    format!("judges the elements of the list {pointer}")
                });
                let elements = element_candidates(rule, condition, &fresh);
                let at = self.at(pointer);
                at.extra.push(Value::Array(Vec::new()));
                // One element of each kind, then each beside a plain one: a rule on every element
                // and a rule on some element tell these apart.
                for element in elements.iter().take(16) {
                    at.extra.push(Value::Array(vec![element.clone()]));
                    if let Some(first) = elements.first() {
                        at.extra
                            .push(Value::Array(vec![first.clone(), element.clone()]));
                    }
                }
            }
        }
    }

    fn literal(&mut self, rule: &str, pointer: &str, value: &Value) {
        // A list or object holding numbers has classes of inexact spellings inside it that one
        // candidate per literal does not reach.
        if matches!(value, Value::Array(_) | Value::Object(_)) && holds_number(value) {
            self.gap(rule, || {
                format!("compares {pointer} with a list or object holding numbers")
            });
        }
        if let Value::Number(number) = value
            && number.as_f64().is_none_or(|x| x.abs() >= EXACT)
        {
            self.gap(rule, || {
                format!(
                    "compares {pointer} with a number past 2^53, where numbers are not cut exactly"
                )
            });
        }
        let at = self.at(pointer);
        if let Value::Number(number) = value {
            at.bounds.push(number.clone());
        }
        at.literal_texts.insert(value.to_string());
        at.literals.push(value.clone());
    }

    /// Whether one pointer is a prefix of another (`/a` and `/a/b`): their values are not
    /// independent, so combining candidates pointer by pointer may miss a class.
    pub(super) fn nested_pointers(&self) -> Option<(String, String)> {
        let pointers: Vec<&String> = self.by_pointer.keys().collect();
        for outer in &pointers {
            for inner in &pointers {
                if inner.len() > outer.len()
                    && inner.starts_with(outer.as_str())
                    && inner.as_bytes()[outer.len()] == b'/'
                {
                    return Some(((*outer).clone(), (*inner).clone()));
                }
            }
        }
        None
    }
}

/// Candidate elements for a condition on list elements (pointers relative to the element): the
/// element itself (`""`), or an object with one candidate field set.
fn element_candidates(rule: &str, condition: &Condition, fresh: &str) -> Vec<Value> {
    let mut inner = Atoms::new(fresh.to_owned());
    inner.add(rule, condition);
    let mut out = Vec::new();
    for (pointer, atoms) in &inner.by_pointer {
        for candidate in atoms.candidates(Types::ANY, None, fresh) {
            let Some(value) = candidate.value else {
                continue;
            };
            let mut element = Value::Object(serde_json::Map::new());
            if super::calls::set(&mut element, pointer, Some(&value)) {
                out.push(element);
            }
        }
    }
    out
}

fn holds_number(value: &Value) -> bool {
    match value {
        Value::Number(_) => true,
        Value::Array(items) => items.iter().any(holds_number),
        Value::Object(map) => map.values().any(holds_number),
        _ => false,
    }
}

/// A candidate value for a pointer (`None`: the field left out), and whether it stands for a
/// class the analysis must cover (`false`: an extra candidate, tried for a witness only).
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub(super) value: Option<Value>,
    pub(super) required: bool,
}

impl PointerAtoms {
    /// The roots `path_within` conditions name here.
    pub(super) fn roots(&self) -> &[String] {
        &self.roots
    }

    /// Whether an `equals` or `one_of` names a text here.
    pub(super) fn names_text(&self) -> bool {
        self.literals.iter().any(Value::is_string)
    }

    /// Whether a rule here names `value` as a literal (equal as JSON values are: the text of
    /// two equal values differs only for `-0.0` and `0.0`, and then `value` counts as unnamed —
    /// a class kept, never one dropped).
    fn named(&self, value: &Value) -> bool {
        self.literal_texts.contains(&value.to_string())
    }

    /// Whether `value` is a literal an `equals` or `one_of` names here, and nothing else (no root,
    /// no bound): its class is that one value, so a literal the schema refuses is an empty class,
    /// not a gap (a plainly declared field's value is valid or not whatever the others are).
    pub(super) fn only_a_literal(&self, value: &Value) -> bool {
        self.named(value)
            && !value.is_number()
            && !value
                .as_str()
                .is_some_and(|text| self.roots.iter().any(|root| root == text))
    }

    /// One candidate per class of the values of `types` (plus the extra candidates); `fresh`
    /// is a name no policy string holds.
    pub(super) fn candidates(
        &self,
        types: Types,
        enumerated: Option<&[Value]>,
        fresh: &str,
    ) -> Vec<Candidate> {
        let class = |value: Value| Candidate {
            value: Some(value),
            required: true,
        };
        let mut out = Vec::new();
        if types.absent {
            out.push(Candidate {
                value: None,
                required: true,
            });
        }
        if let Some(values) = enumerated {
            // The schema lists every value the field may have: each is its own candidate, and
            // so is its other spelling where a condition reads that otherwise (`2^53` and
            // `2^53.0` are one value to the validator, not to `range`).
            out.extend(values.iter().cloned().map(class));
            out.extend(values.iter().filter_map(spelled_otherwise).map(class));
            return out;
        }
        if types.string {
            out.extend(self.string_classes(fresh).into_iter().map(class));
        }
        if types.number {
            out.extend(self.number_classes(types).into_iter().map(class));
        }
        if types.boolean {
            out.extend([Value::Bool(false), Value::Bool(true)].map(class));
        }
        if types.null {
            out.push(class(Value::Null));
        }
        // "Every other list" and "every other object": the empty one unless a rule names it, then
        // one holding the fresh name (which no rule's literal can equal).
        let named = |value: &Value| self.named(value);
        if types.array {
            out.push(class(Value::Array(Vec::new())));
            if named(&Value::Array(Vec::new())) {
                out.push(class(Value::Array(vec![Value::from(fresh)])));
            }
            out.extend(
                self.literals
                    .iter()
                    .filter(|value| value.is_array())
                    .cloned()
                    .map(class),
            );
        }
        if types.object {
            out.push(class(Value::Object(serde_json::Map::new())));
            if named(&Value::Object(serde_json::Map::new())) {
                let mut other = serde_json::Map::new();
                other.insert(fresh.to_owned(), Value::from(fresh));
                out.push(class(Value::Object(other)));
            }
            out.extend(
                self.literals
                    .iter()
                    .filter(|value| value.is_object())
                    .cloned()
                    .map(class),
            );
        }
        out.extend(self.extra.iter().cloned().map(|value| Candidate {
            value: Some(value),
            required: false,
        }));
        dedupe(out)
    }

    fn string_classes(&self, fresh: &str) -> Vec<Value> {
        let mut out: Vec<Value> = self
            .literals
            .iter()
            .filter(|value| value.is_string())
            .cloned()
            .collect();
        // Equal to no literal, inside no root, and a plain relative path.
        out.push(Value::from(fresh));
        if !self.roots.is_empty() {
            for root in &self.roots {
                out.push(Value::from(root.clone()));
                out.push(Value::from(format!(
                    "{}/{fresh}",
                    root.trim_end_matches('/')
                )));
            }
            out.push(Value::from(format!("/{fresh}")));
            // A spelling no lexical check can judge.
            out.push(Value::from(format!("~/{fresh}")));
        }
        out
    }

    /// One number per class the rules' bounds and literals cut the number line into, within the
    /// schema's own bounds (they are cut points too; nothing outside them is a valid call).
    fn number_classes(&self, types: Types) -> Vec<Value> {
        let integer_only = types.integer_only;
        let mut points: Vec<f64> = self.bounds.iter().filter_map(Number::as_f64).collect();
        points.extend(types.minimum.iter().chain(&types.maximum).map(|(x, _)| *x));
        points.sort_by(f64::total_cmp);
        points.dedup();
        // The rules' own bounds and literals: each a class of its own.
        let mut out: Vec<Value> = self.bounds.iter().cloned().map(Value::Number).collect();
        let number = |x: f64| super::calls::number_value(x).unwrap_or(Value::Null);
        let mut made = Vec::new();
        match (points.first(), points.last()) {
            (Some(&low), Some(&high)) => {
                made.push(number((low - 1.0).floor()));
                made.push(number((high + 1.0).floor()));
                for pair in points.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    let inside = if integer_only {
                        let next = a.floor() + 1.0;
                        (next < b).then_some(next)
                    } else {
                        Some(a + (b - a) / 2.0)
                    };
                    made.extend(inside.map(number));
                }
            }
            _ => made.push(Value::from(0)),
        }
        // A schema bound is a class of its own too (a rule may say `max` where the schema says
        // `maximum`).
        made.extend(
            types
                .minimum
                .iter()
                .chain(&types.maximum)
                .map(|(x, _)| number(*x)),
        );
        // Past 2^53 a number made here is written as a float, which `range` cannot judge; the
        // exact integer there is a class of its own (a bound at 2^53 - 1 and `2^53` itself: an
        // independent attack found the exact integers past such a bound never tried).
        let twins: Vec<Value> = made.iter().filter_map(spelled_otherwise).collect();
        made.extend(twins);
        // A class is dropped only where f64 compares exactly (below 2^53; bounds past it make
        // the analysis incomplete) and the schema's bounds refuse its value: no valid call holds
        // it. Past 2^53 the validator decides.
        out.extend(made);
        out.retain(|value| {
            value
                .as_f64()
                .is_some_and(|x| x.abs() >= EXACT || types.admits(x))
        });
        // Numbers that cannot be compared exactly (they may have been rounded when parsed): a
        // class on each side unless the schema keeps that side below 2^53.
        if types.maximum.is_none_or(|(max, _)| max >= EXACT) {
            out.push(number(1.0e300));
        }
        if types.minimum.is_none_or(|(min, _)| min <= -EXACT) {
            out.push(number(-1.0e300));
        }
        out.retain(|value| !value.is_null());
        out
    }
}

/// `candidates`, each value once (required if any of its copies is), in their first order; found
/// by their JSON text, in one step each.
fn dedupe(candidates: Vec<Candidate>) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::with_capacity(candidates.len());
    let mut seen = std::collections::HashMap::with_capacity(candidates.len());
    for candidate in candidates {
        // Absent and `null` apart: the text of an absent value is no JSON text.
        let text = candidate
            .value
            .as_ref()
            .map_or_else(String::new, Value::to_string);
        match seen.get(&text) {
            Some(&at) => {
                let kept: &mut Candidate = &mut out[at];
                kept.required |= candidate.required;
            }
            None => {
                seen.insert(text, out.len());
                out.push(candidate);
            }
        }
    }
    out
}

/// A string a glob matches: `*` and `**` become the fresh name, `?` one letter, escapes dropped.
fn instantiate_glob(pattern: &str, fresh: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '*' => {
                while chars.as_str().starts_with('*') {
                    chars.next();
                }
                out.push_str(fresh);
            }
            '?' => out.push('z'),
            other => out.push(other),
        }
    }
    out
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}

/// Spellings of a command a prefix rule is about: the prefix itself, with a word after it, its
/// program alone, and an option between the program and the subcommand.
fn command_spellings(prefix: &[String], fresh: &str) -> Vec<Vec<String>> {
    let mut out = vec![prefix.to_vec()];
    let mut longer = prefix.to_vec();
    longer.push(fresh.to_owned());
    out.push(longer);
    if let Some((program, rest)) = prefix.split_first() {
        out.push(vec![program.clone()]);
        if !rest.is_empty() {
            let mut hidden = vec![program.clone(), "-C".to_owned(), ".".to_owned()];
            hidden.extend(rest.iter().cloned());
            out.push(hidden);
        }
    }
    out
}
