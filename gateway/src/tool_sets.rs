//! Named tool sets (`[tool_sets.NAME]`): a subset of the served tools, served at
//! `/sets/NAME/mcp` as a server of its own — one gateway, several "virtual servers" — optionally
//! with a policy layer of its own.
//!
//! A call through a set is made by its caller as a member of the group `toolset:NAME` (a group
//! no client or token may claim: the prefix is reserved). The set is a layer in the one policy
//! stack, so everything the gateway does for a call — lists per caller, approvals, the re-check
//! after approval, audit, limits — holds for it unchanged:
//!
//! # Guarantees
//!
//! - Through a set, a tool outside it is denied (and so not listed, and called as a tool that
//!   does not exist); the set's own layer, if any, judges the calls through the set and no other.
//! - The set's layer only adds: the main layers judge every call through a set as they judge it
//!   elsewhere, and the stack's deny-wins order means a set can tighten what the main layers
//!   allow, and allow what they have no rule for, but never loosen one of their deny or ask
//!   decisions, nor waive their four eyes (`allow_self` must hold in every asking layer). A
//!   set's layer does not classify where results come from (its `sources` are ignored, with a
//!   warning): that is asked for every caller at once. Its provenance rules still read results,
//!   recorded as the main layers classify them (untrusted where none does).
//! - A set is served on its own path with its own sessions: a session opened at `/mcp` is
//!   unknown at `/sets/NAME/mcp`, and the reverse.

use std::path::PathBuf;
use std::sync::Arc;

use toolgate::decision::RateSlot;
use toolgate::policy::PolicyMismatch;
use toolgate::rules::ToolNamePattern;
use toolgate::{
    Policy, PolicyDecision, PreparedToolCall, Principal, Reason, ToolRegistry, ToolResult,
};

/// The group a call through a set is made in: this prefix and the set's name.
pub const GROUP_PREFIX: &str = "toolset:";

/// One `[tool_sets.NAME]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSetConfig {
    /// Its name: the path segment and the group's suffix.
    pub name: String,
    /// The served names it holds, in the rule language's tool patterns
    /// ([`ToolNamePattern`]: `*`, `?`, a gate only by a pattern ending with its method).
    pub tools: Vec<String>,
    /// Its own policy layer's file, if any.
    pub policy: Option<PathBuf>,
}

impl ToolSetConfig {
    /// The group its calls are made in.
    pub fn group(&self) -> String {
        format!("{GROUP_PREFIX}{}", self.name)
    }

    /// Where it is served on the MCP listener.
    pub fn path(&self) -> String {
        format!("/sets/{}/mcp", self.name)
    }

    /// Its patterns, read.
    pub fn patterns(&self) -> Patterns {
        Patterns(
            self.tools
                .iter()
                .map(|tool| ToolNamePattern::new(tool))
                .collect(),
        )
    }
}

/// A set's tool patterns, read once.
#[derive(Debug)]
pub struct Patterns(Vec<ToolNamePattern>);

impl Patterns {
    /// Whether the served tool `name` is in the set.
    pub fn hold(&self, name: &str) -> bool {
        self.0.iter().any(|pattern| pattern.holds(name))
    }
}

/// The set's layer in the stack: no opinion on calls made outside the set; through it, a deny
/// for a tool outside it, else its own layer's decision (or no opinion without one).
pub struct ToolSetLayer {
    set: Arc<ToolSetConfig>,
    patterns: Patterns,
    group: String,
    inner: Option<Arc<dyn Policy>>,
    not_through: Reason,
    outside: Reason,
}

impl std::fmt::Debug for ToolSetLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSetLayer")
            .field("set", &self.set.name)
            .field("own_layer", &self.inner.is_some())
            .finish()
    }
}

impl ToolSetLayer {
    /// The layer of `set`, with its own policy `inner` if it has one.
    pub fn new(set: Arc<ToolSetConfig>, inner: Option<Arc<dyn Policy>>) -> Self {
        let group = set.group();
        let not_through = reason(format!("not a call through tool set {}", set.name));
        let outside = reason(format!(
            "tool set {} does not hold this tool: call it through a set that does, or at /mcp",
            set.name
        ));
        Self {
            patterns: set.patterns(),
            set,
            group,
            inner,
            not_through,
            outside,
        }
    }

