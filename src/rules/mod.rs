//! Argument-aware policy: allow / ask / deny rules per tool, conditioned on argument values,
//! loaded from JSON or built in code, checked against the registry, and explained.

pub mod analysis;
mod condition;
mod config;
mod error;
mod examples;
mod flows;
mod groups;
mod ids;
#[cfg(test)]
mod index_tests;
mod limits;
mod load;
mod look_alike_names;
mod principals;
mod results;
mod scan;
mod schema_pointer;
mod trace;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use condition::{CallPaths, Cause, Compiled, Index, PathSettings, Truth};
pub use condition::{Condition, PathOptions, TextOptions};
pub use config::{PolicyConfig, RuleConfig};
pub use error::{PolicyLoadError, ReadError};
pub use examples::PolicyExample;
pub use flows::{
    EarlierCalls, FlowConfig, FlowScope, NamedSource, SameValue, SourceKind, SourcesConfig,
    TokenKind, ValueProvenance, ValueRead, ValueSource,
};
pub use groups::ToolNamePattern;
pub(crate) use ids::id_problem;
pub use principals::PrincipalsConfig;
pub use results::{Detector, ResultAction, ResultRuleConfig};
pub use trace::{Explanation, RuleTrace};

use crate::decision::{PolicyAction, PolicyDecision, Reason};
use crate::names::FastMap;
pub use crate::policy::LoadProblem;
use crate::policy::{Policy, PolicyMismatch};
use crate::registry::ToolRegistry;
use crate::runtime::PreparedToolCall;

#[derive(Debug)]
struct Rule {
    id: Arc<str>,
    reason: Reason,
    condition: Option<Compiled>,
    // The callers it applies to; `None`: every caller.
    principals: Option<Arc<PrincipalsConfig>>,
    // Who may answer, on an ask rule.
    approvers: Option<Arc<crate::decision::Approvers>>,
    // Whether the rule names its tool exactly (not by a pattern): named first among its action.
    exact: bool,
}

impl Rule {
    /// Whether the rule applies: restrictive rules (ask, deny) also when undetermined.
    fn applies(&self, action: PolicyAction, arguments: &Value, paths: &PathSettings) -> bool {
        self.applies_in(action, arguments, &mut CallPaths::new(paths))
    }

    /// [`applies`](Self::applies), within one decision whose paths are normalized once.
    fn applies_in<'a>(
        &self,
        action: PolicyAction,
        arguments: &'a Value,
        paths: &mut CallPaths<'a>,
    ) -> bool {
        match self.truth(arguments, paths) {
            Truth::Yes => true,
            Truth::Unknown(_) => action != PolicyAction::Allow,
            Truth::No => false,
        }
    }

    /// How the condition judges `arguments`, whoever the caller (examples and explanations
    /// judge arguments alone).
    fn truth<'a>(&self, arguments: &'a Value, paths: &mut CallPaths<'a>) -> Truth<'_> {
        self.condition
            .as_ref()
            .map_or(Truth::Yes, |condition| condition.evaluate(arguments, paths))
    }

    /// How the rule judges a call made for `caller`: not at all if it is not one of the rule's
    /// principals, else as its condition judges the arguments.
    fn truth_for<'a>(
        &self,
        caller: Option<&crate::Principal>,
        arguments: &'a Value,
        paths: &mut CallPaths<'a>,
    ) -> Truth<'_> {
        match &self.principals {
            Some(principals) if !principals.admits(caller) => Truth::No,
            _ => self.truth(arguments, paths),
        }
    }

    /// Applies to every call of its tool, whatever the arguments and the caller.
    fn always_applies(&self) -> bool {
        self.condition.is_none() && self.principals.is_none()
    }
}

/// The rules of one tool, by action, each list sorted exact names first, then by id, so that the
/// deciding rule does not depend on the order rules were written in.
#[derive(Debug, Default)]
struct ToolRules {
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
    // Built at load once the lists are sorted: deny, ask, allow (`None` for short lists).
    index: [Option<Index>; 3],
}

