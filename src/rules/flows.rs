//! Flow rules: what a session (or a principal) already did decides what it may do next.
//!
//! A flow rule judges a call by the calls authorized before it: "after any `private_data` call in
//! this session, `external_egress` tools ask", "no `web_fetch` within an hour after reading
//! `secrets/**`", "`write_file` only for a path read before". Like rate limits, a policy only
//! names the counters ([`RateSlot`]s) a call looks at and the ones it is recorded in; the
//! controller checks and records them in one atomic step of the rate counters' store, so two
//! processes racing on one session never both get past a rule.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::condition::{self, CallPaths, Compiled, PathSettings, Pointer, Scope, Truth};
use super::groups::{ToolPattern, is_pattern};
use super::{Condition, schema_pointer};
use crate::canonical::{canonical_json, hex_digest};
use crate::contract::Principal;
use crate::limits::{Per, Refuses};
use crate::policy::{LoadProblem, PolicyAction, RateSlot, Reason};
use crate::registry::ToolRegistry;

/// One flow rule as written: for the calls it covers (a tool or pattern, or a label), take
/// `action` when `after` holds, or unless `unless_after` holds.
///
/// # Examples
///
/// ```
/// use toolgate::rules::FlowConfig;
///
/// let rule: FlowConfig = serde_json::from_str(r#"{
///     "id": "egress-after-private", "label": "external_egress", "action": "ask",
///     "reason": "this session read private data",
///     "after": {"label": "private_data", "within": "session"}}"#)?;
/// assert_eq!(rule.label.as_deref(), Some("external_egress"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct FlowConfig {
    /// A unique id (among rules and limits too), named by every decision it takes.
    pub id: String,
    /// The calls it judges: a tool's exact name or a pattern (exactly one of `tool` and `label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The calls it judges: the tools with this label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// A condition on this call's arguments; absent: every call it covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Condition>,
    /// The rule applies when such calls were authorized before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<EarlierCalls>,
    /// The rule applies unless such calls were authorized before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unless_after: Option<EarlierCalls>,
    /// `deny` or `ask`: what the past can do is restrict, never grant.
    pub action: PolicyAction,
    /// Why, shown to the model or the person asked; not empty.
    pub reason: String,
}

/// Earlier calls a flow rule looks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EarlierCalls {
    /// Calls to this tool or pattern (exactly one of `tool` and `label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Calls to tools with this label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Only earlier calls whose arguments met this condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Condition>,
    /// How far back: a minute, an hour, a day, or the whole session.
    pub within: Per,
    /// Only earlier calls whose argument at `earlier` equals this call's at `now`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same: Option<SameValue>,
    /// Whose calls: the session's (default) or the calling principal's, across sessions.
    #[serde(default, skip_serializing_if = "FlowScope::is_session")]
    pub by: FlowScope,
}

/// An argument an earlier call shares with this one: `/path` read before is `/path` written now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SameValue {
    /// The pointer in the earlier call.
    pub earlier: String,
    /// The pointer in this call.
    pub now: String,
    /// Compare the two as paths, normalized as `path_within` normalizes them (so `/srv/./a` is
    /// `/srv/a`); otherwise as exact JSON values.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub as_path: bool,
}

/// Whose earlier calls a flow rule looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowScope {
    /// This session's: the counters' (see [`Per::Session`]).
    #[default]
    Session,
    /// The principal's, in every session sharing the store; a call made for no principal is
    /// counted as one more principal.
    Principal,
}

impl FlowScope {
    fn is_session(&self) -> bool {
        *self == Self::Session
    }
}

/// Which tools something covers, expanded at load; a pattern also covers tools registered later.
#[derive(Debug)]
enum Covers {
    Tools(Vec<String>),
    Patterns(Vec<ToolPattern>),
}

impl Covers {
    fn matches(&self, tool: &str) -> bool {
        match self {
            Self::Tools(names) => names.iter().any(|name| name == tool),
            Self::Patterns(patterns) => patterns.iter().any(|pattern| pattern.matches(tool)),
        }
    }
}

