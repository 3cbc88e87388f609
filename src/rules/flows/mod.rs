//! Flow rules: what a session (or a principal) already did decides what it may do next.
//!
//! A flow rule judges a call by the calls authorized before it: "after any `private_data` call in
//! this session, `external_egress` tools ask", "no `web_fetch` within an hour after reading
//! `secrets/**`", "`write_file` only for a path read before". Like rate limits, a policy only
//! names the counters ([`RateSlot`]s) a call looks at and the ones it is recorded in; the
//! controller checks and records them in one atomic step of the rate counters' store, so two
//! processes racing on one session never both get past a rule.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Condition;
use super::condition::{CallPaths, Compiled, Pointer, Truth};
use super::groups::ToolPattern;
use crate::decision::{PolicyAction, Reason};
use crate::limits::Per;

mod load;
mod provenance;
mod reading;
mod slots;
mod sources;

pub use provenance::{NamedSource, SourceKind, TokenKind, ValueProvenance, ValueRead, ValueSource};
pub use sources::SourcesConfig;

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
    /// For `ask`: who may answer (as a rule's `approvers`). Together with the approvers of the
    /// rules that asked for the call, if any: every named set must be satisfied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<crate::decision::Approvers>,
    /// Instead of `after` / `unless_after`: the rule applies when a value of the call was seen
    /// where this says (see [`ValueProvenance`] and [`crate::provenance`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<ValueProvenance>,
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
    /// Compare text ignoring case (`"ORD-1"` is `"ord-1"`), and a number as its text (`1` is
    /// `"1"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_insensitive: bool,
    /// Compare text as a person reads it: invisible characters removed, NFKC (fullwidth
    /// `ＯＲＤ-１` is `ORD-1`), case folded, a number as its text — as a limit key's `normalize`
    /// (feature `unicode`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub normalize: bool,
}

/// How a `same` value is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SameText {
    /// As exact JSON values.
    Exact,
    /// As paths.
    Path,
    /// Text case folded, numbers as text.
    Folded,
    /// Text normalized and case folded, numbers as text.
    Normalized,
}

impl SameValue {
    fn compared(&self) -> SameText {
        match (self.as_path, self.normalize, self.case_insensitive) {
            (true, ..) => SameText::Path,
            (false, true, _) => SameText::Normalized,
            (false, false, true) => SameText::Folded,
            (false, false, false) => SameText::Exact,
        }
    }
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
    // The earlier call's argument recorded, and how it is compared.
    same: Option<(Pointer, SameText)>,
    by_principal: bool,
    // `after` histories record calls their condition cannot judge (what restricts must see
    // them); `unless_after` ones do not (what permits must not).
    restricts: bool,
    // The label it looks for, when a result rule gives that label: a labelled result is
    // recorded here as a call of a labelled tool would be.
    result_label: Option<String>,
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
    approvers: Option<Arc<crate::decision::Approvers>>,
}

/// A policy's labels and flow rules.
#[derive(Debug, Default)]
pub(super) struct Flows {
    flows: Vec<Flow>,
    histories: Vec<History>,
    provenance: Vec<provenance::ProvenanceFlow>,
    classes: sources::Classes,
}

impl Flows {
    /// What `tool`'s results count as, for the provenance conditions; `None` when the policy
    /// reads no provenance (no `sources`, no `provenance` condition).
    pub(super) fn result_sources(&self, tool: &str) -> Option<crate::provenance::ResultSources> {
        self.classes.of(tool, !self.provenance.is_empty())
    }
}

/// The key an undeterminable value is recorded under: every `after` check looks at it too, so a
/// spelling no check can judge is never a way around the rule.
const ANY_KEY: &str = "any";
