//! Policies: allow, ask or deny a prepared call.

mod async_check;
mod layers;
mod shadow;
mod tool_policy;

use std::fmt;

pub use async_check::AsyncPolicy;
pub(crate) use async_check::{AsyncCheck, DrivenCheck};
pub use layers::{LayerError, Layers};
pub use shadow::{DecisionKey, Shadow, ShadowReport};
pub use tool_policy::{PolicyError, ToolPolicy};

// The vocabulary moved to `crate::decision`; these paths keep naming it until the next release.
#[doc(hidden)]
pub use crate::decision::{
    ApproverRefusal, Approvers, EmptyReason, PolicyAction, PolicyDecision, RateSlot, Reason,
    SlotKind,
};

use crate::registry::ToolRegistry;
use crate::runtime::PreparedToolCall;

/// Decides what happens to a prepared call. Implement it to write your own policy.
///
/// # Guarantees
///
/// A policy returns a [`PolicyDecision`], nothing more: it sees the call by shared reference and
/// cannot build an [`Authorized`](crate::Authorized) (G2). A `decide` that tries to return one
/// does not match the trait (`ui-tests/policy_mints_authorized.rs`). Closures
/// `Fn(&PreparedToolCall) -> PolicyDecision + Send + Sync` are policies.
///
/// # Examples
///
/// ```
/// use toolgate::{Policy, PolicyDecision, PreparedToolCall, Reason};
///
/// struct ReadOnly;
/// impl Policy for ReadOnly {
///     fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
///         if call.tool_name().starts_with("read_") {
///             PolicyDecision::allow(Reason::from_static("read-only tool"))
///         } else {
///             PolicyDecision::deny(Reason::from_static("only read-only tools may run"))
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a toolgate policy",
    label = "a policy must implement `toolgate::Policy`",
    note = "implement `Policy::decide`, or pass a closure `Fn(&PreparedToolCall) -> PolicyDecision + Send + Sync`"
)]
pub trait Policy: Send + Sync {
    /// The decision for `call`.
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision;

    /// Whether this policy means over `registry` what it was written to mean. The controller asks
    /// whenever the registry or the policy changes, and never puts a pair in force that fails it.
    /// The default accepts every registry: right for policies that judge tool names only (an
    /// unknown tool never prepares). A policy that judges argument fields must check that they
    /// still exist ([`RulePolicy`](crate::RulePolicy) loads itself again).
    ///
    /// # Errors
    ///
    /// [`PolicyMismatch`] listing what no longer fits.
    fn check_registry(&self, registry: &ToolRegistry) -> Result<(), PolicyMismatch> {
        let _ = registry;
        Ok(())
    }

    /// `true` only if every call to `tool_name` is denied, whatever its arguments — such a tool
    /// can be left out of what the model is shown. The default, `false`, is always safe: it
    /// only keeps a tool listed, never lets a call run.
    fn denies_every_call(&self, tool_name: &str) -> bool {
        let _ = tool_name;
        false
    }

    /// Whether this policy denies every call of `tool_name` made for `caller`, whatever its
    /// arguments: a tool host lists a caller only the tools some call of theirs could pass (rules
    /// for other callers never apply to them). It must hold only when every such call is denied.
    /// The default is [`denies_every_call`](Self::denies_every_call), which holds for no caller
    /// where it does not hold for all.
    fn denies_every_call_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        let _ = caller;
        self.denies_every_call(tool_name)
    }

    /// Whether this policy takes a deny decision of its own — not its fallback — on every call of
    /// `tool_name` made for `caller`: a stack of [`Layers`] then denies them whatever the other
    /// layers say. It must hold only when every such call is denied by a non-fallback decision.
    /// The default is `false`.
    fn always_denies_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        let _ = (tool_name, caller);
        false
    }

    /// The rate-limit counters `call` takes a slot in if it runs (see
    /// [`limits`](crate::limits)). Naming them counts nothing: the
    /// [`ToolController`](crate::ToolController) takes the slots once, when it authorizes the
    /// call, so a policy may be asked about a call any number of times. Outside the controller
    /// nothing counts, so [`Authorized::by_policy`](crate::Authorized::by_policy) and
    /// [`by_approval`](crate::Authorized::by_approval) deny a call that takes a slot (fail
    /// closed). The default names none.
    ///
    /// # Errors
    ///
    /// A denial when the call cannot be counted (its key cannot be read, it has too many keys);
    /// the controller denies the call with it (fail closed).
    fn rate_slots(&self, call: &PreparedToolCall) -> Result<Vec<RateSlot>, PolicyDecision> {
        let _ = call;
        Ok(Vec::new())
    }

    /// What `tool_name`'s results count as for provenance (its trust class and the named sources
    /// covering it), or `None` (the default) when the policy reads no provenance and results
    /// need not be recorded (see [`crate::provenance`]).
    fn result_sources(&self, tool_name: &str) -> Option<crate::provenance::ResultSources> {
        let _ = tool_name;
        None
    }

    /// Whether [`judge_result`](Self::judge_result) has anything to judge of `tool_name`'s
    /// results (a result rule covers it); `false` (the default) spares the controller the work.
    fn judges_results(&self, tool_name: &str) -> bool {
        let _ = tool_name;
        false
    }

    /// Judges `result` of `tool_name`, returned for `principal`, before the model sees it: the
    /// policy's result rules withhold it or redact it in place, and the records of the labels
    /// they give are returned for the controller to take (a label is recorded for the flow rules
    /// that look for it, as a call of a labelled tool is). The default changes nothing.
    fn judge_result(
        &self,
        tool_name: &str,
        principal: Option<&crate::Principal>,
        result: &mut crate::ToolResult,
    ) -> Vec<RateSlot> {
        let _ = (tool_name, principal, result);
        Vec::new()
    }

    /// Crate-internal, and cannot be overridden or called outside toolgate: its argument's type
    /// cannot be named there. `Some` only for a [`ToolPolicy`] (or an `Arc` of one), whose
    /// decision depends on the tool name alone and which names no rate limits, so the controller
    /// may decide its calls from a table built once per registry. Every other policy, including
    /// each one written outside this crate, gets the default `None` and is asked through
    /// [`decide`](Self::decide) and [`rate_slots`](Self::rate_slots) on every call.
    #[doc(hidden)]
    fn by_name_only(&self, sealed: sealed::Token) -> Option<&ToolPolicy> {
        let _ = sealed;
        None
    }
}

