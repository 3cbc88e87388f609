//! Loading flow rules: labels and flows checked against the registry and compiled once.

use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::canonical::{canonical_json, hex_digest};
use crate::decision::{PolicyAction, Reason};
use crate::policy::LoadProblem;
use crate::registry::ToolRegistry;
use crate::rules::condition::{self, PathSettings, Pointer, Scope};
use crate::rules::groups::{ToolPattern, is_pattern};
use crate::rules::{Condition, schema_pointer};

use super::*;

impl Flows {
    /// Checks and compiles the labels and flow rules; problems are pushed with their places.
    pub(in crate::rules) fn load(
        config: &crate::rules::PolicyConfig,
        registry: &ToolRegistry,
        paths: &PathSettings,
        normalize_text: bool,
        taken_ids: &std::collections::BTreeSet<&str>,
        problems: &mut Vec<LoadProblem>,
    ) -> Self {
        let (labels, sources) = (&config.labels, config.sources.as_ref());
        let mut push = |place: String, message: String| {
            problems.push(LoadProblem { place, message });
        };
        check_labels(labels, registry, &mut push);
        let mut out = Self {
            classes: sources::Classes::new(sources.cloned()),
            ..Self::default()
        };
        if let Some(sources) = sources {
            check_lookups(sources, &out.classes, registry, &mut push);
        }
        let context = Context {
            registry,
            paths,
            normalize_text,
        };
        let loading = Loading {
            context: &context,
            labels,
            result_labels: crate::rules::results::labels_given(&config.results),
        };
        let mut ids = std::collections::BTreeSet::new();
        for (index, flow) in config.flows.iter().enumerate() {
            let place = format!("flows[{index}] (id {:?})", flow.id);
            let (reason, approvers) = check_header(flow, &place, taken_ids, &mut ids, &mut push);
            if let Some(written) = &flow.provenance {
                let Ok(reason) = reason else { continue };
                let compiled = provenance::load(
                    flow,
                    written,
                    &place,
                    &context,
                    labels,
                    &mut out.classes,
                    reason,
                    approvers,
                    &mut push,
                );
                out.provenance.extend(compiled);
                continue;
            }
            out.load_history_rule(&loading, flow, place, reason, approvers, &mut push);
        }
        out
    }

    /// Compiles one `after` or `unless_after` rule and the history it reads (shared with every
    /// rule whose history has the same identity).
    fn load_history_rule(
        &mut self,
        loading: &Loading<'_>,
        config: &FlowConfig,
        place: String,
        reason: Result<Reason, crate::decision::EmptyReason>,
        approvers: Option<Arc<crate::decision::Approvers>>,
        push: &mut dyn FnMut(String, String),
    ) {
        let (context, labels) = (loading.context, loading.labels);
        let (earlier, restricts, key) = match (&config.after, &config.unless_after) {
            (Some(earlier), None) => (earlier, true, "after"),
            (None, Some(earlier)) => (earlier, false, "unless_after"),
            _ => {
                push(
                    place,
                    "needs exactly one of after and unless_after".to_owned(),
                );
                return;
            }
        };
        let target = context.target(
            &place,
            config.tool.as_deref(),
            config.label.as_deref(),
            labels,
            push,
        );
        // A label result rules give counts results too; one only they give covers no tool.
        let result_label = earlier
            .label
            .as_ref()
            .filter(|label| loading.result_labels.contains(*label));
        let source = match result_label {
            Some(label) if !labels.contains_key(label) => {
                Some((Covers::Tools(Vec::new()), Vec::new()))
            }
            _ => context.target(
                &format!("{place}.{key}"),
                earlier.tool.as_deref(),
                earlier.label.as_deref(),
                labels,
                push,
            ),
        };
        let (Some((covers, tools)), Some((source_covers, source_tools))) = (target, source) else {
            return;
        };
        let when = config
            .when
            .as_ref()
            .map(|when| context.compile(when, &format!("{place}.when"), &tools, true, push));
        let history_when = earlier.when.as_ref().map(|when| {
            context.compile(
                when,
                &format!("{place}.{key}.when"),
                &source_tools,
                restricts,
                push,
            )
        });
        let same = earlier.same.as_ref().map(|same| {
            let place = format!("{place}.{key}.same");
            check_same(same, &place, context.registry, &source_tools, &tools, push);
            (
                Pointer::parse(&same.earlier),
                Pointer::parse(&same.now),
                same.compared(),
            )
        });
        let Ok(reason) = reason else { return };
        let (history_same, flow_now) = match same {
            Some((earlier, now, compared)) => (Some((earlier, compared)), Some(now)),
            None => (None, None),
        };
        let window_ms = earlier.within.window_ms();
        let history = self.history_for(History {
            bucket: history_bucket(config, earlier, restricts),
            covers: source_covers,
            when: history_when,
            window_ms,
            same: history_same,
            by_principal: earlier.by == FlowScope::Principal,
            restricts,
            result_label: result_label.cloned(),
        });
        self.flows.push(Flow {
            id: Arc::from(config.id.as_str()),
            covers,
            when,
            now: flow_now,
            window_ms,
            history,
            action: config.action,
            reason,
            approvers,
        });
    }

