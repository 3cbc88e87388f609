//! Loading a policy: every rule checked against the registry and the other rules, applied whole
//! or not at all.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::condition::{self, PathSettings, Scope};
use super::{LoadProblem, PolicyConfig, PolicyLoadError, Rule, RuleConfig, RulePolicy, ToolRules};
use crate::canonical;
use crate::names::FastMap;
use crate::policy::{PolicyAction, Reason};
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
    let path_fields = path_fields_by_tool(&config.rules);
    let mut by_tool: FastMap<String, ToolRules> = FastMap::default();
    let mut seen_ids: HashMap<&str, usize> = HashMap::new();
    // (tool, canonical condition) → (rule index, action), to find repeats and contradictions.
    let mut seen_conditions: HashMap<(&str, String), (usize, PolicyAction)> = HashMap::new();

    for (index, rule) in config.rules.iter().enumerate() {
        let place = format!("rules[{index}] (id {:?})", rule.id);
        if rule.id.trim().is_empty() {
            problems.push(place.clone(), "id is empty");
        } else if let Some(first) = seen_ids.get(rule.id.as_str()) {
            problems.push(place.clone(), format!("id repeats rules[{first}]"));
        } else {
            seen_ids.insert(&rule.id, index);
        }
        let reason = Reason::new(rule.reason.clone());
        if reason.is_err() {
            problems.push(place.clone(), "reason is empty");
        }
        let Some(definition) = registry.resolve(&rule.tool) else {
            problems.push(
                place.clone(),
                format!("tool {:?} is not in the registry", rule.tool),
            );
            continue;
        };
        let schema = &definition.spec().input_schema;
        let no_fields = HashSet::new();
        let scope = Scope {
            lookup: &|pointer| super::schema_pointer::lookup(schema, pointer),
            paths: &paths,
            path_fields: path_fields.get(rule.tool.as_str()).unwrap_or(&no_fields),
            restrictive: rule.action != PolicyAction::Allow,
            base: String::new(),
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
            Some(None) => continue,
        };

        check_repeats(rule, index, &place, &mut seen_conditions, &mut problems);

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
                    problems.push(
                        here,
                        format!("example is not valid arguments for the tool: {errors}"),
                    );
                } else if compiled_rule.applies(rule.action, example, &paths) != expected {
                    let verb = if expected {
                        "does not apply"
                    } else {
                        "applies"
                    };
                    problems.push(here, format!("the rule {verb} to this example"));
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
    check_shadowing(&by_tool, &mut problems);

    let mut problems = problems.0;
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
            paths: config.paths.clone(),
            rules: canonical_rules,
        })
        .unwrap_or_default(),
    );
    Ok(RulePolicy {
        by_tool,
        paths,
        digest: Arc::from(digest),
        config,
    })
}

/// For each tool, the pointers any of its rules judges as a path: every other condition on them
/// must judge them as paths too.
fn path_fields_by_tool(rules: &[RuleConfig]) -> HashMap<&str, HashSet<String>> {
    let mut fields: HashMap<&str, HashSet<String>> = HashMap::new();
    for rule in rules {
        if let Some(when) = &rule.when {
            condition::path_pointers(when, "", fields.entry(rule.tool.as_str()).or_default());
        }
    }
    fields
}

/// Two rules with the same tool and condition repeat or contradict each other.
fn check_repeats<'a>(
    rule: &'a RuleConfig,
    index: usize,
    place: &str,
    seen: &mut HashMap<(&'a str, String), (usize, PolicyAction)>,
    problems: &mut Problems,
) {
    let key = (
        rule.tool.as_str(),
        rule.when
            .as_ref()
            .map(|when| canonical::canonical_json(&serde_json::to_value(when).unwrap_or_default()))
            .unwrap_or_default(),
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

/// An unconditional stricter rule leaves every weaker rule of its tool inert.
fn check_shadowing(by_tool: &FastMap<String, ToolRules>, problems: &mut Problems) {
    for (tool, rules) in by_tool {
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
                    problems.push(
                        format!("rule {:?}", rule.id),
                        format!(
                            "can never decide: rule {strict:?} {strict_action}s tool {tool:?} unconditionally"
                        ),
                    );
                }
            }
        }
    }
}
