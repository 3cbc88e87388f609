//! A policy's rate limits, checked at load against the registry and compiled once: which counters
//! a call takes a slot in. Counting is the controller's (see [`crate::limits`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::condition::{self, Pointer, SchemaLookup, check_pointer_syntax};
use super::groups::{ToolPattern, is_pattern};
use super::schema_pointer;
use crate::canonical::{canonical_json, hex_digest};
use crate::decision::{PolicyAction, PolicyDecision, RateSlot, Reason};
use crate::limits::{MAX_CALLS_PER_LIMIT, MAX_KEYS_PER_CALL, RateLimitConfig};
use crate::policy::LoadProblem;
use crate::registry::ToolRegistry;

/// One limit, compiled.
#[derive(Debug)]
struct Limit {
    id: Arc<str>,
    tool: Covers,
    max: u32,
    window_ms: Option<u64>,
    over: PolicyAction,
    reason: Reason,
    // Key pointer tokens (unescaped), and how text keys compare.
    key: Option<(Pointer, KeyText)>,
    // The integer added up instead of counting calls.
    sum: Option<Pointer>,
    policy_digest: Arc<str>,
}

/// Which tools a limit covers: one by its exact name (compared as text, the common case), or a
/// pattern's.
#[derive(Debug)]
enum Covers {
    Exact(Box<str>),
    Pattern(ToolPattern),
}

impl Covers {
    fn matches(&self, tool: &str) -> bool {
        match self {
            Self::Exact(name) => **name == *tool,
            Self::Pattern(pattern) => pattern.matches(tool),
        }
    }
}

/// A policy's limits.
#[derive(Debug, Default)]
pub(super) struct RateLimits(Vec<Limit>);

impl RateLimits {
    /// Checks and compiles `configs`; problems are pushed with their places. `rule_ids` are the
    /// rules' ids, which a limit's id must not repeat (a decision names one or the other).
    pub(super) fn load(
        configs: &[RateLimitConfig],
        registry: &ToolRegistry,
        rule_ids: &BTreeSet<&str>,
        problems: &mut Vec<LoadProblem>,
    ) -> Self {
        let mut seen = BTreeSet::new();
        let mut limits = Vec::new();
        for (index, config) in configs.iter().enumerate() {
            let place = format!("limits[{index}] (id {:?})", config.id);
            let mut problem = |message: String| {
                problems.push(LoadProblem {
                    place: place.clone(),
                    message,
                });
            };
            if let Some(wrong) = super::id_problem(&config.id) {
                problem(wrong.to_owned());
            } else if rule_ids.contains(config.id.as_str()) || !seen.insert(config.id.as_str()) {
                problem("id repeats another limit's or rule's id".to_owned());
            }
            let reason = Reason::new(config.reason.clone());
            if reason.is_err() {
                problem("reason is empty".to_owned());
            }
            if config.sum.is_none() && !(1..=MAX_CALLS_PER_LIMIT).contains(&config.max) {
                problem(format!(
                    "max must be 1 to {MAX_CALLS_PER_LIMIT} (a tool that may never run needs a deny rule)"
                ));
            }
            if config.sum.is_some() && config.max == 0 {
                problem(
                    "max must be at least 1 (a tool that may never run needs a deny rule)"
                        .to_owned(),
                );
            }
            if config.over == PolicyAction::Allow {
                problem("over must be deny or ask".to_owned());
            }
            let (tool, tools): (Covers, Vec<&str>) = if is_pattern(&config.tool) {
                let pattern = ToolPattern::new(&config.tool);
                let tools = pattern.tools(registry);
                (Covers::Pattern(pattern), tools)
            } else {
                let tools = registry
                    .resolve(&config.tool)
                    .map(|_| vec![config.tool.as_str()])
                    .unwrap_or_default();
                (Covers::Exact(config.tool.clone().into_boxed_str()), tools)
            };
            if tools.is_empty() {
                problem(format!(
                    "tool {:?} matches no tool in the registry",
                    config.tool
                ));
            }
            let key = config.key.as_ref().map(|key| {
                if let Err(message) = check_key_pointer(&key.pointer) {
                    problem(message);
                }
                for name in &tools {
                    let schema = registry.resolve(name).map(|tool| &tool.spec().input_schema);
                    let declared =
                        schema.map(|schema| schema_pointer::lookup(schema, &key.pointer));
                    if declared != Some(SchemaLookup::Declared) {
                        problem(format!(
                            "key {:?} names no field of tool {name:?}'s schema",
                            key.pointer
                        ));
                    }
                }
                if let Err(message) = condition::check_normalization_available(key.normalize) {
                    problem(format!("key: {message}"));
                }
                let text = match (key.normalize, key.case_insensitive) {
                    (true, _) => KeyText::Normalized,
                    (false, true) => KeyText::Folded,
                    (false, false) => KeyText::AsSent,
                };
                (Pointer::parse(&key.pointer), text)
            });
            let sum = config.sum.as_ref().map(|pointer| {
                if let Err(message) = check_key_pointer(pointer) {
                    problem(message.replace("key", "sum"));
                }
                for name in &tools {
                    let schema = registry.resolve(name).map(|tool| &tool.spec().input_schema);
                    let declared = schema.map(|schema| schema_pointer::lookup(schema, pointer));
                    if declared != Some(SchemaLookup::Declared) {
                        problem(format!(
                            "sum {pointer:?} names no field of tool {name:?}'s schema"
                        ));
                    }
                }
                Pointer::parse(pointer)
            });
            if let Ok(reason) = reason {
                limits.push(Limit {
                    sum,
                    id: Arc::from(config.id.as_str()),
                    tool,
                    max: config.max,
                    window_ms: config.per.window_ms(),
                    over: config.over,
                    reason,
                    key,
                    policy_digest: Arc::from(""),
                });
            }
        }
        Self(limits)
    }