    fn member(&self, caller: Option<&Principal>) -> bool {
        caller.is_some_and(|principal| principal.in_group(&self.group))
    }
}

fn reason(text: String) -> Reason {
    Reason::new(text).unwrap_or_else(|_| Reason::from_static("tool set"))
}

impl Policy for ToolSetLayer {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        if !self.member(call.call().principal.as_deref()) {
            return PolicyDecision::fallback_deny(self.not_through.clone());
        }
        if !self.patterns.hold(call.tool_name()) {
            return PolicyDecision::deny(self.outside.clone());
        }
        match &self.inner {
            Some(inner) => inner.decide(call),
            None => PolicyDecision::fallback_deny(self.not_through.clone()),
        }
    }

    fn check_registry(&self, registry: &ToolRegistry) -> Result<(), PolicyMismatch> {
        self.inner
            .as_ref()
            .map_or(Ok(()), |inner| inner.check_registry(registry))
    }

    fn denies_every_call(&self, tool_name: &str) -> bool {
        // Its only decisions other than a fallback are its own layer's and its denies.
        self.inner
            .as_ref()
            .is_none_or(|inner| inner.denies_every_call(tool_name))
    }

    fn denies_every_call_for(&self, tool_name: &str, caller: Option<&Principal>) -> bool {
        !self.member(caller)
            || !self.patterns.hold(tool_name)
            || self
                .inner
                .as_ref()
                .is_none_or(|inner| inner.denies_every_call_for(tool_name, caller))
    }

    fn always_denies_for(&self, tool_name: &str, caller: Option<&Principal>) -> bool {
        self.member(caller)
            && (!self.patterns.hold(tool_name)
                || self
                    .inner
                    .as_ref()
                    .is_some_and(|inner| inner.always_denies_for(tool_name, caller)))
    }

    fn rate_slots(&self, call: &PreparedToolCall) -> Result<Vec<RateSlot>, PolicyDecision> {
        match &self.inner {
            Some(inner)
                if self.member(call.call().principal.as_deref())
                    && self.patterns.hold(call.tool_name()) =>
            {
                inner.rate_slots(call)
            }
            _ => Ok(Vec::new()),
        }
    }

    /// What the set's own layer reads of results, without its classification: where results
    /// come from is asked with no caller, so a set's own `sources` would classify results for
    /// every caller, at `/mcp` too — a set's file could then vouch for what the main layers
    /// treat as untrusted. So the main layers alone classify, but a set whose rules read
    /// provenance still has results recorded (it had none when the main layers read none, and
    /// its rules never held), under the named sources its rules read — facts of which tool
    /// returned a value, which vouch for nothing. A set's `lookups` count as in any layer: only
    /// if every layer reading provenance lists the directory, and only for a tool the main
    /// layers trust.
    fn result_sources(&self, tool_name: &str) -> Option<toolgate::provenance::ResultSources> {
        let mut sources = self.inner.as_ref()?.result_sources(tool_name)?;
        sources.trust = toolgate::provenance::Trust::Untrusted;
        sources.classified = false;
        Some(sources)
    }

    fn judges_results(&self, tool_name: &str) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|inner| inner.judges_results(tool_name))
    }

    fn judge_result(
        &self,
        tool_name: &str,
        principal: Option<&Principal>,
        result: &mut ToolResult,
    ) -> Vec<RateSlot> {
        match &self.inner {
            Some(inner) if self.member(principal) && self.patterns.hold(tool_name) => {
                inner.judge_result(tool_name, principal, result)
            }
            _ => Vec::new(),
        }
    }
}

/// `principal` calling through `set`: the same id, its groups and the set's group.
pub fn through(principal: &Principal, set: &ToolSetConfig) -> Principal {
    let mut groups = principal.groups.clone();
    groups.push(set.group());
    Principal::new(principal.id.clone(), groups)
}

#[cfg(test)]
mod tests;
