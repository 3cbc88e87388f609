//! What a tool host shows: the tools the policy in force does not deny outright, and a counter
//! that tells when the registry or the policy was replaced (so a host can say "the list changed").

use std::sync::atomic::Ordering;

use super::ToolController;
use crate::contract::ToolSpec;

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

    /// A number that grows each time the registry or the policy in force is replaced; equal
    /// readings mean the same pair was in force at both (what a host needs to announce a changed
    /// tool list).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}
