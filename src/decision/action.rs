//! Decisions: an action, a reason that is never empty, and who took it.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// What a policy wants done with a call.
///
/// Ordered by strictness: `Allow < Ask < Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
/// # Ok::<(), toolgate::decision::EmptyReason>(())
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
/// # Ok::<(), toolgate::decision::EmptyReason>(())
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
    /// The layer that decided, in a [`Layers`](crate::policy::Layers) stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Arc<str>>,
    /// No rule and no listed name decided: this is the policy's default (a denial). A stack of
    /// layers takes a fallback as "no opinion" and asks the other layers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fallback: bool,
    /// On an ask: who may answer, one entry per asking rule (or layer) that names approvers; an
    /// answer must satisfy every one. Empty: anyone who can answer may.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<Arc<super::Approvers>>,
}

impl PolicyDecision {
    /// A decision with the given action.
    pub fn new(action: PolicyAction, reason: Reason) -> Self {
        Self {
            action,
            reason,
            rule_id: None,
            policy_digest: None,
            layer: None,
            fallback: false,
            approvers: Vec::new(),
        }
    }

    /// The policy's default denial: no rule or listed name decided.
    pub fn fallback_deny(reason: Reason) -> Self {
        Self {
            fallback: true,
            ..Self::deny(reason)
        }
    }

    /// The same decision, saying which layer took it.
    #[must_use]
    pub fn with_layer(mut self, layer: Arc<str>) -> Self {
        self.layer = Some(layer);
        self
    }

    /// The same decision, answerable only by `approvers` (and by any others already named).
    #[must_use]
    pub fn with_approvers(mut self, approvers: impl Into<Arc<super::Approvers>>) -> Self {
        self.approvers.push(approvers.into());
        self
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
