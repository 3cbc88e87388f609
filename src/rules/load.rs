//! Loading a policy: every rule checked against the registry and the other rules, applied whole
//! or not at all.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::condition::{self, PathSettings, Scope};
use super::groups::{GroupRule, ToolPattern, is_pattern};
use super::limits::RateLimits;
use super::{LoadProblem, PolicyConfig, PolicyLoadError, Rule, RuleConfig, RulePolicy, ToolRules};
use crate::canonical;
use crate::decision::{PolicyAction, Reason};
use crate::names::FastMap;
use crate::registry::ToolRegistry;

/// Collects problems with their places.
#[derive(Default)]
struct Problems(Vec<LoadProblem>);

impl Problems {
    fn push(&mut self, place: impl Into<String>, message: impl Into<String>) {
        self.0.push(LoadProblem {
            place: place.into(),
            message: message.into(),
        });
    }
}

pub(super) fn load(
    config: PolicyConfig,
    registry: &ToolRegistry,
) -> Result<RulePolicy, PolicyLoadError> {
    let mut problems = Problems::default();
    let paths = PathSettings::new(&config.paths).unwrap_or_else(|message| {
        problems.push("paths", message);
        PathSettings::default()
    });
    if let Err(message) = condition::check_normalization_available(config.text.normalize) {
        problems.push("text.normalize", message);
    }
    let normalize_text = config.text.normalize;
    let compiling = Compiling {
        registry,
        paths: &paths,
        normalize_text,
        path_fields: path_fields_by_tool(&config.rules, registry),
    };
    let (mut by_tool, groups) = compiling.rules(&config.rules, &mut problems);
    check_shadowing(&by_tool, &mut problems);

    let mut problems = problems.0;
    let rule_ids = config.rules.iter().map(|rule| rule.id.as_str()).collect();
    let limits = RateLimits::load(&config.limits, registry, &rule_ids, &mut problems);
    let mut taken_ids = rule_ids.clone();
    taken_ids.extend(config.limits.iter().map(|limit| limit.id.as_str()));
    let flows = super::flows::Flows::load(
        &config,
        registry,
        &paths,
        normalize_text,
        &taken_ids,
        &mut problems,
    );
    taken_ids.extend(config.flows.iter().map(|flow| flow.id.as_str()));
    let results =
        super::results::ResultRules::load(&config.results, registry, &taken_ids, &mut problems);
    super::look_alike_names::check(&config, &mut problems);
    if !problems.is_empty() {
        problems.sort_by(|a, b| {
            a.place
                .cmp(&b.place)
                .then_with(|| a.message.cmp(&b.message))
        });
        // A pattern rule shadowed on several tools is reported once.
        problems.dedup();
        return Err(PolicyLoadError::Invalid { problems });
    }
    for rules in by_tool.values_mut() {
        for list in [&mut rules.deny, &mut rules.ask, &mut rules.allow] {
            // Exact names first, then by id: the naming order of `RulePolicy`.
            list.sort_by(|a, b| b.exact.cmp(&a.exact).then_with(|| a.id.cmp(&b.id)));
        }
        rules.build_index();
    }
    let digest = config.digest();
    let policy = RulePolicy {
        by_tool,
        groups,
        limits: limits.with_policy_digest(&digest),
        flows,
        results,
        paths,
        digest,
        config,
    };
    // Last: an example is decided by the policy as built.
    let problems = policy.check_examples(&policy.config.examples, registry);
    if problems.is_empty() {
        Ok(policy)
    } else {
        Err(PolicyLoadError::Invalid { problems })
    }
}

/// What every rule of one policy is compiled against.
struct Compiling<'a> {
    registry: &'a ToolRegistry,
    paths: &'a PathSettings,
    normalize_text: bool,
    path_fields: HashMap<String, HashSet<String>>,
}