/// A condition compiled for each tool it may judge; a tool registered after load has none and
/// its calls cannot be judged (restrictive uses treat that as a match).
#[derive(Debug, Default)]
struct PerTool(HashMap<String, Compiled>);

impl PerTool {
    /// `Some(holds)`, or `None` when the call cannot be judged.
    fn truth<'a>(
        &'a self,
        tool: &str,
        arguments: &'a Value,
        paths: &mut CallPaths<'a>,
    ) -> Option<bool> {
        match self.0.get(tool)?.evaluate(arguments, paths) {
            Truth::Yes => Some(true),
            Truth::No => Some(false),
            Truth::Unknown(_) => None,
        }
    }
}

/// Earlier calls, compiled: what is recorded of a call, and where.
#[derive(Debug)]
struct History {
    // The counter's name: a digest of what it records, so a reloaded policy with the same
    // history finds the calls recorded under the old one.
    bucket: String,
    covers: Covers,
    when: Option<PerTool>,
    // How long records are kept: the longest window of the rules looking at it.
    window_ms: Option<u64>,
    // The earlier call's argument recorded, and whether it is compared as a path.
    same: Option<(Pointer, bool)>,
    by_principal: bool,
    // `after` histories record calls their condition cannot judge (what restricts must see
    // them); `unless_after` ones do not (what permits must not).
    restricts: bool,
}

#[derive(Debug)]
struct Flow {
    id: Arc<str>,
    covers: Covers,
    when: Option<PerTool>,
    // This call's argument matched against the history's `same`.
    now: Option<Pointer>,
    window_ms: Option<u64>,
    history: usize,
    action: PolicyAction,
    reason: Reason,
}

/// A policy's labels and flow rules.
#[derive(Debug, Default)]
pub(super) struct Flows {
    flows: Vec<Flow>,
    histories: Vec<History>,
}

/// The key an undeterminable value is recorded under: every `after` check looks at it too, so a
/// spelling no check can judge is never a way around the rule.
const ANY_KEY: &str = "any";

