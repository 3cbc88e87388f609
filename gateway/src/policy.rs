//! The policy files of a config, as the layers of one policy (highest first: a deny in any layer
//! wins), each followed while the gateway runs and applied only when it loads whole; then one
//! layer per tool set (see `crate::tool_sets`), holding the set's own policy file if it has one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolgate::policy::Layers;
use toolgate::rules::PolicyLoadError;
use toolgate::{Policy, RulePolicy, ToolController, ToolRegistry};

use crate::tool_sets::{ToolSetConfig, ToolSetLayer};

/// A registry of `specs` whose handlers never run: what the analysis validates calls against.
pub fn spec_registry(specs: Vec<toolgate::ToolSpec>) -> Result<ToolRegistry, String> {
    let noop = |_: &serde_json::Value| -> Result<String, toolgate::ToolError> {
        Err(toolgate::ToolError::new("the policy analysis runs no tool"))
    };
    let definitions = specs
        .into_iter()
        .map(|mut spec| {
            // The analysis judges what goes in; a declared output (an upstream's
            // `outputSchema`) is no part of it, and a handler that runs nothing has none.
            spec.output_schema = None;
            toolgate::ToolDefinition::new(spec, noop).map_err(|error| error.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    ToolRegistry::new(definitions).map_err(|error| error.to_string())
}

/// A policy layer that did not load: the config key naming it, its file, why.
#[derive(Debug, thiserror::Error)]
#[error("{key}: policy {}: {error}", path.display())]
pub struct LayerLoadError {
    /// `policy.layers[N]` or `tool_sets.NAME.policy`.
    pub key: String,
    pub path: PathBuf,
    #[source]
    pub error: PolicyLoadError,
}

/// One loaded layer: its file and the digest of what is in force.
#[derive(Debug, Clone)]
pub struct LayerState {
    pub path: PathBuf,
    /// The tool set whose own layer the file is, if it is one.
    pub set: Option<Arc<ToolSetConfig>>,
    pub digest: String,
    text: Option<String>,
    // The controller's generation when the text was refused: once the tools change, it is tried
    // again (a rule naming a tool that was held back may fit now).
    refused_at: Option<u64>,
}

/// The layers in force and what each file held when it was last applied.
#[derive(Debug, Clone)]
pub struct PolicyStack {
    pub layers: Layers,
    pub states: Vec<LayerState>,
}

/// The layer name of a file in the stack: the path as configured, or a set's group.
fn layer_name(path: &Path, set: Option<&ToolSetConfig>) -> String {
    set.map_or_else(|| path.display().to_string(), ToolSetConfig::group)
}

/// A set's policy file with `sources`: said at load, since the set's layer ignores them (see
/// `ToolSetLayer::result_sources`).
fn warn_of_ignored_sources(text: Option<&str>, set: Option<&ToolSetConfig>) {
    let Some(set) = set else { return };
    let has_sources = text
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .is_some_and(|policy| policy.get("sources").is_some());
    if has_sources {
        tracing::warn!(
            "tool set {}: its policy's `sources` are ignored: only the main layers classify where results come from (a set's classification would reach every caller)",
            set.name
        );
    }
}

/// The layer a file's policy makes: itself, or the set's layer around it.
fn layer_of(policy: RulePolicy, set: Option<&Arc<ToolSetConfig>>) -> Arc<dyn Policy> {
    match set {
        None => Arc::new(policy),
        Some(set) => Arc::new(ToolSetLayer::new(Arc::clone(set), Some(Arc::new(policy)))),
    }
}

/// Loads every file in `paths`, then each of `sets` (with its own file, if any) against
/// `registry`; every failure is returned.
///
/// # Errors
///
/// Each file that does not read or load, with its path.
pub fn load(
    paths: &[PathBuf],
    sets: &[ToolSetConfig],
    registry: &ToolRegistry,
) -> Result<PolicyStack, Vec<LayerLoadError>> {
    let mut layers = Layers::new();
    let mut states = Vec::new();
    let mut problems = Vec::new();
    // The main layers in order, then the sets in name order (a set without a file of its own
    // is a layer all the same: it denies what is outside it).
    let files = paths
        .iter()
        .enumerate()
        .map(|(at, path)| (Some(path), None, format!("policy.layers[{at}]")))
        .chain(sets.iter().map(|set| {
            let key = format!("tool_sets.{}.policy", set.name);
            (set.policy.as_ref(), Some(Arc::new(set.clone())), key)
        }));
    for (path, set, key) in files {
        let Some(path) = path else {
            let set = set.expect("only a set has no file");
            match layers
                .clone()
                .layer(set.group(), ToolSetLayer::new(set, None))
            {
                Ok(next) => layers = next,
                Err(error) => problems.push(named_twice(key, PathBuf::new(), &error)),
            }
            continue;
        };
        let text = toolgate::files::read_text(path, toolgate::files::MAX_POLICY_FILE_BYTES).ok();
        let loaded = match &text {
            Some(text) => RulePolicy::from_json(text, registry),
            None => RulePolicy::from_file(path, registry),
        };
        match loaded {
            Ok(policy) => {
                warn_of_ignored_sources(text.as_deref(), set.as_deref());
                let name = layer_name(path, set.as_deref());
                states.push(LayerState {
                    path: path.clone(),
                    digest: policy.digest().to_owned(),
                    text,
                    refused_at: None,
                    set: set.clone(),
                });
                // A main layer's counters are kept under its place in the config
                // (`policy.layers[0]`), never its path: instances of one deployment mounting the
                // file elsewhere, or naming it relatively, count together. A set's under its group.
                let counters = if set.is_some() {
                    name.clone()
                } else {
                    key.clone()
                };
                let layer = layer_of(policy, set.as_ref());
                match layers.clone().layer_counted_as(name, counters, layer) {
                    Ok(next) => layers = next,
                    // A path spelled as a set's group (`toolset:ops`, beside a config in the
                    // working directory): refused, as a file named twice is.
                    Err(error) => problems.push(named_twice(key, path.clone(), &error)),
                }
            }
            Err(error) => problems.push(LayerLoadError {
                key,
                path: path.clone(),
                error,
            }),
        }
    }
    if problems.is_empty() {
        Ok(PolicyStack { layers, states })
    } else {
        Err(problems)
    }
}

/// A layer whose name or counters another layer has: `error` said as a problem of `key`.
fn named_twice(key: String, path: PathBuf, error: &toolgate::policy::LayerError) -> LayerLoadError {
    LayerLoadError {
        key,
        path,
        error: PolicyLoadError::Invalid {
            problems: vec![toolgate::policy::LoadProblem {
                place: "the layer's name".to_owned(),
                message: error.to_string(),
            }],
        },
    }
}

/// Follows the files of `stack` every `every`: a changed file is loaded against the registry in
/// force and replaces its layer only if it loads whole; otherwise the layer in force stays and the
/// error is logged once per change.
pub fn watch(
    mut stack: PolicyStack,
    controller: Arc<ToolController>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            for index in 0..stack.states.len() {
                check(&mut stack, index, &controller);
            }
        }
    })
}