impl Compiling<'_> {
    /// The rules compiled per tool they cover, and each pattern rule once more for tools that
    /// join the registry later.
    fn rules(
        &self,
        rules: &[RuleConfig],
        problems: &mut Problems,
    ) -> (FastMap<String, ToolRules>, Vec<GroupRule>) {
        let mut by_tool: FastMap<String, ToolRules> = FastMap::default();
        let mut groups: Vec<GroupRule> = Vec::new();
        let mut seen_ids: HashMap<&str, usize> = HashMap::new();
        // (tool, canonical condition) → (rule index, action), to find repeats and contradictions.
        let mut seen_conditions: HashMap<(&str, String), (usize, PolicyAction)> = HashMap::new();
        for (index, rule) in rules.iter().enumerate() {
            let place = format!("rules[{index}] (id {:?})", rule.id);
            if let Some(problem) = super::id_problem(&rule.id) {
                problems.push(place.clone(), problem);
            } else if let Some(first) = seen_ids.get(rule.id.as_str()) {
                problems.push(place.clone(), format!("id repeats rules[{first}]"));
            } else {
                seen_ids.insert(&rule.id, index);
            }
            let reason = Reason::new(rule.reason.clone());
            if reason.is_err() {
                problems.push(place.clone(), "reason is empty");
            }
            let exact = !is_pattern(&rule.tool);
            let pattern = ToolPattern::new(&rule.tool);
            let Some(tools) = self.covered(rule, exact, &pattern, &place, problems) else {
                continue;
            };
            check_repeats(rule, index, &place, &mut seen_conditions, problems);
            let reason = match (reason, rule.id.trim().is_empty()) {
                (Ok(reason), false) => Some(reason),
                _ => None,
            };
            let group_rule = self.per_tool(
                rule,
                exact,
                &tools,
                reason.as_ref(),
                &place,
                &mut by_tool,
                problems,
            );
            if let Some(rule_compiled) = group_rule {
                groups.push(GroupRule {
                    pattern,
                    action: rule.action,
                    rule: rule_compiled,
                });
            }
        }
        (by_tool, groups)
    }

    /// The tools `rule` names: its own, which must be registered, or those its pattern covers,
    /// of which there must be one.
    fn covered<'r>(
        &'r self,
        rule: &'r RuleConfig,
        exact: bool,
        pattern: &ToolPattern,
        place: &str,
        problems: &mut Problems,
    ) -> Option<Vec<&'r str>> {
        if exact {
            if self.registry.resolve(&rule.tool).is_none() {
                problems.push(
                    place,
                    format!("tool {:?} is not in the registry", rule.tool),
                );
                return None;
            }
            return Some(vec![rule.tool.as_str()]);
        }
        let tools = pattern.covered(self.registry, rule.action);
        if tools.is_empty() {
            problems.push(
                place,
                format!(
                    "tool pattern {:?} matches no tool in the registry",
                    rule.tool
                ),
            );
            return None;
        }
        Some(tools)
    }

    /// Compiles `rule` for each of `tools` into `by_tool`. A pattern rule is compiled and checked
    /// against each tool it covers — every pointer must name a field of each, every example must
    /// behave on each — and its first compiled form is returned for the tools it will cover.
    #[allow(
        clippy::too_many_arguments,
        reason = "one rule's parts, each read once"
    )]
    fn per_tool(
        &self,
        rule: &RuleConfig,
        exact: bool,
        tools: &[&str],
        reason: Option<&Reason>,
        place: &str,
        by_tool: &mut FastMap<String, ToolRules>,
        problems: &mut Problems,
    ) -> Option<Rule> {
        let mut group_rule = None;
        for &tool in tools {
            let here = if exact {
                place.to_owned()
            } else {
                format!("{place} on tool {tool:?}")
            };
            let compile = |problems: &mut Problems| {
                compile_rule(
                    rule,
                    tool,
                    exact,
                    reason,
                    &here,
                    self.registry,
                    self.paths,
                    self.normalize_text,
                    &self.path_fields,
                    problems,
                )
            };
            let Some(compiled_rule) = compile(problems) else {
                continue;
            };
            if !exact && group_rule.is_none() {
                group_rule = compile(&mut Problems::default());
            }
            let rules = by_tool.entry(tool.to_owned()).or_default();
            match rule.action {
                PolicyAction::Deny => rules.deny.push(compiled_rule),
                PolicyAction::Ask => rules.ask.push(compiled_rule),
                PolicyAction::Allow => rules.allow.push(compiled_rule),
            }
        }
        group_rule
    }
}

/// For each tool, the pointers any of its rules (exact or by pattern) judges as a path: every other
/// condition on them must judge them as paths too.
fn path_fields_by_tool(
    rules: &[RuleConfig],
    registry: &ToolRegistry,
) -> HashMap<String, HashSet<String>> {
    let mut fields: HashMap<String, HashSet<String>> = HashMap::new();
    for rule in rules {
        let Some(when) = &rule.when else { continue };
        let tools = if is_pattern(&rule.tool) {
            ToolPattern::new(&rule.tool)
                .covered(registry, rule.action)
                .into_iter()
                .map(str::to_owned)
                .collect()
        } else {
            vec![rule.tool.clone()]
        };
        for tool in tools {
            condition::path_pointers(when, "", fields.entry(tool).or_default());
        }
    }
    fields
}

