//! Policies: allow, ask or deny a prepared call.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::names::FastSet;
use crate::registry::ToolRegistry;
use crate::runtime::PreparedToolCall;

/// What a policy wants done with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyAction {
    /// Run the call.
    Allow,
    /// Hold the call until a person approves or rejects it.
    Ask,
    /// Do not run the call; the model is told why.
    Deny,
}

impl fmt::Display for PolicyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        })
    }
}

/// A reason for a decision: text that is never empty or only whitespace.
///
/// # Examples
///
/// ```
/// use toolgate::Reason;
///
/// assert!(Reason::new("  ").is_err());
/// let reason = Reason::new("tool requires user confirmation")?;
/// assert_eq!(reason.as_str(), "tool requires user confirmation");
/// const STATIC: Reason = Reason::from_static("read-only tool");
/// assert_eq!(STATIC.to_string(), "read-only tool");
/// # Ok::<(), toolgate::EmptyReason>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reason(
    // Invariant: contains a non-whitespace character. Shared, so handing a rule's reason to each
    // decision costs a reference count, not a copy.
    ReasonText,
);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ReasonText {
    Static(&'static str),
    Shared(Arc<str>),
}

/// A decision or rule was given an empty reason. Write why the decision is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a reason must not be empty")]
pub struct EmptyReason;

impl Reason {
    /// A reason from owned or borrowed text.
    ///
    /// # Errors
    ///
    /// [`EmptyReason`] if the text is empty or only whitespace.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(toolgate::Reason::new(String::from("ok")).is_ok());
    /// ```
    pub fn new(text: impl Into<String>) -> Result<Self, EmptyReason> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(EmptyReason);
        }
        Ok(Self(ReasonText::Shared(text.into())))
    }

    /// A reason from a string literal, checked when the program is compiled if used in a `const`.
    ///
    /// # Panics
    ///
    /// If `text` is empty or only ASCII whitespace (a compile error in a `const` context).
    ///
    /// # Examples
    ///
    /// ```
    /// const REASON: toolgate::Reason = toolgate::Reason::from_static("read-only");
    /// assert_eq!(REASON.as_str(), "read-only");
    /// ```
    pub const fn from_static(text: &'static str) -> Self {
        let bytes = text.as_bytes();
        let mut index = 0;
        while index < bytes.len() && bytes[index].is_ascii_whitespace() {
            index += 1;
        }
        assert!(index < bytes.len(), "a reason must not be empty");
        Self(ReasonText::Static(text))
    }

    /// The reason's text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            ReasonText::Static(text) => text,
            ReasonText::Shared(text) => text,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// A policy's answer for one call: the action and why.
///
/// # Examples
///
/// ```
/// use toolgate::{PolicyAction, PolicyDecision, Reason};
///
/// let decision = PolicyDecision::ask(Reason::new("writes to disk")?);
/// assert_eq!(decision.action, PolicyAction::Ask);
/// # Ok::<(), toolgate::EmptyReason>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PolicyDecision {
    /// What to do with the call.
    pub action: PolicyAction,
    /// Why; shown to the model on a denial and to the person on an ask.
    pub reason: Reason,
    /// The id of the rule that decided, when a rule did; `None` for a default or a policy
    /// without rule ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<Arc<str>>,
    /// The digest of the policy that decided, when the policy has one
    /// ([`RulePolicy::digest`](crate::RulePolicy::digest)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_digest: Option<Arc<str>>,
}

impl PolicyDecision {
    /// A decision with the given action.
    pub fn new(action: PolicyAction, reason: Reason) -> Self {
        Self {
            action,
            reason,
            rule_id: None,
            policy_digest: None,
        }
    }

    /// The same decision, saying which rule took it.
    #[must_use]
    pub fn with_rule_id(mut self, rule_id: Arc<str>) -> Self {
        self.rule_id = Some(rule_id);
        self
    }

    /// The same decision, saying which policy (by digest) took it.
    #[must_use]
    pub fn with_policy_digest(mut self, policy_digest: Arc<str>) -> Self {
        self.policy_digest = Some(policy_digest);
        self
    }

    /// Run the call.
    pub fn allow(reason: Reason) -> Self {
        Self::new(PolicyAction::Allow, reason)
    }

    /// Hold the call for a person.
    pub fn ask(reason: Reason) -> Self {
        Self::new(PolicyAction::Ask, reason)
    }

    /// Refuse the call.
    pub fn deny(reason: Reason) -> Self {
        Self::new(PolicyAction::Deny, reason)
    }
}

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
}

/// A shared policy is the policy: deciding and checking the registry both go through, so a
/// `RulePolicy` behind an `Arc` still refuses tools it does not fit.
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
}

/// A closure decides; it cannot say whether it fits a registry, so it accepts every one. A closure
/// that wraps a [`RulePolicy`](crate::RulePolicy) loses that check: share the policy through an
/// `Arc` (which forwards it) instead of calling it from a closure.
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

