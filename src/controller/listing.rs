//! What a tool host shows: the tools the policy in force does not deny outright, and a counter
//! that tells when the registry or the policy was replaced (so a host can say "the list changed").

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use super::ToolController;
use crate::contract::{Principal, ToolSpec};

/// The most callers whose lists a controller keeps (see
/// [`ToolController::listed_specs_for`]).
pub(super) const MAX_LISTINGS_KEPT: usize = 1024;

/// A caller as a listing depends on it: its id and its groups, sorted (`None`: no principal).
type CallerKey = Option<(String, Vec<String>)>;

/// The lists worked out for the registry and policy of one generation, by caller.
#[derive(Debug, Default)]
pub(super) struct Listings {
    generation: u64,
    by_caller: HashMap<CallerKey, Arc<[ToolSpec]>>,
}

impl ToolController {
    /// The specs of the current registry, in registration order, leaving out every tool the policy
    /// in force denies whatever its arguments ([`Policy::denies_every_call`](crate::Policy::denies_every_call)).
    /// A hidden tool is still gated: calling it by name is denied as before. While the policy does
    /// not fit the registry, every call is denied and the list is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::*;
    ///
    /// let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    /// let tool = |name: &str| ToolDefinition::new(ToolSpec::new(name, "", json!({})), noop);
    /// let controller = ToolController::new(
    ///     ToolRegistry::new([tool("read")?, tool("shell")?])?,
    ///     ToolPolicy::new(["read"], Vec::<String>::new())?,
    /// );
    /// let listed: Vec<String> = controller.listed_specs().into_iter().map(|s| s.name).collect();
    /// assert_eq!(listed, ["read"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn listed_specs(&self) -> Vec<ToolSpec> {
        let gate = self.gate();
        gate.runtime
            .registry()
            .specs()
            .filter(|spec| !gate.policy.denies_every_call(&spec.name))
            .cloned()
            .collect()
    }

    /// The specs `caller` may see, in registration order: every tool of the current registry but
    /// those the policy in force denies to every call of `caller`, whatever the arguments
    /// ([`Policy::denies_every_call_for`](crate::Policy::denies_every_call_for)) — so a caller
    /// outside a rule's `principals` does not see a tool only that rule allows. A hidden tool is
    /// still gated: calling it by name is denied as before.
    ///
    /// Worked out once per registry and policy in force and per caller (its id and groups), then
    /// kept: a host may call this for every `tools/list`. The lists of at most 1,024 callers are
    /// kept; past them they are worked out again.
    pub fn listed_specs_for(&self, caller: Option<&Principal>) -> Arc<[ToolSpec]> {
        let generation = self.generation();
        let key = caller.map(|principal| {
            let mut groups = principal.groups.clone();
            groups.sort();
            (principal.id.clone(), groups)
        });
        {
            let kept = self.listings.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.generation == generation
                && let Some(listed) = kept.by_caller.get(&key)
            {
                return Arc::clone(listed);
            }
        }
        let gate = self.gate();
        let listed: Arc<[ToolSpec]> = gate
            .runtime
            .registry()
            .specs()
            .filter(|spec| !gate.policy.denies_every_call_for(&spec.name, caller))
            .cloned()
            .collect();
        let mut kept = self.listings.lock().unwrap_or_else(PoisonError::into_inner);
        // Worked out against the gate read after `generation`: kept only if no newer gate came.
        if kept.generation != generation || kept.by_caller.len() >= MAX_LISTINGS_KEPT {
            kept.by_caller.clear();
            kept.generation = generation;
        }
        if self.generation() == generation {
            kept.by_caller.insert(key, Arc::clone(&listed));
        }
        listed
    }

    /// A number that grows each time the registry or the policy in force is replaced; equal
    /// readings mean the same pair was in force at both (what a host needs to announce a changed
    /// tool list).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}