/// Keeps [`Policy::by_name_only`] to this crate: `Token` is public (it appears in a public
/// method's signature) but lives in a private module, so no other crate can name it, and its
/// private field means no other crate can build one.
pub(crate) mod sealed {
    /// Proof that the caller is this crate.
    #[derive(Debug, Clone, Copy)]
    pub struct Token(());

    impl Token {
        pub(crate) const fn new() -> Self {
            Self(())
        }
    }
}

/// A shared policy is the policy: deciding, checking the registry and naming rate limits all go
/// through, so a `RulePolicy` behind an `Arc` still refuses tools it does not fit.
impl<P: Policy + ?Sized> Policy for std::sync::Arc<P> {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        (**self).decide(call)
    }

    fn check_registry(&self, registry: &ToolRegistry) -> Result<(), PolicyMismatch> {
        (**self).check_registry(registry)
    }

    fn denies_every_call(&self, tool_name: &str) -> bool {
        (**self).denies_every_call(tool_name)
    }

    fn denies_every_call_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        (**self).denies_every_call_for(tool_name, caller)
    }

    fn always_denies_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        (**self).always_denies_for(tool_name, caller)
    }

    fn rate_slots(&self, call: &PreparedToolCall) -> Result<Vec<RateSlot>, PolicyDecision> {
        (**self).rate_slots(call)
    }

    fn result_sources(&self, tool_name: &str) -> Option<crate::provenance::ResultSources> {
        (**self).result_sources(tool_name)
    }

    fn judges_results(&self, tool_name: &str) -> bool {
        (**self).judges_results(tool_name)
    }

    fn judge_result(
        &self,
        tool_name: &str,
        principal: Option<&crate::Principal>,
        result: &mut crate::ToolResult,
    ) -> Vec<RateSlot> {
        (**self).judge_result(tool_name, principal, result)
    }

    fn by_name_only(&self, sealed: sealed::Token) -> Option<&ToolPolicy> {
        (**self).by_name_only(sealed)
    }
}

/// A closure decides; it cannot say whether it fits a registry, so it accepts every one, and it
/// names no rate limits. A closure that wraps a [`RulePolicy`](crate::RulePolicy) loses both its
/// registry check and its [`limits`](crate::limits): share the policy through an `Arc` (which
/// forwards everything), or stack it in [`Layers`], instead of calling it from a
/// closure.
impl<F> Policy for F
where
    F: Fn(&PreparedToolCall) -> PolicyDecision + Send + Sync,
{
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        self(call)
    }
}

/// One thing wrong in a policy, and where: `rules[2] (id "read-ws").when.all[0].path_within`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadProblem {
    /// Where in the configuration.
    pub place: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LoadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

/// A policy does not fit a registry: it names tools or fields the registry's tools do not have
/// (say, after an MCP server renamed a field in its `tools/list`). The controller refused the
/// change that caused it; load a policy written for the new tools, or keep the old ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the policy does not fit the registry: {} problem(s): {}", .problems.len(), join_problems(.problems))]
#[non_exhaustive]
pub struct PolicyMismatch {
    /// Every problem, with its place in the policy.
    pub problems: Vec<LoadProblem>,
}

pub(crate) fn join_problems(problems: &[LoadProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// In force instead of a policy that does not fit the registry: every call is denied, naming the
/// mismatch, until a fitting registry or policy is loaded (fail closed).
pub(crate) struct Unfit {
    reason: Reason,
}

impl Unfit {
    pub(crate) fn new(mismatch: &PolicyMismatch) -> Self {
        Self {
            reason: Reason::new(format!(
                "denied: the policy in force does not fit the tools ({} problem(s)); no call runs until a fitting policy is loaded",
                mismatch.problems.len()
            ))
            .unwrap_or(Reason::from_static("denied: the policy does not fit the tools")),
        }
    }
}

impl Policy for Unfit {
    fn decide(&self, _: &PreparedToolCall) -> PolicyDecision {
        PolicyDecision::deny(self.reason.clone())
    }

    fn denies_every_call(&self, _: &str) -> bool {
        true
    }
}