/// Why a [`ToolPolicy`] could not be built. The configuration is wrong; fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// A tool is both allowed and confirmation-required; say which one it is.
    #[error("tool {name:?} is both allowed and confirmation-required")]
    Overlap {
        /// The tool named in both sets.
        name: String,
    },
}

/// The original design's policy: tools by name, allowed or confirmation-required; every other
/// tool denied (G4).
///
/// # Examples
///
/// ```
/// use toolgate::{PolicyError, ToolPolicy};
///
/// let policy = ToolPolicy::new(["read_file"], ["apply_patch"])?;
/// assert!(ToolPolicy::new(["x"], ["x"]).is_err());
/// # Ok::<(), PolicyError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolPolicy {
    // Invariant: the two sets are disjoint.
    allowed: FastSet<String>,
    confirmation_required: FastSet<String>,
}

impl ToolPolicy {
    /// A policy that allows `allowed`, asks for `confirmation_required` and denies the rest.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Overlap`] naming a tool that is in both sets.
    pub fn new<A, C>(
        allowed: impl IntoIterator<Item = A>,
        confirmation_required: impl IntoIterator<Item = C>,
    ) -> Result<Self, PolicyError>
    where
        A: Into<String>,
        C: Into<String>,
    {
        let allowed: FastSet<String> = allowed.into_iter().map(Into::into).collect();
        let confirmation_required: FastSet<String> =
            confirmation_required.into_iter().map(Into::into).collect();
        // Sorted so the error names the same tool on every run.
        let mut overlap: Vec<&String> = allowed.intersection(&confirmation_required).collect();
        overlap.sort();
        if let Some(name) = overlap.first() {
            return Err(PolicyError::Overlap {
                name: (*name).clone(),
            });
        }
        Ok(Self {
            allowed,
            confirmation_required,
        })
    }

    /// The decision for a tool name alone.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolgate::{PolicyAction, ToolPolicy};
    ///
    /// let policy = ToolPolicy::new(["read_file"], ["apply_patch"])?;
    /// assert_eq!(policy.decide_for("read_file").action, PolicyAction::Allow);
    /// assert_eq!(policy.decide_for("apply_patch").action, PolicyAction::Ask);
    /// assert_eq!(policy.decide_for("shell").action, PolicyAction::Deny);
    /// # Ok::<(), toolgate::PolicyError>(())
    /// ```
    pub fn decide_for(&self, tool_name: &str) -> PolicyDecision {
        if self.allowed.contains(tool_name) {
            PolicyDecision::allow(Reason::from_static("tool is allowed by policy"))
        } else if self.confirmation_required.contains(tool_name) {
            PolicyDecision::ask(Reason::from_static("tool requires user confirmation"))
        } else {
            PolicyDecision::deny(Reason::from_static(
                "tool is not allowed by policy (default deny)",
            ))
        }
    }
}

impl Policy for ToolPolicy {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        self.decide_for(call.tool_name())
    }

    fn denies_every_call(&self, tool_name: &str) -> bool {
        self.decide_for(tool_name).action == PolicyAction::Deny
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_an_error_naming_the_tool() {
        let error = ToolPolicy::new(["a", "both"], ["both", "c"]).unwrap_err();
        assert_eq!(
            error,
            PolicyError::Overlap {
                name: "both".to_owned()
            }
        );
        assert!(error.to_string().contains("\"both\""));
    }

    #[test]
    fn default_is_deny_with_a_reason() {
        let policy = ToolPolicy::new(["a"], ["b"]).unwrap();
        let decision = policy.decide_for("new_tool");
        assert_eq!(decision.action, PolicyAction::Deny);
        assert!(decision.reason.as_str().contains("default deny"));
        let empty = ToolPolicy::default();
        assert_eq!(empty.decide_for("a").action, PolicyAction::Deny);
    }

    #[test]
    fn names_match_exactly() {
        let policy = ToolPolicy::new(["read_file"], Vec::<String>::new()).unwrap();
        assert_eq!(policy.decide_for("read_file").action, PolicyAction::Allow);
        assert_eq!(policy.decide_for("READ_FILE").action, PolicyAction::Deny);
        assert_eq!(policy.decide_for("read_file ").action, PolicyAction::Deny);
    }

    #[test]
    fn reasons_cannot_be_empty() {
        assert_eq!(Reason::new(""), Err(EmptyReason));
        assert_eq!(Reason::new(" \t\n"), Err(EmptyReason));
        assert!(serde_json::from_str::<Reason>("\"\"").is_err());
        assert_eq!(
            serde_json::from_str::<Reason>("\"why\"").unwrap().as_str(),
            "why"
        );
    }

    #[test]
    #[should_panic(expected = "a reason must not be empty")]
    fn static_empty_reason_panics() {
        let _ = Reason::from_static(" ");
    }

    #[test]
    fn decision_serde_rejects_empty_reason() {
        let ok: PolicyDecision =
            serde_json::from_str(r#"{"action":"ask","reason":"needs a person"}"#).unwrap();
        assert_eq!(ok.action, PolicyAction::Ask);
        assert!(
            serde_json::from_str::<PolicyDecision>(r#"{"action":"allow","reason":""}"#).is_err()
        );
    }
}
