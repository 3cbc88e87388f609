//! Argument-aware policy: allow / ask / deny rules per tool, conditioned on argument values,
//! loaded from JSON or built in code, checked against the registry, and explained.

mod condition;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use condition::Condition;
use condition::{Compiled, Truth};

use crate::canonical;
use crate::names::FastMap;
use crate::policy::{Policy, PolicyAction, PolicyDecision, Reason};
use crate::registry::ToolRegistry;
use crate::runtime::PreparedToolCall;

/// A whole policy as written: a list of rules. Unknown keys anywhere are an error.
///
/// # Examples
///
/// ```
/// use toolgate::PolicyConfig;
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
pub struct PolicyConfig {
    /// The rules; their order never changes a decision.
    pub rules: Vec<RuleConfig>,
}

/// One rule: for `tool`, take `action` when `when` holds (or always, without `when`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RuleConfig {
    /// A unique, non-empty id, named by every decision this rule takes.
    pub id: String,
    /// The exact name of a registered tool.
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
        }
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

/// A policy that was not loaded. Nothing of it took effect; the author of the configuration is at
/// fault and every problem is listed with its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyLoadError {
    /// The file could not be read.
    #[error("cannot read policy file {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's error.
        message: String,
    },
    /// The text is not a policy: bad JSON, an unknown key, a wrong type.
    #[error("policy is not valid JSON for the rule language: {message}")]
    Syntax {
        /// serde's error, with line and column.
        message: String,
    },
    /// The policy parsed but does not fit the registry or contradicts itself.
    #[error("policy has {} problem(s): {}", .problems.len(), join(.problems))]
    Invalid {
        /// Every problem found.
        problems: Vec<LoadProblem>,
    },
}

fn join(problems: &[LoadProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[derive(Debug)]
struct Rule {
    id: Arc<str>,
    reason: Reason,
    condition: Option<Compiled>,
}

impl Rule {
    /// Whether the rule applies: restrictive rules (ask, deny) also when undetermined.
    fn applies(&self, action: PolicyAction, arguments: &Value) -> bool {
        match self.truth(arguments) {
            Truth::Yes => true,
            Truth::Unknown => action != PolicyAction::Allow,
            Truth::No => false,
        }
    }

    fn truth(&self, arguments: &Value) -> Truth {
        self.condition
            .as_ref()
            .map_or(Truth::Yes, |condition| condition.evaluate(arguments))
    }
}

/// The rules of one tool, by action, each list sorted by id so that the deciding rule does not
/// depend on the order rules were written in.
#[derive(Debug, Default)]
struct ToolRules {
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
}

impl ToolRules {
    fn by_precedence(&self) -> [(PolicyAction, &[Rule]); 3] {
        [
            (PolicyAction::Deny, &self.deny),
            (PolicyAction::Ask, &self.ask),
            (PolicyAction::Allow, &self.allow),
        ]
    }
}

/// How one rule evaluated for one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RuleTrace {
    /// The rule's id.
    pub rule_id: Arc<str>,
    /// The rule's action.
    pub action: PolicyAction,
    /// Whether the rule applied (for ask and deny rules, an undetermined condition applies).
    pub applied: bool,
    /// Whether its condition could be judged; `false` for wrong types, NUL bytes, shell syntax.
    pub determined: bool,
}

/// Why a call got its decision: the decision, and how every rule of the tool evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// The decision, with the deciding rule's id (`None` when the default decided).
    pub decision: PolicyDecision,
    /// Every rule on the call's tool, in precedence order (deny, ask, allow), then by id.
    pub rules: Vec<RuleTrace>,
}