fn check(stack: &mut PolicyStack, index: usize, controller: &ToolController) {
    let path = stack.states[index].path.clone();
    let text = toolgate::files::read_text(&path, toolgate::files::MAX_POLICY_FILE_BYTES).ok();
    let retry = stack.states[index]
        .refused_at
        .is_some_and(|generation| generation != controller.generation());
    if text.is_some() && text == stack.states[index].text && !retry {
        return;
    }
    let set = stack.states[index].set.clone();
    let name = layer_name(&path, set.as_deref());
    let mut digest = None;
    let mut applied = None;
    let outcome = controller.try_replace_policy(|registry| {
        let policy = match &text {
            Some(text) => RulePolicy::from_json(text, registry),
            None => RulePolicy::from_file(&path, registry),
        }?;
        digest = Some(policy.digest().to_owned());
        let next = stack
            .layers
            .replace(&name, layer_of(policy, set.as_ref()))
            .expect("the layer is in the stack");
        applied = Some(next.clone());
        Ok::<_, PolicyLoadError>(next)
    });
    let unreadable = text.is_none();
    match outcome {
        Ok(()) => {
            warn_of_ignored_sources(text.as_deref(), set.as_deref());
            if let Some(applied) = applied {
                stack.layers = applied;
            }
            let digest = digest.unwrap_or_default();
            tracing::info!(policy = %path.display(), %digest, "policy layer reloaded");
            stack.states[index].digest = digest;
            stack.states[index].text = text;
            stack.states[index].refused_at = None;
        }
        Err(error) => {
            // A file being replaced can be unreadable for a moment: said once it stays so.
            if (!unreadable || stack.states[index].text.is_some()) && !retry {
                tracing::warn!(policy = %path.display(), "policy layer not reloaded, the layer in force stays: {error}");
            }
            stack.states[index].text = text;
            stack.states[index].refused_at = Some(controller.generation());
        }
    }
}
