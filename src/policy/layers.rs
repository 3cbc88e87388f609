//! A stack of policies, highest first: an organisation's layer that no project can loosen.

use std::fmt;
use std::sync::Arc;

use super::{LoadProblem, Policy, PolicyMismatch};
use crate::decision::{PolicyAction, PolicyDecision, Reason};
use crate::registry::ToolRegistry;
use crate::runtime::PreparedToolCall;

/// An ordered stack of policies — e.g. organisation, project, session — deciding together.
///
/// # Guarantees
///
/// - Every layer decides every call. A layer's [fallback](PolicyDecision::fallback) (its default
///   denial: no rule of its own applied) is "no opinion"; every other decision counts.
/// - Deny in any layer wins; then ask; allow only when some layer allows and none asks or denies.
///   So a lower layer can never turn a higher layer's deny or ask into an allow, whatever its
///   rules. When no layer has an opinion, the call is denied (default deny).
/// - The decision names the layer that took it ([`PolicyDecision::layer`]) and keeps that layer's
///   rule id and digest; among layers with the same action the highest is named.
/// - Each layer is checked against the registry on its own; [`replace`](Self::replace) swaps one
///   layer and keeps the others, and a controller refuses the new stack if that layer does not fit
///   (the stack in force keeps the layer's last good version).
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::*;
/// use toolgate::policy::Layers;
///
/// let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
/// let registry = ToolRegistry::new([
///     ToolDefinition::new(ToolSpec::new("shell", "Run.", json!({"type": "object"})), noop)?,
/// ])?;
/// let organisation = ToolPolicy::new(Vec::<String>::new(), ["shell"])?; // shell always asks
/// let project = ToolPolicy::new(["shell"], Vec::<String>::new())?;       // tries to allow it
/// let layers = Layers::new().layer("organisation", organisation)?.layer("project", project)?;
///
/// let controller = ToolController::try_new(registry, layers)?;
/// let outcome = controller.handle(ToolCall::new("c1", "shell", json!({})));
/// let Outcome::PendingApproval(request) = outcome else { panic!("the organisation asks") };
/// assert_eq!(request.reason.as_str(), "tool requires user confirmation");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct Layers {
    // Highest first. Invariant: names are unique and not empty, and so are the counters' names.
    layers: Vec<Layer>,
}

/// A layer's name, the name its counters are kept under, and its policy.
type Layer = (Arc<str>, Arc<str>, Arc<dyn Policy>);

impl fmt::Debug for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.layers.iter().map(|(name, _, _)| name))
            .finish()
    }
}

/// A layer could not be added or replaced: the program composing the stack is at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayerError {
    /// Two layers would have this name, or it is empty.
    #[error("layer name {name:?} is empty or already used")]
    BadName {
        /// The name.
        name: String,
    },
    /// No layer has this name.
    #[error("no layer is named {name:?}")]
    Unknown {
        /// The name.
        name: String,
    },
}

/// A constant, so the reason is checked when the crate compiles, not on every call.
const NO_LAYER_ALLOWS: Reason = Reason::from_static("no layer allows this call (default deny)");

impl Layers {
    /// An empty stack: it denies every call.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same stack with `policy` added below the existing layers.
    ///
    /// # Errors
    ///
    /// [`LayerError::BadName`] if `name` is empty or already used.
    pub fn layer(
        self,
        name: impl Into<String>,
        policy: impl Policy + 'static,
    ) -> Result<Self, LayerError> {
        let name = name.into();
        self.layer_counted_as(name.clone(), name, policy)
    }

    /// [`layer`](Self::layer), its counters (its limits' calls, its flow rules' history, its
    /// labels) kept under `counters` instead of its name. A name shown to people — a file's path
    /// — may differ between instances sharing a counters' store that must count together (one
    /// mounts the file elsewhere, or names it relatively); a name of the layer's place in their
    /// common configuration does not.
    ///
    /// # Errors
    ///
    /// [`LayerError::BadName`] if `name` is empty or another layer's name, or `counters` is empty
    /// or another layer's counters (two layers never share counters: each one's limits must hold).
    pub fn layer_counted_as(
        mut self,
        name: impl Into<String>,
        counters: impl Into<String>,
        policy: impl Policy + 'static,
    ) -> Result<Self, LayerError> {
        let name = name.into();
        let counters = counters.into();
        if name.trim().is_empty() || self.layers.iter().any(|(n, _, _)| **n == *name) {
            return Err(LayerError::BadName { name });
        }
        if counters.trim().is_empty() || self.layers.iter().any(|(_, c, _)| **c == *counters) {
            return Err(LayerError::BadName { name: counters });
        }
        self.layers
            .push((Arc::from(name), Arc::from(counters), Arc::new(policy)));
        Ok(self)
    }

