//! The original design's policy: tools by name.

use super::Policy;
use crate::decision::{PolicyAction, PolicyDecision, Reason};
use crate::names::FastSet;
use crate::runtime::PreparedToolCall;

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
/// use toolgate::{ToolPolicy};
/// use toolgate::policy::PolicyError;
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
    /// # Ok::<(), toolgate::policy::PolicyError>(())
    /// ```
    pub fn decide_for(&self, tool_name: &str) -> PolicyDecision {
        Self::decision(self.action_for(tool_name))
    }

    /// The action for a tool name alone.
    pub(crate) fn action_for(&self, tool_name: &str) -> PolicyAction {
        if self.allowed.contains(tool_name) {
            PolicyAction::Allow
        } else if self.confirmation_required.contains(tool_name) {
            PolicyAction::Ask
        } else {
            PolicyAction::Deny
        }
    }

    /// The decision this policy takes when its action for a name is `action`: the one place
    /// [`decide_for`](Self::decide_for) and the controller's per-tool table both make it, so the
    /// two cannot differ.
    #[inline]
    pub(crate) fn decision(action: PolicyAction) -> PolicyDecision {
        // Constants, so the reasons are checked when the crate compiles, not on every call.
        const ALLOWED: Reason = Reason::from_static("tool is allowed by policy");
        const ASKED: Reason = Reason::from_static("tool requires user confirmation");
        const DENIED: Reason = Reason::from_static("tool is not allowed by policy (default deny)");
        match action {
            PolicyAction::Allow => PolicyDecision::allow(ALLOWED),
            PolicyAction::Ask => PolicyDecision::ask(ASKED),
            PolicyAction::Deny => PolicyDecision::fallback_deny(DENIED),
        }
    }
}

impl Policy for ToolPolicy {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        self.decide_for(call.tool_name())
    }

    fn denies_every_call(&self, tool_name: &str) -> bool {
        self.action_for(tool_name) == PolicyAction::Deny
    }

    // It decides by name alone and names no rate limits (`rate_slots` is the default).
    fn by_name_only(&self, _: super::sealed::Token) -> Option<&ToolPolicy> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::EmptyReason;
    use crate::decision::PolicyAction;

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
