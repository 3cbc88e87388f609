//! A policy as written: the rules and limits of a policy file, before they are checked and
//! compiled against a registry.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Condition, FlowConfig, PathOptions, PolicyExample, PrincipalsConfig, ResultRuleConfig,
    SourcesConfig, TextOptions,
};
use crate::canonical;
use crate::decision::PolicyAction;
use crate::limits::RateLimitConfig;

/// A whole policy as written: a list of rules. Unknown keys anywhere are an error.
///
/// # Examples
///
/// ```
/// use toolgate::rules::PolicyConfig;
///
/// let config: PolicyConfig = serde_json::from_str(r#"{"rules": [
///     {"id": "calc", "tool": "calculator", "action": "allow", "reason": "pure arithmetic"}
/// ]}"#)?;
/// assert_eq!(config.rules[0].id, "calc");
/// assert!(serde_json::from_str::<PolicyConfig>(r#"{"rules": [], "extra": 1}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PolicyConfig {
    /// How paths are read: the one working directory relative paths are taken against, and case
    /// sensitivity.
    #[serde(default, skip_serializing_if = "PathOptions::is_default")]
    pub paths: PathOptions,
    /// How `equals`, `one_of` and `glob` compare text: as sent, or normalized.
    #[serde(default, skip_serializing_if = "TextOptions::is_default")]
    pub text: TextOptions,
    /// The rules; their order never changes a decision.
    pub rules: Vec<RuleConfig>,
    /// Rate limits on tools or groups (see [`limits`](crate::limits)); their order never changes
    /// a decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<RateLimitConfig>,
    /// Labels on tools: a name, and the tools (exact names or patterns) that carry it; flow
    /// rules name labels. A label on no tool is a load error.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, Vec<String>>,
    /// Flow rules: what a session already did decides what it may do next (see [`FlowConfig`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowConfig>,
    /// Which tools return content a third party can write (see [`SourcesConfig`] and
    /// [`crate::provenance`]); given, or with a `provenance` flow rule, results are recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<SourcesConfig>,
    /// Result rules: what a tool returns, judged before the model sees it (see
    /// [`ResultRuleConfig`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<ResultRuleConfig>,
    /// Calls and the decisions they must get, checked at every load (see [`PolicyExample`]). They
    /// change no decision, so they are not part of the policy's digest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<PolicyExample>,
}

impl PolicyConfig {
    /// A policy of `rules`, with default path options.
    pub fn new(rules: impl IntoIterator<Item = RuleConfig>) -> Self {
        Self {
            paths: PathOptions::default(),
            text: TextOptions::default(),
            rules: rules.into_iter().collect(),
            limits: Vec::new(),
            labels: std::collections::BTreeMap::new(),
            flows: Vec::new(),
            sources: None,
            results: Vec::new(),
            examples: Vec::new(),
        }
    }

    /// The same policy, with `label` on `tools` (exact names or patterns).
    #[must_use]
    pub fn with_label(
        mut self,
        label: impl Into<String>,
        tools: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.labels
            .entry(label.into())
            .or_default()
            .extend(tools.into_iter().map(Into::into));
        self
    }

    /// The same policy, with `flows` added.
    #[must_use]
    pub fn with_flows(mut self, flows: impl IntoIterator<Item = FlowConfig>) -> Self {
        self.flows.extend(flows);
        self
    }

    /// The same policy, with `examples` added (checked when it loads).
    #[must_use]
    pub fn with_examples(mut self, examples: impl IntoIterator<Item = PolicyExample>) -> Self {
        self.examples.extend(examples);
        self
    }

    /// The same policy, with `limits` added.
    #[must_use]
    pub fn with_limits(mut self, limits: impl IntoIterator<Item = RateLimitConfig>) -> Self {
        self.limits.extend(limits);
        self
    }

    /// The same policy, reading paths as `paths` says.
    #[must_use]
    pub fn with_paths(mut self, paths: PathOptions) -> Self {
        self.paths = paths;
        self
    }