impl Flows {
    /// Checks and compiles the labels and flow rules; problems are pushed with their places.
    pub(super) fn load(
        labels: &BTreeMap<String, Vec<String>>,
        configs: &[FlowConfig],
        registry: &ToolRegistry,
        paths: &PathSettings,
        normalize_text: bool,
        taken_ids: &std::collections::BTreeSet<&str>,
        problems: &mut Vec<LoadProblem>,
    ) -> Self {
        let mut push = |place: String, message: String| {
            problems.push(LoadProblem { place, message });
        };
        for (label, patterns) in labels {
            let place = format!("labels.{label}");
            if label.trim().is_empty() || patterns.is_empty() {
                push(
                    place.clone(),
                    "a label has a name and at least one tool".to_owned(),
                );
            }
            if covering(patterns, registry).is_empty() {
                push(place, "labels no tool in the registry".to_owned());
            }
        }
        let mut out = Self::default();
        let mut ids = std::collections::BTreeSet::new();
        for (index, config) in configs.iter().enumerate() {
            let place = format!("flows[{index}] (id {:?})", config.id);
            if config.id.trim().is_empty() {
                push(place.clone(), "id is empty".to_owned());
            } else if taken_ids.contains(config.id.as_str()) || !ids.insert(config.id.as_str()) {
                push(
                    place.clone(),
                    "id repeats another flow's, rule's or limit's id".to_owned(),
                );
            }
            let reason = Reason::new(config.reason.clone());
            if reason.is_err() {
                push(place.clone(), "reason is empty".to_owned());
            }
            if config.action == PolicyAction::Allow {
                push(
                    place.clone(),
                    "action must be deny or ask: what a session did can restrict a call, never allow one"
                        .to_owned(),
                );
            }
            let (earlier, restricts, key) = match (&config.after, &config.unless_after) {
                (Some(earlier), None) => (earlier, true, "after"),
                (None, Some(earlier)) => (earlier, false, "unless_after"),
                _ => {
                    push(
                        place,
                        "needs exactly one of after and unless_after".to_owned(),
                    );
                    continue;
                }
            };
            let context = Context {
                registry,
                paths,
                normalize_text,
            };
            let target = context.target(
                &place,
                config.tool.as_deref(),
                config.label.as_deref(),
                labels,
                &mut push,
            );
            let source = context.target(
                &format!("{place}.{key}"),
                earlier.tool.as_deref(),
                earlier.label.as_deref(),
                labels,
                &mut push,
            );
            let (Some((covers, tools)), Some((source_covers, source_tools))) = (target, source)
            else {
                continue;
            };
            let when = config.when.as_ref().map(|when| {
                context.compile(when, &format!("{place}.when"), &tools, true, &mut push)
            });
            let history_when = earlier.when.as_ref().map(|when| {
                context.compile(
                    when,
                    &format!("{place}.{key}.when"),
                    &source_tools,
                    restricts,
                    &mut push,
                )
            });
            let same = earlier.same.as_ref().map(|same| {
                for (pointer, tools, side) in [
                    (&same.earlier, &source_tools, "earlier"),
                    (&same.now, &tools, "now"),
                ] {
                    for tool in tools {
                        let schema = registry.resolve(tool).map(|t| &t.spec().input_schema);
                        if schema.map(|s| schema_pointer::lookup(s, pointer))
                            != Some(condition::SchemaLookup::Declared)
                        {
                            push(
                                format!("{place}.{key}.same.{side}"),
                                format!("{pointer:?} names no field of tool {tool:?}'s schema"),
                            );
                        }
                    }
                }
                (
                    Pointer::parse(&same.earlier),
                    Pointer::parse(&same.now),
                    same.as_path,
                )
            });
            let Ok(reason) = reason else { continue };
            // What the history records, as written: not the tools a label covers now, nor the
            // window (a flow rule's own), so a reload that adds a tool to a label or lengthens a
            // window keeps the calls recorded so far.
            let identity = serde_json::json!({
                "restricts": restricts,
                "tool": earlier.tool, "label": earlier.label,
                "when": earlier.when,
                "same": earlier.same.as_ref().map(|same| (&same.earlier, same.as_path)),
                "by": earlier.by,
            });
            let bucket = format!(
                "flow:{}",
                hex_digest(&Sha256::digest(canonical_json(&identity).as_bytes()))
            );
            let (history_same, flow_now) = match same {
                Some((earlier, now, as_path)) => (Some((earlier, as_path)), Some(now)),
                None => (None, None),
            };
            let window_ms = earlier.within.window_ms();
            let history = match out.histories.iter().position(|h| h.bucket == bucket) {
                Some(found) => {
                    // Kept for the longest window of the rules looking at it.
                    let kept = &mut out.histories[found].window_ms;
                    *kept = kept.zip(window_ms).map(|(a, b)| a.max(b));
                    found
                }
                None => {
                    out.histories.push(History {
                        bucket,
                        covers: source_covers,
                        when: history_when,
                        window_ms,
                        same: history_same,
                        by_principal: earlier.by == FlowScope::Principal,
                        restricts,
                    });
                    out.histories.len() - 1
                }
            };
            out.flows.push(Flow {
                id: Arc::from(config.id.as_str()),
                covers,
                when,
                now: flow_now,
                window_ms,
                history,
                action: config.action,
                reason,
            });
        }
        out
    }