/// A policy of rules on tool names and argument values. Precedence is deny > ask > allow >
/// default deny; among rules of the winning action the smallest id is named. The order in which
/// rules are written never changes a decision.
///
/// # Guarantees
///
/// - Built whole or not at all: every rule is checked against the registry at load — the tool
///   exists, each pointer names a field of the tool's schema, patterns and reasons are not empty,
///   no two rules contradict or repeat each other, no rule is shadowed by an unconditional
///   stricter one, and every `match` / `not_match` example behaves as written.
/// - What a condition cannot judge is never allowed (see [`Condition`]).
/// - Every decision carries the deciding rule's id and the policy's [`digest`](Self::digest).
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::*;
///
/// let read = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
/// let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
/// let registry = ToolRegistry::new([ToolDefinition::new(ToolSpec::new("read_file", "Read.", schema), read)?])?;
///
/// let policy = RulePolicy::from_json(r#"{"rules": [
///   {"id": "read-workspace", "tool": "read_file", "action": "allow", "reason": "inside the workspace",
///    "when": {"path_within": {"pointer": "/path", "roots": ["/workspace"]}},
///    "match": [{"path": "src/main.rs"}], "not_match": [{"path": "/workspace/../etc/passwd"}]},
///   {"id": "read-elsewhere", "tool": "read_file", "action": "ask", "reason": "outside the workspace",
///    "when": {"not": {"path_within": {"pointer": "/path", "roots": ["/workspace"]}}},
///    "not_match": [{"path": "/workspace/a"}, {"path": "a"}]}
/// ]}"#, &registry);
/// # let policy = match policy { Ok(p) => p, Err(e) => panic!("{e}") };
/// let decision = policy.decide_arguments("read_file", &json!({"path": "/etc/passwd"}));
/// assert_eq!(decision.action, PolicyAction::Ask);
/// assert_eq!(decision.rule_id.as_deref(), Some("read-elsewhere"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RulePolicy {
    by_tool: FastMap<String, ToolRules>,
    digest: Arc<str>,
    config: PolicyConfig,
}

impl RulePolicy {
    /// Checks `config` against `registry` and builds the policy.
    ///
    /// # Errors
    ///
    /// [`PolicyLoadError::Invalid`] listing every problem with its place.
    pub fn new(config: PolicyConfig, registry: &ToolRegistry) -> Result<Self, PolicyLoadError> {
        load(config, registry)
    }

    /// Parses a JSON policy and builds it against `registry`.
    ///
    /// # Errors
    ///
    /// [`PolicyLoadError::Syntax`] for text that is not the rule language,
    /// [`PolicyLoadError::Invalid`] for a policy that does not fit the registry.
    pub fn from_json(text: &str, registry: &ToolRegistry) -> Result<Self, PolicyLoadError> {
        let config = serde_json::from_str(text).map_err(|error| PolicyLoadError::Syntax {
            message: error.to_string(),
        })?;
        Self::new(config, registry)
    }