    /// The same policy, comparing text as `text` says.
    #[must_use]
    pub fn with_text(mut self, text: TextOptions) -> Self {
        self.text = text;
        self
    }
}

/// One rule: for `tool`, take `action` when `when` holds (or always, without `when`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RuleConfig {
    /// A unique, non-empty id, named by every decision this rule takes.
    pub id: String,
    /// The exact name of a registered tool, or a pattern over whole tool names (`server__*`):
    /// `*` matches any run of characters, `?` exactly one, `\\` escapes the next one. A `tool`
    /// holding `*` or `?` is a pattern; it must match at least one registered tool, and it also
    /// covers tools registered later (once the controller has checked the new registry).
    pub tool: String,
    /// What to do when the rule applies.
    pub action: PolicyAction,
    /// Why, shown to the model on a denial and to the person on an ask; not empty.
    pub reason: String,
    /// The condition on the arguments; absent means the rule always applies to its tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Condition>,
    /// Example arguments the rule must apply to; checked at load.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub match_examples: Vec<Value>,
    /// Example arguments the rule must not apply to; checked at load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_match: Vec<Value>,
    /// The callers the rule applies to; absent means every caller. A call made for no
    /// [`Principal`](crate::Principal) (a library call, stdio) is made for none of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principals: Option<PrincipalsConfig>,
    /// On an ask rule: who may answer (ids, groups, four eyes); absent means anyone who can
    /// answer. When several ask rules apply to a call, the answer must satisfy each one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<crate::decision::Approvers>,
}

impl RuleConfig {
    /// A rule taking `action` on `tool`, unconditionally until [`when`](Self::when) is set.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        action: PolicyAction,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            tool: tool.into(),
            action,
            reason: reason.into(),
            when: None,
            match_examples: Vec::new(),
            not_match: Vec::new(),
            principals: None,
            approvers: None,
        }
    }

    /// The same ask rule, answerable only by `approvers`.
    #[must_use]
    pub fn approved_by(mut self, approvers: crate::decision::Approvers) -> Self {
        self.approvers = Some(approvers);
        self
    }

    /// The same rule, applying only to calls made for `principals`.
    #[must_use]
    pub fn for_principals(mut self, principals: PrincipalsConfig) -> Self {
        self.principals = Some(principals);
        self
    }

    /// The same rule, applying only when `condition` holds.
    #[must_use]
    pub fn when(mut self, condition: Condition) -> Self {
        self.when = Some(condition);
        self
    }

    /// The same rule, with arguments it must apply to (checked at load).
    #[must_use]
    pub fn matching(mut self, examples: impl IntoIterator<Item = Value>) -> Self {
        self.match_examples.extend(examples);
        self
    }

    /// The same rule, with arguments it must not apply to (checked at load).
    #[must_use]
    pub fn not_matching(mut self, examples: impl IntoIterator<Item = Value>) -> Self {
        self.not_match.extend(examples);
        self
    }
}

impl PolicyConfig {
    /// The policy's digest: its canonical JSON with rules, limits and flows in id order (the order
    /// they are written in changes nothing) and without its examples (they decide nothing).
    pub(super) fn digest(&self) -> Arc<str> {
        let mut canonical_rules = self.rules.clone();
        canonical_rules.sort_by(|a, b| a.id.cmp(&b.id));
        let mut canonical_limits = self.limits.clone();
        canonical_limits.sort_by(|a, b| a.id.cmp(&b.id));
        let mut canonical_flows = self.flows.clone();
        canonical_flows.sort_by(|a, b| a.id.cmp(&b.id));
        Arc::from(canonical::digest(
            &serde_json::to_value(PolicyConfig {
                paths: self.paths.clone(),
                text: self.text.clone(),
                rules: canonical_rules,
                limits: canonical_limits,
                labels: self.labels.clone(),
                flows: canonical_flows,
                sources: self.sources.clone(),
                results: self.results.clone(),
                examples: Vec::new(),
            })
            .unwrap_or_default(),
        ))
    }
}