    /// A new stack with layer `name` replaced by `policy`, the other layers shared. Put it in force
    /// with [`ToolController::replace_policy`](crate::ToolController::replace_policy), which checks
    /// every layer against the registry and keeps the stack in force if one does not fit.
    ///
    /// # Errors
    ///
    /// [`LayerError::Unknown`] if no layer has this name.
    pub fn replace(&self, name: &str, policy: impl Policy + 'static) -> Result<Self, LayerError> {
        let mut next = self.clone();
        let Some(slot) = next.layers.iter_mut().find(|(n, _, _)| &**n == name) else {
            return Err(LayerError::Unknown {
                name: name.to_owned(),
            });
        };
        slot.2 = Arc::new(policy);
        Ok(next)
    }

    /// The layers' names, highest first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.layers.iter().map(|(name, _, _)| &**name)
    }
}

impl Policy for Layers {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        let mut ask = None;
        let mut allow = None;
        let mut more_approvers = Vec::new();
        // Whether an asking layer named no approvers: its vote against the asker answering on
        // the page is kept beside the others' entries.
        let mut unnamed = false;
        for (name, _, policy) in &self.layers {
            let decision = policy.decide(call);
            if decision.fallback {
                continue;
            }
            match decision.action {
                // Layers are highest first: the first deny is the highest one.
                PolicyAction::Deny => return decision.with_layer(Arc::clone(name)),
                PolicyAction::Ask if ask.is_none() => {
                    unnamed |= decision.approvers.is_empty();
                    ask = Some((name, decision));
                }
                PolicyAction::Ask => {
                    unnamed |= decision.approvers.is_empty();
                    more_approvers.extend(decision.approvers);
                }
                PolicyAction::Allow if allow.is_none() => allow = Some((name, decision)),
                PolicyAction::Allow => {}
            }
        }
        if let Some((_, decision)) = &mut ask {
            // Every asking layer's approvers must agree to an answer, not just the highest's.
            decision.approvers.extend(more_approvers);
            crate::decision::bar_self_for_unnamed(&mut decision.approvers, unnamed);
        }
        match ask.or(allow) {
            Some((name, decision)) => decision.with_layer(Arc::clone(name)),
            None => PolicyDecision::fallback_deny(NO_LAYER_ALLOWS),
        }
    }

    /// Every layer's limits: a call runs only if it fits them all. Each slot names its layer; a
    /// call no layer can count is denied, naming the layer.
    fn rate_slots(&self, call: &PreparedToolCall) -> Result<Vec<super::RateSlot>, PolicyDecision> {
        let mut slots = Vec::new();
        for (name, counters, policy) in &self.layers {
            // Each layer counts in its own counters: two layers may use one limit id with
            // different windows and caps, and each must hold.
            let named = |slot: super::RateSlot| super::RateSlot {
                bucket: Arc::from(format!("{}:{counters}/{}", counters.len(), slot.bucket)),
                layer: Some(nested(name, slot.layer.as_deref())),
                ..slot
            };
            match policy.rate_slots(call) {
                Ok(more) => slots.extend(more.into_iter().map(named)),
                Err(denial) => return Err(denial.with_layer(Arc::clone(name))),
            }
        }
        Ok(slots)
    }

    /// Whether any layer judges the tool's results.
    fn judges_results(&self, tool_name: &str) -> bool {
        self.layers
            .iter()
            .any(|(_, _, policy)| policy.judges_results(tool_name))
    }

    /// Every layer's result rules in turn (a result one withholds reaches the next as the
    /// error it became); each layer's label records in that layer's counters, as its flow rules
    /// read them.
    fn judge_result(
        &self,
        tool_name: &str,
        principal: Option<&crate::Principal>,
        result: &mut crate::ToolResult,
    ) -> Vec<super::RateSlot> {
        let mut slots = Vec::new();
        for (name, counters, policy) in &self.layers {
            let named = |slot: super::RateSlot| super::RateSlot {
                bucket: Arc::from(format!("{}:{counters}/{}", counters.len(), slot.bucket)),
                layer: Some(nested(name, slot.layer.as_deref())),
                ..slot
            };
            slots.extend(
                policy
                    .judge_result(tool_name, principal, result)
                    .into_iter()
                    .map(named),
            );
        }
        slots
    }

    /// What every layer reading provenance says, together: the named sources of all, and
    /// trusted only if every layer that classifies tools (has `sources`) says so — untrusted if
    /// one says otherwise, or if none classifies — and a directory (`lookups`) only if every
    /// layer reading provenance lists it; `None` when no layer reads provenance.
    fn result_sources(&self, tool_name: &str) -> Option<crate::provenance::ResultSources> {
        use crate::provenance::Trust;
        let mut combined: Option<crate::provenance::ResultSources> = None;
        let mut lookup = true;
        let mut classifying = Vec::new();
        for (_, _, policy) in &self.layers {
            let Some(sources) = policy.result_sources(tool_name) else {
                continue;
            };
            if sources.classified {
                classifying.push(sources.trust);
            }
            // Every layer reading provenance must list the directory, whether it classifies
            // tools or not: a layer whose rule reads `person` and that lists no lookups keeps
            // its `person` the person's own words.
            lookup &= sources.lookup;
            match &mut combined {
                None => combined = Some(sources),
                Some(so_far) => {
                    for name in sources.named {
                        if !so_far.named.contains(&name) {
                            so_far.named.push(name);
                        }
                    }
                }
            }
        }
        let mut combined = combined?;
        let trusted =
            !classifying.is_empty() && classifying.iter().all(|trust| *trust == Trust::Trusted);
        // A directory names values for the person, which loosens the rules that read `person`.
        combined.lookup = trusted && lookup;
        combined.trust = if trusted {
            Trust::Trusted
        } else {
            Trust::Untrusted
        };
        combined.classified = !classifying.is_empty();
        Some(combined)
    }

    /// Every layer denies every call to the tool (by a rule or by its default): then each call
    /// is denied by a layer or by no layer having an opinion. A layer's own "denies every call"
    /// may be its default, which in a stack is no opinion, so one layer alone cannot say it.
    fn denies_every_call(&self, tool_name: &str) -> bool {
        self.layers
            .iter()
            .all(|(_, _, policy)| policy.denies_every_call(tool_name))
    }

    /// Deny in any layer wins: a layer that denies every call of the caller's hides the tool;
    /// otherwise it is hidden where no layer could let a call of theirs pass.
    fn denies_every_call_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        self.always_denies_for(tool_name, caller)
            || self
                .layers
                .iter()
                .all(|(_, _, policy)| policy.denies_every_call_for(tool_name, caller))
    }

    fn always_denies_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        self.layers
            .iter()
            .any(|(_, _, policy)| policy.always_denies_for(tool_name, caller))
    }

    fn check_registry(&self, registry: &ToolRegistry) -> Result<(), PolicyMismatch> {
        let mut problems = Vec::new();
        for (name, _, policy) in &self.layers {
            if let Err(mismatch) = policy.check_registry(registry) {
                problems.extend(mismatch.problems.into_iter().map(|problem| LoadProblem {
                    place: format!("layer {name:?}: {}", problem.place),
                    message: problem.message,
                }));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(PolicyMismatch { problems })
        }
    }
}

/// The layer a slot names: `outer/inner` for a slot of a stack inside a stack, so two inner
/// layers' rules that share an id never share a group (see `RateSlot::group`).
fn nested(outer: &Arc<str>, inner: Option<&str>) -> Arc<str> {
    match inner {
        Some(inner) => Arc::from(format!("{outer}/{inner}")),
        None => Arc::clone(outer),
    }
}