    /// Reads a JSON policy file and builds it against `registry`.
    ///
    /// # Errors
    ///
    /// [`PolicyLoadError::Read`] if the file cannot be read, else as [`from_json`](Self::from_json).
    pub fn from_file(
        path: impl AsRef<Path>,
        registry: &ToolRegistry,
    ) -> Result<Self, PolicyLoadError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| PolicyLoadError::Read {
            path: path.display().to_string(),
            message: error.to_string(),
        })?;
        Self::from_json(&text, registry)
    }

    /// `sha256:` and the hex SHA-256 of the policy's canonical form (rules sorted by id, keys
    /// sorted, one spelling per number): the same rules give the same digest whatever their order
    /// or formatting; any change of meaning gives another.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The configuration this policy was built from.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// The decision for `arguments` to `tool`, without validating them (for checking a policy;
    /// the controller decides only on validated calls).
    pub fn decide_arguments(&self, tool: &str, arguments: &Value) -> PolicyDecision {
        let Some(rules) = self.by_tool.get(tool) else {
            return self.default_decision();
        };
        for (action, rules) in rules.by_precedence() {
            if let Some(rule) = rules.iter().find(|rule| rule.applies(action, arguments)) {
                return PolicyDecision::new(action, rule.reason.clone())
                    .with_rule_id(Arc::clone(&rule.id))
                    .with_policy_digest(Arc::clone(&self.digest));
            }
        }
        self.default_decision()
    }

    /// The decision for `call` and how every rule of its tool evaluated.
    pub fn explain(&self, call: &PreparedToolCall) -> Explanation {
        self.explain_arguments(call.tool_name(), call.arguments())
    }

    /// As [`explain`](Self::explain), for arguments that were not validated.
    pub fn explain_arguments(&self, tool: &str, arguments: &Value) -> Explanation {
        let rules = self
            .by_tool
            .get(tool)
            .map(|rules| {
                rules
                    .by_precedence()
                    .into_iter()
                    .flat_map(|(action, rules)| {
                        rules.iter().map(move |rule| {
                            let truth = rule.truth(arguments);
                            RuleTrace {
                                rule_id: Arc::clone(&rule.id),
                                action,
                                applied: rule.applies(action, arguments),
                                determined: truth != Truth::Unknown,
                            }
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Explanation {
            decision: self.decide_arguments(tool, arguments),
            rules,
        }
    }

    fn default_decision(&self) -> PolicyDecision {
        PolicyDecision::deny(Reason::from_static(
            "no rule allows this call (default deny)",
        ))
        .with_policy_digest(Arc::clone(&self.digest))
    }
}

impl Policy for RulePolicy {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        self.decide_arguments(call.tool_name(), call.arguments())
    }
}

fn load(config: PolicyConfig, registry: &ToolRegistry) -> Result<RulePolicy, PolicyLoadError> {
    let mut problems = Vec::new();
    let mut problem =
        |place: String, message: String| problems.push(LoadProblem { place, message });
    let mut by_tool: FastMap<String, ToolRules> = FastMap::default();
    let mut seen_ids: HashMap<&str, usize> = HashMap::new();
    // (tool, canonical condition) → (rule index, action), to find repeats and contradictions.
    let mut seen_conditions: HashMap<(&str, String), (usize, PolicyAction)> = HashMap::new();

    for (index, rule) in config.rules.iter().enumerate() {
        let place = format!("rules[{index}] (id {:?})", rule.id);
        if rule.id.trim().is_empty() {
            problem(place.clone(), "id is empty".to_owned());
        } else if let Some(first) = seen_ids.get(rule.id.as_str()) {
            problem(place.clone(), format!("id repeats rules[{first}]"));
        } else {
            seen_ids.insert(&rule.id, index);
        }
        let reason = Reason::new(rule.reason.clone());
        if reason.is_err() {
            problem(place.clone(), "reason is empty".to_owned());
        }
        let Some(definition) = registry.resolve(&rule.tool) else {
            problem(
                place.clone(),
                format!("tool {:?} is not in the registry", rule.tool),
            );
            continue;
        };
        let schema = &definition.spec().input_schema;

        let mut condition_problems = Vec::new();
        let compiled = rule.when.as_ref().map(|when| {
            condition::compile(
                when,
                "when",
                &|pointer| schema_has_pointer(schema, pointer),
                &mut condition_problems,
            )
        });
        for (where_in_rule, message) in condition_problems {
            problem(format!("{place}.{where_in_rule}"), message);
        }
        let condition = match compiled {
            None => None,
            Some(Some(compiled)) => Some(compiled),
            Some(None) => continue,
        };

        let key = (
            rule.tool.as_str(),
            rule.when
                .as_ref()
                .map(|when| {
                    canonical::canonical_json(&serde_json::to_value(when).unwrap_or_default())
                })
                .unwrap_or_default(),
        );
        if let Some(&(first, action)) = seen_conditions.get(&key) {
            let message = if action == rule.action {
                format!("repeats rules[{first}] (same tool, same condition)")
            } else {
                format!(
                    "conflicts with rules[{first}]: same tool and condition, but {} instead of {action}",
                    rule.action
                )
            };
            problem(place.clone(), message);
        } else {
            seen_conditions.insert(key, (index, rule.action));
        }

        let (Ok(reason), false) = (reason, rule.id.trim().is_empty()) else {
            continue;
        };
        let compiled_rule = Rule {
            id: Arc::from(rule.id.as_str()),
            reason,
            condition,
        };
        for (kind, examples, expected) in [
            ("match", &rule.match_examples, true),
            ("not_match", &rule.not_match, false),
        ] {
            for (example_index, example) in examples.iter().enumerate() {
                let here = format!("{place}.{kind}[{example_index}]");
                if let Err(errors) = definition.validate(example) {
                    problem(
                        here,
                        format!("example is not valid arguments for the tool: {errors}"),
                    );
                } else if compiled_rule.applies(rule.action, example) != expected {
                    let verb = if expected {
                        "does not apply"
                    } else {
                        "applies"
                    };
                    problem(here, format!("the rule {verb} to this example"));
                }
            }
        }
        let rules = by_tool.entry(rule.tool.clone()).or_default();
        match rule.action {
            PolicyAction::Deny => rules.deny.push(compiled_rule),
            PolicyAction::Ask => rules.ask.push(compiled_rule),
            PolicyAction::Allow => rules.allow.push(compiled_rule),
        }
    }

    // An unconditional stricter rule leaves every weaker rule of its tool inert.
    for (tool, rules) in &by_tool {
        let unconditional = |rules: &[Rule]| {
            rules
                .iter()
                .find(|rule| rule.condition.is_none())
                .map(|rule| Arc::clone(&rule.id))
        };
        let shadowing = unconditional(&rules.deny)
            .map(|id| (id, PolicyAction::Deny))
            .or_else(|| unconditional(&rules.ask).map(|id| (id, PolicyAction::Ask)));
        if let Some((strict, strict_action)) = shadowing {
            for (action, weaker) in rules.by_precedence() {
                if action == strict_action || action == PolicyAction::Deny {
                    continue;
                }
                for rule in weaker {
                    problem(
                        format!("rule {:?}", rule.id),
                        format!(
                            "can never decide: rule {strict:?} {strict_action}s tool {tool:?} unconditionally"
                        ),
                    );
                }
            }
        }
    }

    if !problems.is_empty() {
        problems.sort_by(|a, b| a.place.cmp(&b.place));
        return Err(PolicyLoadError::Invalid { problems });
    }
    for rules in by_tool.values_mut() {
        for list in [&mut rules.deny, &mut rules.ask, &mut rules.allow] {
            list.sort_by(|a, b| a.id.cmp(&b.id));
        }
    }
    let mut canonical_rules = config.rules.clone();
    canonical_rules.sort_by(|a, b| a.id.cmp(&b.id));
    let digest = canonical::digest(
        &serde_json::to_value(PolicyConfig {
            rules: canonical_rules,
        })
        .unwrap_or_default(),
    );
    Ok(RulePolicy {
        by_tool,
        digest: Arc::from(digest),
        config,
    })
}

/// Whether `pointer` names a field the schema declares: each token must be a listed property
/// (under `properties`, also inside `allOf` / `anyOf` / `oneOf` branches and local `$ref`s) or,
/// for arrays, an index covered by `items` / `prefixItems`.
fn schema_has_pointer(root: &Value, pointer: &str) -> bool {
    let tokens: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut frontier = vec![root];
    for token in &tokens {
        let mut next = Vec::new();
        // Bounded: each schema is expanded through at most 32 references or combinators.
        let mut pending: Vec<(&Value, usize)> =
            frontier.iter().map(|schema| (*schema, 0)).collect();
        while let Some((schema, hops)) = pending.pop() {
            if hops > 32 {
                continue;
            }
            let reference = schema.get("$ref").and_then(Value::as_str);
            if let Some(target) = reference
                .and_then(|reference| reference.strip_prefix('#'))
                .and_then(|fragment| root.pointer(fragment))
            {
                pending.push((target, hops + 1));
            }
            for combinator in ["allOf", "anyOf", "oneOf"] {
                if let Some(branches) = schema.get(combinator).and_then(Value::as_array) {
                    pending.extend(branches.iter().map(|branch| (branch, hops + 1)));
                }
            }
            if let Some(property) = schema.get("properties").and_then(|p| p.get(token)) {
                next.push(property);
            }
            if let Ok(index) = token.parse::<usize>() {
                if let Some(item) = schema
                    .get("prefixItems")
                    .and_then(Value::as_array)
                    .and_then(|items| items.get(index))
                {
                    next.push(item);
                }
                if let Some(items) = schema.get("items").filter(|items| items.is_object()) {
                    next.push(items);
                }
            }
        }
        if next.is_empty() {
            return false;
        }
        frontier = next;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_pointers_follow_properties_items_refs_and_combinators() {
        let schema = json!({
            "$defs": {"opts": {"type": "object", "properties": {"cwd": {"type": "string"}}}},
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "argv": {"type": "array", "items": {"type": "string"}},
                "options": {"$ref": "#/$defs/opts"},
                "a/b": {"type": "string"}
            },
            "allOf": [{"properties": {"mode": {"type": "string"}}}]
        });
        for present in ["/path", "/argv/0", "/options/cwd", "/mode", "/a~1b"] {
            assert!(schema_has_pointer(&schema, present), "{present}");
        }
        for absent in ["/pth", "/argv/x", "/options/home", "/path/0", "/a/b"] {
            assert!(!schema_has_pointer(&schema, absent), "{absent}");
        }
    }

    #[test]
    fn self_referencing_schemas_terminate() {
        let schema = json!({"$ref": "#", "properties": {"a": {"$ref": "#"}}});
        assert!(schema_has_pointer(&schema, "/a/a/a"));
        assert!(!schema_has_pointer(&schema, "/b"));
    }
}