    /// Sets the digest every denial names: the policy's.
    pub(super) fn with_policy_digest(mut self, digest: &Arc<str>) -> Self {
        for limit in &mut self.0 {
            limit.policy_digest = Arc::clone(digest);
        }
        self
    }

    /// The counters a call to `tool` with `arguments` takes a slot in: per limit covering the
    /// tool, one counter, or one per distinct key.
    pub(super) fn slots(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> Result<Vec<RateSlot>, PolicyDecision> {
        let mut slots = Vec::new();
        for limit in self.0.iter().filter(|limit| limit.tool.matches(tool)) {
            let mut slot = RateSlot::new(
                Arc::clone(&limit.id),
                limit.window_ms,
                limit.max,
                limit.over,
                limit.reason.clone(),
            );
            if let Some(pointer) = &limit.sum {
                // What cannot be added up exactly is denied, never counted as nothing.
                let Some(weight) = pointer.resolve(arguments).and_then(Value::as_u64) else {
                    return Err(limit.cannot_count(format!(
                        "cannot add up the call for limit {:?}: {} is not a whole number of 0 or more",
                        limit.id,
                        pointer.text()
                    )));
                };
                slot = slot
                    .judged(
                        weight,
                        crate::decision::Refuses::Above(u64::from(limit.max)),
                    )
                    .of_kind(crate::decision::SlotKind::Sum);
            }
            let Some((pointer, fold)) = &limit.key else {
                slots.push(slot);
                continue;
            };
            let keys = keys_at(pointer.resolve(arguments), *fold);
            if keys.len() > MAX_KEYS_PER_CALL {
                return Err(limit.cannot_count(format!(
                    "cannot count the call for limit {:?}: more than {MAX_KEYS_PER_CALL} distinct keys at {}",
                    limit.id,
                    pointer.text()
                )));
            }
            slots.extend(keys.into_iter().map(|key| {
                let bucket = format!("{}:{}:{key}", limit.id.len(), limit.id);
                slot.clone().in_bucket(bucket)
            }));
        }
        Ok(slots)
    }
}

impl Limit {
    fn cannot_count(&self, message: String) -> PolicyDecision {
        PolicyDecision::deny(Reason::new(message).unwrap_or_else(|_| self.reason.clone()))
            .with_rule_id(Arc::clone(&self.id))
            .with_policy_digest(Arc::clone(&self.policy_digest))
    }
}

/// How a limit's text keys compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyText {
    AsSent,
    /// Ignoring case.
    Folded,
    /// Invisible characters removed, NFKC, case folded.
    Normalized,
}

/// A key pointer is a pointer as rules write them ([`check_pointer_syntax`]), that picks no `-`
/// element (a list is counted per element already).
fn check_key_pointer(pointer: &str) -> Result<(), String> {
    if pointer.split('/').skip(1).any(|token| token == "-") {
        return Err(format!(
            "key {pointer:?} holds '-': point at the list itself, each element is counted"
        ));
    }
    check_pointer_syntax(pointer, false).map_err(|message| format!("key: {message}"))
}

/// The distinct keys of a call, as hex SHA-256 digests of their canonical JSON (never the value):
/// each element of a list, or the value itself; "none" when the value is missing or an empty list
/// (so leaving the key out is no way around the limit).
fn keys_at(value: Option<&Value>, text: KeyText) -> BTreeSet<String> {
    let mut elements = Vec::new();
    if let Some(value) = value {
        leaves(value, &mut elements);
    }
    if elements.is_empty() {
        return BTreeSet::from(["none".to_owned()]);
    }
    let mut keys = BTreeSet::new();
    for element in elements {
        let text = match text {
            KeyText::AsSent => canonical_json(element),
            KeyText::Folded => canonical_json(&folded(element)),
            KeyText::Normalized => canonical_json(&condition::compared_value(element, true)),
        };
        keys.insert(hex_digest(&Sha256::digest(text.as_bytes())));
        // One past the most that can be counted is enough to refuse the call; stop hashing.
        if keys.len() > MAX_KEYS_PER_CALL {
            break;
        }
    }
    keys
}

/// The keys in `value`: a list counts by its elements, nested lists by theirs (`[["bob"]]` is
/// `bob`, so nesting is no way to a fresh count); `null` is no key (as a missing value).
fn leaves<'v>(value: &'v Value, out: &mut Vec<&'v Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| leaves(item, out)),
        Value::Null => {}
        other => out.push(other),
    }
}

/// `value` with every text in it folded, object keys included.
pub(super) fn folded(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(fold(text)),
        Value::Array(items) => Value::Array(items.iter().map(folded).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (fold(key), folded(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Text folded for comparison ignoring case ([`crate::text::fold_case`]). No normalization form
/// is applied here: composed and decomposed spellings of one letter count apart unless the key
/// asks for [`normalize`](crate::limits::LimitKey::normalize).
fn fold(text: &str) -> String {
    crate::text::fold_case(text)
}