/// Compiles `rule` for `tool` and checks its examples; `None` (with the problems pushed) if it
/// does not fit, or if its id or reason was already found wanting.
#[expect(
    clippy::too_many_arguments,
    reason = "one rule's load context; a struct would only rename these"
)]
fn compile_rule(
    rule: &RuleConfig,
    tool: &str,
    exact: bool,
    reason: Option<&Reason>,
    place: &str,
    registry: &ToolRegistry,
    paths: &PathSettings,
    normalize_text: bool,
    path_fields: &HashMap<String, HashSet<String>>,
    problems: &mut Problems,
) -> Option<Rule> {
    let definition = registry.resolve(tool)?;
    let schema = &definition.spec().input_schema;
    let no_fields = HashSet::new();
    let scope = Scope {
        lookup: &|pointer| super::schema_pointer::lookup(schema, pointer),
        paths,
        path_fields: path_fields.get(tool).unwrap_or(&no_fields),
        restrictive: rule.action != PolicyAction::Allow,
        base: String::new(),
        normalize_text,
    };
    let mut condition_problems = Vec::new();
    let compiled = rule
        .when
        .as_ref()
        .map(|when| condition::compile(when, "when", &scope, &mut condition_problems));
    for (where_in_rule, message) in condition_problems {
        problems.push(format!("{place}.{where_in_rule}"), message);
    }
    let condition = match compiled {
        None => None,
        Some(Some(compiled)) => Some(compiled),
        Some(None) => return None,
    };
    let principals = match &rule.principals {
        None => None,
        Some(principals) => {
            let mut fine = true;
            super::principals::check(principals, place, &mut |place, message| {
                fine = false;
                problems.push(place, message);
            });
            if !fine {
                return None;
            }
            Some(Arc::new(principals.clone()))
        }
    };
    let approvers = match &rule.approvers {
        None => None,
        Some(approvers) => {
            let mut fine = true;
            super::principals::check_approvers(
                approvers,
                rule.action,
                place,
                &mut |place, message| {
                    fine = false;
                    problems.push(place, message);
                },
            );
            if !fine {
                return None;
            }
            Some(Arc::new(approvers.clone()))
        }
    };
    let compiled_rule = Rule {
        id: Arc::from(rule.id.as_str()),
        reason: reason?.clone(),
        condition,
        principals,
        approvers,
        exact,
    };
    for (kind, examples, expected) in [
        ("match", &rule.match_examples, true),
        ("not_match", &rule.not_match, false),
    ] {
        for (example_index, example) in examples.iter().enumerate() {
            let here = format!("{place}.{kind}[{example_index}]");
            if let Err(errors) = definition.validate(example) {
                problems.push(
                    here,
                    format!("example is not valid arguments for the tool: {errors}"),
                );
            } else if compiled_rule.applies(rule.action, example, paths) != expected {
                let verb = if expected {
                    "does not apply"
                } else {
                    "applies"
                };
                problems.push(here, format!("the rule {verb} to this example"));
            }
        }
    }
    Some(compiled_rule)
}

/// Two rules with the same tool and condition repeat or contradict each other.
fn check_repeats<'a>(
    rule: &'a RuleConfig,
    index: usize,
    place: &str,
    seen: &mut HashMap<(&'a str, String), (usize, PolicyAction)>,
    problems: &mut Problems,
) {
    // Rules for other callers neither repeat nor contradict each other.
    let key = (
        rule.tool.as_str(),
        canonical::canonical_json(&serde_json::json!({
            "when": rule.when,
            "principals": rule.principals,
        })),
    );
    if let Some(&(first, action)) = seen.get(&key) {
        let message = if action == rule.action {
            format!("repeats rules[{first}] (same tool, same condition)")
        } else {
            format!(
                "conflicts with rules[{first}]: same tool and condition, but {} instead of {action}",
                rule.action
            )
        };
        problems.push(place, message);
    } else {
        seen.insert(key, (index, rule.action));
    }
}

/// An unconditional stricter rule leaves every weaker rule of its tool inert. A pattern rule is
/// inert only if it is so on every tool it covers (`srv__*` may still decide for `srv__read` when
/// `srv__delete` is denied outright).
fn check_shadowing(by_tool: &FastMap<String, ToolRules>, problems: &mut Problems) {
    // Pattern rule id → (tools it covers, (tools where it is shadowed, the last message)).
    let mut patterns: HashMap<Arc<str>, (usize, usize, String)> = HashMap::new();
    let mut tools: Vec<&String> = by_tool.keys().collect();
    tools.sort();
    for tool in tools {
        let rules = &by_tool[tool];
        let unconditional = |rules: &[Rule]| {
            rules
                .iter()
                .find(|rule| rule.always_applies())
                .map(|rule| Arc::clone(&rule.id))
        };
        let shadowing = unconditional(&rules.deny)
            .map(|id| (id, PolicyAction::Deny))
            .or_else(|| unconditional(&rules.ask).map(|id| (id, PolicyAction::Ask)));
        for (action, list) in rules.by_precedence() {
            for rule in list {
                let shadowed = shadowing.as_ref().filter(|(_, strict_action)| {
                    action != *strict_action && action != PolicyAction::Deny
                });
                let message = shadowed.map(|(strict, strict_action)| {
                    format!(
                        "can never decide: rule {strict:?} {} tool {tool:?} unconditionally",
                        verb(*strict_action)
                    )
                });
                if rule.exact {
                    if let Some(message) = message {
                        problems.push(format!("rule {:?}", rule.id), message);
                    }
                    continue;
                }
                let entry = patterns
                    .entry(Arc::clone(&rule.id))
                    .or_insert_with(|| (0, 0, String::new()));
                entry.0 += 1;
                if let Some(message) = message {
                    entry.1 += 1;
                    entry.2 = message;
                }
            }
        }
    }
    for (id, (covered, shadowed, message)) in patterns {
        if covered == shadowed {
            problems.push(format!("rule {id:?}"), message);
        }
    }
}

/// The third-person verb of an action, for messages ("denies", "asks for", "allows").
fn verb(action: PolicyAction) -> &'static str {
    match action {
        PolicyAction::Deny => "denies",
        PolicyAction::Ask => "asks for",
        PolicyAction::Allow => "allows",
    }
}