    /// The index of the history named like `history`'s bucket — kept for the longest window of
    /// the rules looking at it — or of `history`, added.
    fn history_for(&mut self, history: History) -> usize {
        match self
            .histories
            .iter()
            .position(|h| h.bucket == history.bucket)
        {
            Some(found) => {
                let kept = &mut self.histories[found].window_ms;
                *kept = kept.zip(history.window_ms).map(|(a, b)| a.max(b));
                found
            }
            None => {
                self.histories.push(history);
                self.histories.len() - 1
            }
        }
    }
}

/// What every flow rule of one policy is loaded against.
struct Loading<'a> {
    context: &'a Context<'a>,
    labels: &'a BTreeMap<String, Vec<String>>,
    result_labels: std::collections::BTreeSet<String>,
}

/// A directory read against the person's words names values for the person, which loosens every
/// rule reading `person`: a tool `lookups` names must be one the policy trusts.
fn check_lookups(
    sources: &SourcesConfig,
    classes: &sources::Classes,
    registry: &ToolRegistry,
    push: &mut dyn FnMut(String, String),
) {
    for (index, pattern) in sources.lookups.iter().enumerate() {
        let name = crate::rules::groups::ToolName::new(pattern);
        for spec in registry.specs().filter(|spec| name.matches(&spec.name)) {
            let trusted = classes
                .of(&spec.name, true)
                .is_some_and(|class| class.trust == crate::provenance::Trust::Trusted);
            if !trusted {
                push(
                    format!("sources.lookups[{index}]"),
                    format!(
                        "{pattern:?} names tool {:?}, which this policy's sources do not trust: a directory names values for the person, so list it under \"trusted\" too (and not under \"untrusted\")",
                        spec.name
                    ),
                );
            }
        }
    }
}

/// Each label names something and covers some tool of the registry.
fn check_labels(
    labels: &BTreeMap<String, Vec<String>>,
    registry: &ToolRegistry,
    push: &mut dyn FnMut(String, String),
) {
    for (label, patterns) in labels {
        let place = format!("labels.{label}");
        if label.trim().is_empty() || patterns.is_empty() {
            push(
                place.clone(),
                "a label has a name and at least one tool".to_owned(),
            );
        }
        if covering(patterns, registry).is_empty() {
            push(place, "labels no tool in the registry".to_owned());
        }
    }
}

/// What every flow rule must be, whatever it looks at: a fresh id, a reason, an action that
/// restricts, approvers that fit it.
fn check_header<'c>(
    config: &'c FlowConfig,
    place: &str,
    taken_ids: &std::collections::BTreeSet<&str>,
    ids: &mut std::collections::BTreeSet<&'c str>,
    push: &mut dyn FnMut(String, String),
) -> (
    Result<Reason, crate::decision::EmptyReason>,
    Option<Arc<crate::decision::Approvers>>,
) {
    if let Some(problem) = crate::rules::id_problem(&config.id) {
        push(place.to_owned(), problem.to_owned());
    } else if taken_ids.contains(config.id.as_str()) || !ids.insert(config.id.as_str()) {
        push(
            place.to_owned(),
            "id repeats another flow's, rule's or limit's id".to_owned(),
        );
    }
    let reason = Reason::new(config.reason.clone());
    if reason.is_err() {
        push(place.to_owned(), "reason is empty".to_owned());
    }
    if config.action == PolicyAction::Allow {
        push(
            place.to_owned(),
            "action must be deny or ask: what a session did can restrict a call, never allow one"
                .to_owned(),
        );
    }
    let approvers = config.approvers.as_ref().map(|approvers| {
        crate::rules::principals::check_approvers(
            approvers,
            config.action,
            place,
            &mut |place, message| push(place, message),
        );
        Arc::new(approvers.clone())
    });
    (reason, approvers)
}

/// A `same` names a field of every tool on each side and one way to compare.
fn check_same(
    same: &SameValue,
    place: &str,
    registry: &ToolRegistry,
    source_tools: &[String],
    tools: &[String],
    push: &mut dyn FnMut(String, String),
) {
    for (pointer, tools, side) in [
        (&same.earlier, source_tools, "earlier"),
        (&same.now, tools, "now"),
    ] {
        for tool in tools {
            let schema = registry.resolve(tool).map(|t| &t.spec().input_schema);
            if schema.map(|s| schema_pointer::lookup(s, pointer))
                != Some(condition::SchemaLookup::Declared)
            {
                push(
                    format!("{place}.{side}"),
                    format!("{pointer:?} names no field of tool {tool:?}'s schema"),
                );
            }
        }
    }
    if same.as_path && (same.normalize || same.case_insensitive) {
        push(
            place.to_owned(),
            "as_path compares paths; normalize and case_insensitive compare text: choose one (paths follow the policy's `paths` settings)".to_owned(),
        );
    }
    if let Err(message) = condition::check_normalization_available(same.normalize) {
        push(place.to_owned(), message);
    }
}