    /// The counters a call looks at (flow rules covering it) and is recorded in (histories
    /// observing it). A key that cannot be judged where a rule must see every spelling denies
    /// (or asks), naming the rule.
    pub(super) fn slots(
        &self,
        tool: &str,
        caller: Option<&Principal>,
        arguments: &Value,
        paths: &PathSettings,
    ) -> Vec<RateSlot> {
        let mut slots = Vec::new();
        let mut call_paths = CallPaths::new(paths);
        for flow in self.flows.iter().filter(|flow| flow.covers.matches(tool)) {
            // Restrictive: a call it cannot judge is judged by it.
            let applies = flow
                .when
                .as_ref()
                .is_none_or(|when| when.truth(tool, arguments, &mut call_paths) != Some(false));
            if !applies {
                continue;
            }
            let history = &self.histories[flow.history];
            let base = history.bucket_for(caller);
            let slot = |bucket: String, refuses| {
                let slot = RateSlot::new(
                    Arc::clone(&flow.id),
                    flow.window_ms,
                    0,
                    flow.action,
                    flow.reason.clone(),
                )
                .in_bucket(bucket)
                .judged(0, refuses)
                .of_flow();
                if history.by_principal {
                    slot.across_sessions()
                } else {
                    slot
                }
            };
            let refuses = if history.restricts {
                Refuses::AnyCounted
            } else {
                Refuses::NothingCounted
            };
            let (Some(now), Some((_, as_path))) = (&flow.now, &history.same) else {
                slots.push(slot(base, refuses));
                continue;
            };
            match keys(now.resolve(arguments), *as_path, paths) {
                // Each element of a list is matched on its own, as a limit's keys are: `after`
                // refuses if any was seen, `unless_after` unless every one was.
                Some(keys) => {
                    for key in keys {
                        slots.push(slot(format!("{base}:{key}"), refuses));
                    }
                    if history.restricts {
                        slots.push(slot(format!("{base}:{ANY_KEY}"), refuses));
                    }
                }
                // What cannot be matched takes the rule's action — as a counter that always
                // refuses, so every other limit and flow rule still judges the call.
                None => slots.push(slot(format!("{base}:unjudged"), Refuses::Always)),
            }
        }
        for history in self
            .histories
            .iter()
            .filter(|history| history.covers.matches(tool))
        {
            let recorded = history.when.as_ref().is_none_or(|when| {
                when.truth(tool, arguments, &mut call_paths)
                    .unwrap_or(history.restricts)
            });
            if !recorded {
                continue;
            }
            let base = history.bucket_for(caller);
            let buckets = match &history.same {
                None => vec![base],
                Some((earlier, as_path)) => match keys(earlier.resolve(arguments), *as_path, paths)
                {
                    Some(keys) => keys
                        .into_iter()
                        .map(|key| format!("{base}:{key}"))
                        .collect(),
                    None if history.restricts => vec![format!("{base}:{ANY_KEY}")],
                    None => continue,
                },
            };
            for bucket in buckets {
                let slot = RateSlot::new(
                    "flow-record",
                    history.window_ms,
                    0,
                    PolicyAction::Deny,
                    Reason::from_static("recorded for a flow rule"),
                )
                .in_bucket(bucket)
                .judged(1, Refuses::Never)
                .of_flow()
                // Whether such a call ran is all a flow rule asks: the latest one is kept.
                .replacing();
                slots.push(if history.by_principal {
                    slot.across_sessions()
                } else {
                    slot
                });
            }
        }
        slots
    }
}

impl History {
    fn bucket_for(&self, caller: Option<&Principal>) -> String {
        if !self.by_principal {
            return self.bucket.clone();
        }
        let who = caller.map_or_else(
            || "null".to_owned(),
            |p| canonical_json(&Value::from(p.id.as_str())),
        );
        format!(
            "{}:p:{}",
            self.bucket,
            hex_digest(&Sha256::digest(who.as_bytes()))
        )
    }
}

