//! Following upstreams' tool lists while serving: on `notifications/tools/list_changed` (or a
//! restart) the upstream's tools are listed again, judged against their pins, and the registry
//! is replaced — clients are then told the list changed. If the policy in force does not fit the
//! new tools, the registry in force stays and the upstream's changed or vanished tools are held
//! back (answered "nothing ran") until a policy that fits is loaded; the swap is tried again on
//! every policy change.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use rmcp::model::Tool;
use toolgate::{ToolController, ToolRegistry};

use crate::catalog;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::pins::Pins;
use crate::upstream::{Link, list_tools};

/// What the refresher keeps between changes.
struct State {
    config: Config,
    pins: Pins,
    metrics: Arc<Metrics>,
    links: Vec<Arc<Link>>,
    listed: BTreeMap<String, Vec<Tool>>,
    /// Served name → digest, of the registry in force.
    in_force: HashMap<String, String>,
}

/// Follows every upstream of `listed` until aborted.
pub fn follow(
    config: Config,
    pins: Pins,
    metrics: Arc<Metrics>,
    listed: Vec<(Arc<Link>, Vec<Tool>)>,
    in_force: HashMap<String, String>,
    controller: Arc<ToolController>,
) -> tokio::task::JoinHandle<()> {
    let (changed, mut changes) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut watchers = Vec::new();
    for (link, _) in &listed {
        let mut counter = link.list_changes();
        let (name, changed) = (link.name().to_owned(), changed.clone());
        watchers.push(tokio::spawn(async move {
            while counter.changed().await.is_ok() {
                if changed.send(name.clone()).is_err() {
                    return;
                }
            }
        }));
    }
    let mut state = State {
        links: listed.iter().map(|(link, _)| Arc::clone(link)).collect(),
        listed: listed
            .into_iter()
            .map(|(link, tools)| (link.name().to_owned(), tools))
            .collect(),
        config,
        pins,
        metrics,
        in_force,
    };
    tokio::spawn(async move {
        let _watchers = AbortOnDrop(watchers);
        let mut waiting_for_policy: Option<u64> = None;
        loop {
            let poll = state.config.policy_poll;
            tokio::select! {
                name = changes.recv() => {
                    let Some(name) = name else { return };
                    let start = state
                        .links
                        .iter()
                        .find(|link| link.name() == name)
                        .map(|link| link.start_count());
                    let relisted = relist(&mut state, &name).await;
                    let applied = apply(&mut state, &controller);
                    waiting_for_policy = applied.waiting;
                    // A (re)started upstream is sent calls again only once what it lists now was
                    // judged and put in force (or its changes held back).
                    if relisted && applied.reconciled
                        && let Some(start) = start
                        && let Some(link) = state.links.iter().find(|link| link.name() == name)
                    {
                        link.set_verified(start);
                    }
                }
                () = tokio::time::sleep(poll) => {
                    let pins_changed = state.pins.reload_if_changed();
                    let policy_changed = waiting_for_policy
                        .is_some_and(|seen| seen != controller.generation());
                    if pins_changed || policy_changed {
                        waiting_for_policy = apply(&mut state, &controller).waiting;
                    }
                }
            }
        }
    })
}

struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.iter().for_each(tokio::task::JoinHandle::abort);
    }
}

/// Lists upstream `name` again; whether it listed. On failure its last listing stays (and an
/// upstream started again stays unverified: no call is sent to it).
async fn relist(state: &mut State, name: &str) -> bool {
    let Some(link) = state.links.iter().find(|link| link.name() == name) else {
        return false;
    };
    let Ok(peer) = link.peer() else { return false };
    let limits = state.config.limits;
    match list_tools(&peer, &limits).await {
        Ok(tools) => {
            state.listed.insert(name.to_owned(), tools);
            true
        }
        Err(error) => {
            let held = if link.is_verified() {
                "the last list stays"
            } else {
                "no call is sent to it until it lists them"
            };
            tracing::warn!(upstream = %name, "tools not re-listed, {held}: {error}");
            false
        }
    }
}

/// What [`apply`] did: the policy generation to wait past (when the policy does not fit the new
/// tools yet), and whether the latest listings are judged — put in force, found unchanged, or
/// their changes held back — rather than left aside (they could not be served together).
struct Applied {
    waiting: Option<u64>,
    reconciled: bool,
}

/// Builds the registry from the latest listings and puts it in force; `Some(generation)` if the
/// policy does not fit it yet (try again once the controller's generation moves past it).
fn apply(state: &mut State, controller: &ToolController) -> Applied {
    let left_aside = Applied {
        waiting: None,
        reconciled: false,
    };
    let judged = |waiting| Applied {
        waiting,
        reconciled: true,
    };
    let tools: Vec<(Arc<Link>, Vec<Tool>)> = state
        .links
        .iter()
        .map(|link| {
            let listed = state.listed.get(link.name()).cloned().unwrap_or_default();
            (Arc::clone(link), listed)
        })
        .collect();
    let catalog = match catalog::build(&state.config, tools, &state.metrics, &state.pins) {
        Ok(catalog) => catalog,
        Err(error) => {
            tracing::warn!(
                "the upstreams' new tools cannot be served together, the tools in force stay: {error}"
            );
            return left_aside;
        }
    };
    for left in &catalog.left {
        tracing::warn!(upstream = %left.upstream, tool = %left.name, "tool not served: {}", left.why);
    }
    if !catalog.first_seen.is_empty() {
        for (upstream, tools) in &catalog.first_seen {
            state.pins.pin(upstream, tools.iter().cloned());
        }
        if let Err(problem) = state.pins.save() {
            tracing::warn!("{problem}");
        }
    }
    let next: HashMap<String, String> = catalog
        .served
        .iter()
        .map(|served| (served.spec.name.clone(), served.digest.clone()))
        .collect();
    if next == state.in_force {
        return judged(None);
    }
    let served_names: Vec<String> = next.keys().cloned().collect();
    let registry = match ToolRegistry::new(catalog.definitions) {
        Ok(registry) => registry,
        Err(error) => {
            tracing::warn!(
                "the new tools do not make a registry, the tools in force stay: {error}"
            );
            return left_aside;
        }
    };
    match controller.replace_registry(registry) {
        Ok(()) => {
            tracing::info!(
                tools = next.len(),
                "tools re-imported; clients are told the list changed"
            );
            state.metrics.serve_tools(served_names);
            state.in_force = next;
            for link in &state.links {
                link.withhold(HashSet::new());
            }
            judged(None)
        }
        Err(mismatch) => {
            // Hold back what changed or went: the policy was written for the old definitions.
            for link in &state.links {
                let held: HashSet<String> = state
                    .in_force
                    .iter()
                    .filter(|(served, digest)| next.get(*served) != Some(*digest))
                    .filter_map(|(served, _)| match state.config.owner_of(served) {
                        Some((upstream, tool)) if upstream == link.name() => Some(tool.to_owned()),
                        _ => None,
                    })
                    .collect();
                link.withhold(held);
            }
            tracing::warn!(
                "the policy in force does not fit the upstreams' new tools; changed tools are held back until a policy that fits is loaded: {mismatch}"
            );
            judged(Some(controller.generation()))
        }
    }
}