/// What names a rule's history. An `after` history is the rule's own, named by its id: a reload
/// that renames its label, adds a tool to it, widens or narrows its condition or lengthens its
/// window keeps the calls recorded so far — at worst the rule looks at calls its new condition
/// would not have recorded, which only makes it stricter. An `unless_after` history is named by
/// what it records as written (not the tools a label covers now, nor the window): kept calls
/// would let calls through, so a change of what it records starts it empty, which is the strict
/// side for it.
fn history_bucket(config: &FlowConfig, earlier: &EarlierCalls, restricts: bool) -> String {
    let identity = if restricts {
        serde_json::json!({
            "restricts": true,
            "flow": config.id,
            "same": earlier.same.as_ref().map(|same| match same.compared() {
                SameText::Exact => "exact",
                SameText::Path => "path",
                SameText::Folded => "folded",
                SameText::Normalized => "normalized",
            }),
            "by": earlier.by,
        })
    } else {
        serde_json::json!({
        "restricts": restricts,
        "tool": earlier.tool, "label": earlier.label,
        "when": earlier.when,
        // How values compare is part of what is recorded; the exact and path forms keep
        // the identity they had before text options existed.
        "same": earlier.same.as_ref().map(|same| match same.compared() {
            SameText::Exact | SameText::Path => serde_json::json!([&same.earlier, same.as_path]),
            SameText::Folded => serde_json::json!([&same.earlier, "folded"]),
            SameText::Normalized => serde_json::json!([&same.earlier, "normalized"]),
        }),
        "by": earlier.by,
        })
    };
    format!(
        "flow:{}",
        hex_digest(&Sha256::digest(canonical_json(&identity).as_bytes()))
    )
}

/// The registry's tools matching any of `patterns` (exact names or patterns).
fn covering<'r>(patterns: &[String], registry: &'r ToolRegistry) -> Vec<&'r str> {
    let compiled: Vec<crate::rules::groups::ToolName> = patterns
        .iter()
        .map(|pattern| crate::rules::groups::ToolName::new(pattern))
        .collect();
    registry
        .specs()
        .map(|spec| spec.name.as_str())
        .filter(|name| compiled.iter().any(|tool| tool.matches(name)))
        .collect()
}

/// What a flow's parts are compiled against.
pub(super) struct Context<'a> {
    pub(super) registry: &'a ToolRegistry,
    paths: &'a PathSettings,
    normalize_text: bool,
}

impl Context<'_> {
    /// The tools a `tool` or `label` covers, and their names now.
    pub(super) fn target(
        &self,
        place: &str,
        tool: Option<&str>,
        label: Option<&str>,
        labels: &BTreeMap<String, Vec<String>>,
        push: &mut dyn FnMut(String, String),
    ) -> Option<(Covers, Vec<String>)> {
        let patterns: Vec<String> = match (tool, label) {
            (Some(tool), None) => vec![tool.to_owned()],
            (None, Some(label)) => match labels.get(label) {
                Some(patterns) => patterns.clone(),
                None => {
                    push(
                        place.to_owned(),
                        format!("label {label:?} is not defined in labels"),
                    );
                    return None;
                }
            },
            _ => {
                push(
                    place.to_owned(),
                    "needs exactly one of tool and label".to_owned(),
                );
                return None;
            }
        };
        let tools: Vec<String> = covering(&patterns, self.registry)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if tools.is_empty() {
            push(
                place.to_owned(),
                format!("{patterns:?} covers no tool in the registry"),
            );
            return None;
        }
        let covers = if patterns.iter().any(|pattern| is_pattern(pattern)) {
            Covers::Patterns(
                patterns
                    .iter()
                    .map(|pattern| ToolPattern::new(pattern))
                    .collect(),
            )
        } else {
            Covers::Tools(patterns)
        };
        Some((covers, tools))
    }

    /// `condition` compiled for each of `tools`.
    pub(super) fn compile(
        &self,
        condition: &Condition,
        place: &str,
        tools: &[String],
        restrictive: bool,
        push: &mut dyn FnMut(String, String),
    ) -> PerTool {
        let mut out = PerTool::default();
        for tool in tools {
            let Some(definition) = self.registry.resolve(tool) else {
                continue;
            };
            let schema = &definition.spec().input_schema;
            let mut path_fields = std::collections::HashSet::new();
            condition::path_pointers(condition, "", &mut path_fields);
            let scope = Scope {
                lookup: &|pointer| schema_pointer::lookup(schema, pointer),
                paths: self.paths,
                path_fields: &path_fields,
                restrictive,
                base: String::new(),
                normalize_text: self.normalize_text,
            };
            let mut problems = Vec::new();
            match condition::compile(condition, place, &scope, &mut problems) {
                Some(compiled) => {
                    out.0.insert(tool.clone(), compiled);
                }
                None => {
                    for (where_, message) in problems {
                        push(format!("{where_} on tool {tool:?}"), message);
                    }
                }
            }
        }
        out
    }
}
