//! `policy diff OLD NEW --config FILE`, and what `check` says about the policy layers in force:
//! examples checked, dead and shadowed rules, layers that add nothing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};
use toolgate::rules::PolicyLoadError;
use toolgate::rules::analysis::{self, Analysed, ToolDiff};
use toolgate::{RulePolicy, ToolRegistry};

pub(crate) use crate::policy::spec_registry;

/// The files a command line names: one, or several separated by commas (layers, highest first).
fn files(argument: &str) -> Vec<PathBuf> {
    argument.split(',').map(PathBuf::from).collect()
}

/// The policy of `paths`, layers highest first.
fn analysed(paths: &[PathBuf], registry: &ToolRegistry) -> Result<Analysed, Vec<String>> {
    let mut layers = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        match RulePolicy::from_file(path, registry) {
            Ok(policy) => layers.push((path.display().to_string(), policy)),
            Err(error) => problems.push(load_problem(path, &error)),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Analysed::layers(layers).map_err(|error| vec![error.to_string()])
}

fn load_problem(path: &Path, error: &PolicyLoadError) -> String {
    format!("policy {}: {error}", path.display())
}

/// Compares two policies over the config's tools: one JSON line per tool, then a summary.
/// Exit 0 when every tool decides alike, 1 on a problem, 3 when a witness or an unknown was found.
pub async fn diff(config_path: &Path, old: &str, new: &str) -> ExitCode {
    let Some(registry) = registry_of(config_path).await else {
        return ExitCode::FAILURE;
    };
    let (old, new) = match (
        analysed(&files(old), &registry),
        analysed(&files(new), &registry),
    ) {
        (Ok(old), Ok(new)) => (old, new),
        (old, new) => {
            super::report(
                old.err()
                    .into_iter()
                    .flatten()
                    .chain(new.err().into_iter().flatten()),
            );
            return ExitCode::FAILURE;
        }
    };
    let diffs = analysis::diff(&old, &new, &registry);
    let (mut same, mut differ, mut unknown) = (0, 0, 0);
    for tool in &diffs {
        match tool {
            ToolDiff::Same { .. } => same += 1,
            ToolDiff::Differs { .. } => differ += 1,
            _ => unknown += 1,
        }
        println!("{}", json!(tool));
    }
    eprintln!(
        "{} tools: {same} decide every valid call alike, {differ} differ (witness calls are printed), {unknown} unknown (the reason is printed)",
        diffs.len()
    );
    if differ + unknown == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    }
}

/// Explains how the config's layers decide one call: a JSON object on stdout. Exit 0 when the
/// call is allowed, 3 when it is denied or held, 1 on a problem (the call does not fit its tool).
pub async fn explain(
    config_path: &Path,
    tool: &str,
    arguments: &str,
    caller: Option<toolgate::Principal>,
) -> ExitCode {
    let arguments: Value = match serde_json::from_str(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            super::report([format!("the arguments are not JSON: {error}")]);
            return ExitCode::FAILURE;
        }
    };
    let Some(config) = super::config_or_report(config_path) else {
        return ExitCode::FAILURE;
    };
    let Some(registry) = registry_of(config_path).await else {
        return ExitCode::FAILURE;
    };
    let policy = match analysed(&config.policy_layers, &registry) {
        Ok(policy) => policy,
        Err(problems) => {
            super::report(problems);
            return ExitCode::FAILURE;
        }
    };
    let mut call = toolgate::ToolCall::new("explain", tool, arguments);
    if let Some(caller) = caller {
        call = call.with_principal(caller);
    }
    match analysis::explain(&policy, &registry, call) {
        Ok(explained) => {
            println!("{}", json!(explained));
            if explained.decision.action == toolgate::PolicyAction::Allow {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            }
        }
        Err(rejection) => {
            super::report([rejection]);
            ExitCode::FAILURE
        }
    }
}

/// The config's tools: read from the pins file when it keeps a definition for every upstream
/// (no upstream is started — the tools in force are the pinned ones), else from its upstreams
/// started once; or the problems printed.
async fn registry_of(config_path: &Path) -> Option<ToolRegistry> {
    let config = super::config_or_report(config_path)?;
    let pins = super::pins_or_report(&config)?;
    if let Some(specs) = pinned_specs(&config, &pins) {
        eprintln!(
            "toolgate-mcp-gateway: the tools are read from the pins file (no upstream was started): {} tools",
            specs.len()
        );
        return spec_registry(specs)
            .map_err(|problem| super::report([problem]))
            .ok();
    }
    let started = super::start_or_report(&config, &pins).await?;
    let specs = started
        .definitions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .map(|definition| definition.spec().clone())
        .collect();
    spec_registry(specs)
        .map_err(|problem| super::report([problem]))
        .ok()
}

/// The served specs of every upstream's pinned definitions, under their served names; `None`
/// when an upstream has none kept (never pinned, or pinned before definitions were kept).
fn pinned_specs(
    config: &crate::config::Config,
    pins: &crate::pins::Pins,
) -> Option<Vec<toolgate::ToolSpec>> {
    let mut specs = Vec::new();
    for upstream in &config.upstreams {
        let pinned = pins.pinned(&upstream.name);
        if pinned.is_empty() {
            return None;
        }
        for (tool, digest) in pinned {
            // Only what `serve` would serve: the name its own, the definition the one pinned.
            let Some(served) = config.claimed_name(&upstream.name, &tool.name) else {
                continue;
            };
            let spec = toolgate::ToolSpec::new(
                served,
                tool.description.as_deref().unwrap_or_default(),
                Value::Object((*tool.input_schema).clone()),
            );
            let noop = |_: &Value| -> Result<String, toolgate::ToolError> { Ok(String::new()) };
            let matches = toolgate::ToolDefinition::new(spec.clone(), noop)
                .is_ok_and(|definition| definition.digest() == digest);
            if !matches {
                eprintln!(
                    "toolgate-mcp-gateway: the pins file's definition of {} does not match its digest; the upstreams are started instead",
                    crate::shown::quoted(&tool.name)
                );
                return None;
            }
            specs.push(spec);
        }
        // The gates `serve` registers beside the tools: a policy naming them is judged here as
        // it is when served.
        specs.extend(crate::gates::specs(config, upstream));
    }
    (!config.upstreams.is_empty()).then_some(specs)
}

/// What `check` prints about the layers: each file's examples (all passed, or it would not have
/// loaded), then every dead or shadowed rule and every layer that adds nothing, as warnings.
pub(crate) fn layer_report(layers: &[PathBuf], registry: &ToolRegistry) -> Vec<String> {
    let mut lines = Vec::new();
    let mut loaded = Vec::new();
    for path in layers {
        match RulePolicy::from_file(path, registry) {
            Ok(policy) => {
                let examples = policy.config().examples.len();
                lines.push(format!(
                    "  policy layer {}: {examples} example{} decided as written",
                    path.display(),
                    if examples == 1 { "" } else { "s" }
                ));
                let untested = policy.rules_without_examples(registry);
                if !untested.is_empty() {
                    lines.push(format!(
                        "  policy layer {}: {} of {} rules decide no example: {}",
                        path.display(),
                        untested.len(),
                        policy.config().rules.len(),
                        untested.join(", ")
                    ));
                }
                loaded.push((path.display().to_string(), policy));
            }
            Err(error) => lines.push(format!("  warning: {}", load_problem(path, &error))),
        }
    }
    if let Ok(stack) = Analysed::layers(loaded) {
        for finding in analysis::findings(&stack, registry) {
            lines.push(format!(
                "  warning: layer {}: {}",
                finding.layer, finding.message
            ));
        }
    }
    lines
}