impl ToolRules {
    /// Indexes each list; called once the lists are in naming order.
    fn build_index(&mut self) {
        let index = |rules: &[Rule], allow: bool| {
            Index::build(rules.iter().map(|rule| rule.condition.as_ref()), allow)
        };
        self.index = [
            index(&self.deny, false),
            index(&self.ask, false),
            index(&self.allow, true),
        ];
    }

    fn by_precedence(&self) -> [(PolicyAction, &[Rule]); 3] {
        [
            (PolicyAction::Deny, &self.deny),
            (PolicyAction::Ask, &self.ask),
            (PolicyAction::Allow, &self.allow),
        ]
    }
}

/// A policy of rules on tool names and argument values. Precedence is deny > ask > allow >
/// default deny, across every rule that applies to the call's tool, whether it names the tool
/// exactly or by a pattern (a pattern never weakens an exact rule's action, nor the reverse). Among
/// rules of the winning action, the rule named is: one whose condition holds before one that
/// applies only because its condition could not be judged; then a rule naming the tool exactly
/// before a pattern rule; then the smallest id. The order in which rules are written never changes
/// a decision.
///
/// When the deciding rule applies only because a value could not be judged (shell syntax, a NUL
/// byte, a wrong type, a number that may have been rounded, a path that cannot be read lexically,
/// options that may hide a subcommand), the decision's reason says so — `cannot judge /command: it
/// contains shell syntax …` — instead of the rule's own reason, which would describe a case the
/// call may have nothing to do with; the rule's id is still recorded. The reason names the
/// policy's pointer, never the value.
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
/// let policy = RulePolicy::from_json(r#"{"paths": {"working_directory": "/workspace"}, "rules": [
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
    // Every registered tool's rules, pattern rules expanded into each tool they match.
    by_tool: FastMap<String, ToolRules>,
    // The pattern rules once more, for tools registered after load.
    groups: Vec<groups::GroupRule>,
    limits: limits::RateLimits,
    flows: flows::Flows,
    results: results::ResultRules,
    paths: PathSettings,
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
        load::load(config, registry)
    }

    /// Parses a JSON policy and builds it against `registry`.
    ///
    /// # Errors
    ///
    /// [`PolicyLoadError::Syntax`] for text that is not the rule language,
    /// [`PolicyLoadError::Invalid`] for a policy that does not fit the registry.
    pub fn from_json(text: &str, registry: &ToolRegistry) -> Result<Self, PolicyLoadError> {
        // A byte-order mark a Windows editor wrote: JSON's readers may ignore it (RFC 8259 §8.1),
        // and refused it read as "expected value at line 1 column 1".
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let config = serde_json::from_str(text).map_err(|error| PolicyLoadError::Syntax {
            message: error.to_string(),
        })?;
        Self::new(config, registry)
    }

    /// Reads a JSON policy file and builds it against `registry`.
    ///
    /// # Errors
    ///
    /// [`PolicyLoadError::Read`] if the file cannot be read, is not a regular file or is longer
    /// than [`MAX_POLICY_FILE_BYTES`](crate::files::MAX_POLICY_FILE_BYTES) (see
    /// [`files::read_text`](crate::files::read_text)), else as [`from_json`](Self::from_json).
    pub fn from_file(
        path: impl AsRef<Path>,
        registry: &ToolRegistry,
    ) -> Result<Self, PolicyLoadError> {
        let path = path.as_ref();
        let text = crate::files::read_text(path, crate::files::MAX_POLICY_FILE_BYTES).map_err(
            |error| PolicyLoadError::Read {
                path: path.display().to_string(),
                source: ReadError(Arc::new(error)),
            },
        )?;
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
        self.decide_for(tool, None, arguments)
    }

    /// As [`decide_arguments`](Self::decide_arguments), for a call made for `caller`: rules
    /// naming `principals` apply only to theirs.
    pub fn decide_for(
        &self,
        tool: &str,
        caller: Option<&crate::Principal>,
        arguments: &Value,
    ) -> PolicyDecision {
        // Each path argument is normalized once for all the tool's rules.
        let mut paths = CallPaths::new(&self.paths);
        if let Some(rules) = self.by_tool.get(tool) {
            for ((action, list), index) in rules.by_precedence().into_iter().zip(&rules.index) {
                let pick = match index {
                    Some(index) => {
                        scan::pick_indexed(list, index, action, caller, arguments, &mut paths)
                    }
                    None => scan::pick_linear(list.iter(), action, caller, arguments, &mut paths),
                };
                if let Some(pick) = pick {
                    let decision = self.picked(action, pick);
                    return Self::with_approvers(
                        decision,
                        &rules.ask,
                        caller,
                        arguments,
                        &self.paths,
                    );
                }
            }
            return self.default_decision();
        }
        // A tool registered after the policy was loaded: only patterns can cover it.
        let lists = groups::rules_for(&self.groups, tool);
        for (action, list) in lists.clone().into_iter().flatten() {
            if let Some(pick) =
                scan::pick_linear(list.into_iter(), action, caller, arguments, &mut paths)
            {
                let decision = self.picked(action, pick);
                let asking = lists
                    .into_iter()
                    .flatten()
                    .filter(|(a, _)| *a == PolicyAction::Ask);
                let asking = asking.flat_map(|(_, rules)| rules);
                return Self::with_approvers(decision, asking, caller, arguments, &self.paths);
            }
        }
        self.default_decision()
    }

    /// The decision naming `rule`; when it applies only because its condition could not be
    /// judged, the reason says what could not be judged (never the value) — the rule's own reason
    /// would name a case the call may have nothing to do with.
    fn picked(
        &self,
        action: PolicyAction,
        (rule, cause): (&Rule, Option<Cause<'_>>),
    ) -> PolicyDecision {
        let reason = match cause {
            None => rule.reason.clone(),
            Some(cause) => Reason::new(cause.to_string()).unwrap_or_else(|_| rule.reason.clone()),
        };
        self.decision(action, rule, reason)
    }

    fn decision(&self, action: PolicyAction, rule: &Rule, reason: Reason) -> PolicyDecision {
        PolicyDecision::new(action, reason)
            .with_rule_id(Arc::clone(&rule.id))
            .with_policy_digest(Arc::clone(&self.digest))
    }

    /// `decision`, an ask, with the approvers of every ask rule that applies to the call (the
    /// deciding rule's and any other's): one rule without approvers must not let an answer
    /// skip another's.
    fn with_approvers<'a>(
        decision: PolicyDecision,
        asking: impl IntoIterator<Item = &'a Rule>,
        caller: Option<&crate::Principal>,
        arguments: &Value,
        paths: &PathSettings,
    ) -> PolicyDecision {
        if decision.action != PolicyAction::Ask {
            return decision;
        }
        let mut decision = decision;
        let mut unnamed = false;
        for rule in asking {
            let applies = !matches!(
                rule.truth_for(caller, arguments, &mut CallPaths::new(paths)),
                Truth::No
            );
            match &rule.approvers {
                Some(approvers) if applies => decision.approvers.push(Arc::clone(approvers)),
                None if applies => unnamed = true,
                _ => {}
            }
        }
        crate::decision::bar_self_for_unnamed(&mut decision.approvers, unnamed);
        decision
    }

    /// Whether every call of `tool` is denied: a deny rule without a condition that `denies`
    /// (it applies to the caller whatever the arguments), or no ask or allow rule that `may_pass`
    /// (one that could apply to the caller).
    fn denies_every_call_where(
        &self,
        tool: &str,
        denies: impl Fn(&Rule) -> bool,
        may_pass: impl Fn(&Rule) -> bool,
    ) -> bool {
        let Some((deny, pass)) = self.rules_of(tool) else {
            return true;
        };
        deny.iter()
            .any(|rule| rule.condition.is_none() && denies(rule))
            || !pass.iter().any(|rule| may_pass(rule))
    }

    /// The deny rules of `tool`, and its ask and allow rules; `None` when no rule names it.
    fn rules_of(&self, tool: &str) -> Option<(Vec<&Rule>, Vec<&Rule>)> {
        match self.by_tool.get(tool) {
            Some(rules) => Some((
                rules.deny.iter().collect(),
                rules.ask.iter().chain(&rules.allow).collect(),
            )),
            None => {
                groups::rules_for(&self.groups, tool).map(|[(_, deny), (_, ask), (_, allow)]| {
                    (deny, ask.into_iter().chain(allow).collect())
                })
            }
        }
    }

    fn default_decision(&self) -> PolicyDecision {
        // A constant, so the reason is checked when the crate compiles, not on every call.
        const DEFAULT_DENY: Reason = Reason::from_static("no rule allows this call (default deny)");
        PolicyDecision::fallback_deny(DEFAULT_DENY).with_policy_digest(Arc::clone(&self.digest))
    }
}

