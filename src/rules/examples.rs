//! Examples in a policy: calls with the decision they must get, checked at every load.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RulePolicy;
use crate::contract::Principal;
use crate::decision::{PolicyAction, PolicyDecision};
use crate::policy::LoadProblem;
use crate::registry::ToolRegistry;

/// A call and the decision the policy must take for it: checked at every load, so a policy (or
/// a hot reload of it) that no longer decides an example as written is refused, naming the example
/// and what was decided instead.
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::*;
///
/// let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
/// let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}});
/// let registry = ToolRegistry::new([ToolDefinition::new(ToolSpec::new("deploy", "Deploy.", schema), noop)?])?;
/// let policy = r#"{"rules": [
///     {"id": "staging", "tool": "deploy", "action": "allow", "reason": "staging is safe",
///      "when": {"equals": {"pointer": "/env", "value": "staging"}}}
///   ],
///   "examples": [
///     {"name": "staging deploys", "tool": "deploy", "arguments": {"env": "staging"},
///      "expect": "allow", "rule": "staging"},
///     {"name": "prod does not", "tool": "deploy", "arguments": {"env": "prod"}, "expect": "allow"}
///   ]}"#;
/// let error = RulePolicy::from_json(policy, &registry).unwrap_err().to_string();
/// assert!(error.contains("examples[1] (\"prod does not\"): expected allow, decided deny"), "{error}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PolicyExample {
    /// What the example shows, named when it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tool called.
    pub tool: String,
    /// The arguments; they must be valid against the tool's schema.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Who calls; absent: a call made for no principal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<Principal>,
    /// The action the policy must take.
    pub expect: PolicyAction,
    /// The rule that must decide (absent: any rule, or the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl PolicyExample {
    /// An example: calling `tool` with `arguments` must be decided `expect`.
    pub fn new(tool: impl Into<String>, arguments: Value, expect: PolicyAction) -> Self {
        Self {
            name: None,
            tool: tool.into(),
            arguments,
            principal: None,
            expect,
            rule: None,
        }
    }

    /// The same example, named.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The same example, called by `principal`.
    #[must_use]
    pub fn by(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    /// The same example, decided by the rule `rule`.
    #[must_use]
    pub fn decided_by(mut self, rule: impl Into<String>) -> Self {
        self.rule = Some(rule.into());
        self
    }
}

/// How a decision reads in a problem: its action and what took it (never an argument value).
pub(crate) fn describe(decision: &PolicyDecision) -> String {
    let by = match (&decision.rule_id, &decision.layer) {
        (Some(rule), Some(layer)) => format!("rule {rule:?} of layer {layer:?}"),
        (Some(rule), None) => format!("rule {rule:?}"),
        (None, _) => "no rule (default deny)".to_owned(),
    };
    format!("{} by {by}", decision.action)
}

impl RulePolicy {
    /// Checks `examples` against this policy: each one's arguments must be valid for its tool, and
    /// the policy must take the expected action (by the expected rule, when one is named). Returns
    /// a problem per example that fails, naming it and what was decided instead. A policy's own
    /// [`examples`](super::PolicyConfig::examples) are checked when it loads; this checks others
    /// (a test suite's, say) against a loaded policy.
    pub fn check_examples(
        &self,
        examples: &[PolicyExample],
        registry: &ToolRegistry,
    ) -> Vec<LoadProblem> {
        let mut problems = Vec::new();
        for (index, example) in examples.iter().enumerate() {
            let place = match &example.name {
                Some(name) => format!("examples[{index}] ({name:?})"),
                None => format!("examples[{index}]"),
            };
            if let Err(message) = self.check_example(example, registry) {
                problems.push(LoadProblem { place, message });
            }
        }
        problems
    }

    /// The ids of this policy's rules that decide none of its own
    /// [`examples`](super::PolicyConfig::examples), in the order written: what the examples
    /// leave untested.
    pub fn rules_without_examples(&self, registry: &ToolRegistry) -> Vec<&str> {
        let mut decided = std::collections::HashSet::new();
        for example in &self.config.examples {
            let Ok(arguments) = validated(example, registry) else {
                continue;
            };
            let decision = self.decide_for(&example.tool, example.principal.as_ref(), &arguments);
            if let Some(rule) = decision.rule_id {
                decided.insert(rule);
            }
        }
        self.config
            .rules
            .iter()
            .map(|rule| rule.id.as_str())
            .filter(|id| !decided.contains(*id))
            .collect()
    }

    fn check_example(
        &self,
        example: &PolicyExample,
        registry: &ToolRegistry,
    ) -> Result<(), String> {
        let arguments = validated(example, registry)?;
        if let Some(rule) = &example.rule
            && !self.config.rules.iter().any(|written| &written.id == rule)
        {
            return Err(format!(
                "names rule {rule:?}, which the policy does not have"
            ));
        }
        let decision = self.decide_for(&example.tool, example.principal.as_ref(), &arguments);
        let rule_fits = example
            .rule
            .as_ref()
            .is_none_or(|rule| decision.rule_id.as_deref() == Some(rule.as_str()));
        if decision.action == example.expect && rule_fits {
            return Ok(());
        }
        let expected = match &example.rule {
            Some(rule) => format!("{} by rule {rule:?}", example.expect),
            None => example.expect.to_string(),
        };
        Err(format!(
            "expected {expected}, decided {} ({})",
            describe(&decision),
            decision.reason.as_str()
        ))
    }
}

/// An example's arguments as the controller would decide them: validated against its tool's
/// schema (and normalized, for a typed tool).
fn validated(example: &PolicyExample, registry: &ToolRegistry) -> Result<Value, String> {
    let Some(definition) = registry.resolve(&example.tool) else {
        return Err(format!("tool {:?} is not in the registry", example.tool));
    };
    match definition.check(&example.arguments) {
        Ok(Some(normalized)) => Ok(normalized),
        Ok(None) => Ok(example.arguments.clone()),
        Err(errors) => Err(format!(
            "the arguments do not fit the schema of {:?}: {errors}",
            example.tool
        )),
    }
}