/// The digests a value is matched by (never the value), an element of a list at a time; `None`
/// when it cannot be judged (a path spelling no lexical check can read, a non-string compared as a
/// path, more elements than a call may count).
fn keys(value: Option<&Value>, as_path: bool, paths: &PathSettings) -> Option<Vec<String>> {
    let mut elements = Vec::new();
    if let Some(value) = value {
        leaves(value, &mut elements);
    }
    if elements.is_empty() {
        return Some(vec![digest("none")]);
    }
    // More elements than a call's keys may have: not matched one by one (see ANY_KEY).
    if elements.len() > crate::limits::MAX_KEYS_PER_CALL {
        return None;
    }
    let mut keys = Vec::with_capacity(elements.len());
    for element in elements {
        let text = match (element, as_path) {
            (Value::String(path), true) => format!("path:/{}", paths.components(path)?.join("/")),
            (_, true) => return None,
            (value, false) => canonical_json(value),
        };
        let key = digest(&text);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    Some(keys)
}

fn digest(text: &str) -> String {
    hex_digest(&Sha256::digest(text.as_bytes()))
}

/// The elements a value is matched by: each of a list's (nested lists by theirs), else the
/// value; `null` is no element.
fn leaves<'v>(value: &'v Value, out: &mut Vec<&'v Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| leaves(item, out)),
        Value::Null => {}
        other => out.push(other),
    }
}

/// The registry's tools matching any of `patterns` (exact names or patterns).
fn covering<'r>(patterns: &[String], registry: &'r ToolRegistry) -> Vec<&'r str> {
    registry
        .specs()
        .map(|spec| spec.name.as_str())
        .filter(|name| {
            patterns.iter().any(|pattern| {
                if is_pattern(pattern) {
                    ToolPattern::new(pattern).matches(name)
                } else {
                    pattern == name
                }
            })
        })
        .collect()
}

/// What a flow's parts are compiled against.
struct Context<'a> {
    registry: &'a ToolRegistry,
    paths: &'a PathSettings,
    normalize_text: bool,
}

impl Context<'_> {
    /// The tools a `tool` or `label` covers, and their names now.
    fn target(
        &self,
        place: &str,
        tool: Option<&str>,
        label: Option<&str>,
        labels: &BTreeMap<String, Vec<String>>,
        push: &mut dyn FnMut(String, String),
    ) -> Option<(Covers, Vec<String>)> {
        let patterns: Vec<String> = match (tool, label) {
            (Some(tool), None) => vec![tool.to_owned()],
            (None, Some(label)) => match labels.get(label) {
                Some(patterns) => patterns.clone(),
                None => {
                    push(
                        place.to_owned(),
                        format!("label {label:?} is not defined in labels"),
                    );
                    return None;
                }
            },
            _ => {
                push(
                    place.to_owned(),
                    "needs exactly one of tool and label".to_owned(),
                );
                return None;
            }
        };
        let tools: Vec<String> = covering(&patterns, self.registry)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if tools.is_empty() {
            push(
                place.to_owned(),
                format!("{patterns:?} covers no tool in the registry"),
            );
            return None;
        }
        let covers = if patterns.iter().any(|pattern| is_pattern(pattern)) {
            Covers::Patterns(
                patterns
                    .iter()
                    .map(|pattern| ToolPattern::new(pattern))
                    .collect(),
            )
        } else {
            Covers::Tools(patterns)
        };
        Some((covers, tools))
    }

    /// `condition` compiled for each of `tools`.
    fn compile(
        &self,
        condition: &Condition,
        place: &str,
        tools: &[String],
        restrictive: bool,
        push: &mut dyn FnMut(String, String),
    ) -> PerTool {
        let mut out = PerTool::default();
        for tool in tools {
            let Some(definition) = self.registry.resolve(tool) else {
                continue;
            };
            let schema = &definition.spec().input_schema;
            let mut path_fields = std::collections::HashSet::new();
            condition::path_pointers(condition, "", &mut path_fields);
            let scope = Scope {
                lookup: &|pointer| schema_pointer::lookup(schema, pointer),
                paths: self.paths,
                path_fields: &path_fields,
                restrictive,
                base: String::new(),
                normalize_text: self.normalize_text,
            };
            let mut problems = Vec::new();
            match condition::compile(condition, place, &scope, &mut problems) {
                Some(compiled) => {
                    out.0.insert(tool.clone(), compiled);
                }
                None => {
                    for (where_, message) in problems {
                        push(format!("{where_} on tool {tool:?}"), message);
                    }
                }
            }
        }
        out
    }
}