impl Policy for RulePolicy {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        self.decide_for(
            call.tool_name(),
            call.call().principal.as_deref(),
            call.arguments(),
        )
    }

    /// A tool without rules falls to the default deny; one with an unconditional deny rule is
    /// denied before any ask or allow rule is looked at.
    fn denies_every_call(&self, tool_name: &str) -> bool {
        self.denies_every_call_where(tool_name, |rule| rule.principals.is_none(), |_| true)
    }

    /// As [`denies_every_call`](Self::denies_every_call), counting only the rules whose
    /// `principals` admit `caller`: the others never apply to their calls.
    fn denies_every_call_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        let admits = |rule: &Rule| {
            rule.principals
                .as_ref()
                .is_none_or(|principals| principals.admits(caller))
        };
        self.denies_every_call_where(tool_name, admits, admits)
    }

    /// A deny rule without a condition whose `principals` admit `caller` decides every call of
    /// theirs (no ask or allow rule is looked at after it).
    fn always_denies_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        let admits = |rule: &Rule| {
            rule.principals
                .as_ref()
                .is_none_or(|principals| principals.admits(caller))
        };
        self.rules_of(tool_name).is_some_and(|(deny, _)| {
            deny.iter()
                .any(|rule| rule.condition.is_none() && admits(rule))
        })
    }

    /// Loads this policy's configuration again against `registry`: a tool it names is gone, a
    /// field a condition judges was renamed or became a list, an example no longer behaves — each
    /// is a problem, and the controller refuses the registry (or denies every call) rather than
    /// apply a silently weaker policy.
    /// The limits covering the call's tool (by exact name or pattern), one counter per distinct
    /// key for a keyed limit.
    fn rate_slots(
        &self,
        call: &PreparedToolCall,
    ) -> Result<Vec<crate::decision::RateSlot>, PolicyDecision> {
        let mut slots = self.limits.slots(call.tool_name(), call.arguments())?;
        slots.extend(self.flows.slots(
            call.tool_name(),
            call.call().principal.as_deref(),
            call.arguments(),
            &self.paths,
        ));
        Ok(slots)
    }

    fn result_sources(&self, tool_name: &str) -> Option<crate::provenance::ResultSources> {
        self.flows.result_sources(tool_name)
    }

    fn judges_results(&self, tool_name: &str) -> bool {
        self.results.covers(tool_name)
    }

    fn judge_result(
        &self,
        tool_name: &str,
        principal: Option<&crate::Principal>,
        result: &mut crate::ToolResult,
    ) -> Vec<crate::decision::RateSlot> {
        self.results
            .judge(tool_name, result)
            .iter()
            .flat_map(|label| self.flows.label_records(label, principal))
            .collect()
    }

    fn check_registry(&self, registry: &ToolRegistry) -> Result<(), PolicyMismatch> {
        match load::load(self.config.clone(), registry) {
            Ok(_) => Ok(()),
            Err(PolicyLoadError::Invalid { problems }) => Err(PolicyMismatch { problems }),
            Err(other) => Err(PolicyMismatch {
                problems: vec![LoadProblem {
                    place: "policy".to_owned(),
                    message: other.to_string(),
                }],
            }),
        }
    }
}
