//! Names of *gates*: registry entries that stand for a protocol operation an MCP server judges as
//! a call (reading a resource, getting a prompt, an upstream's sampling or elicitation request),
//! named with the operation's method as suffix. The policy treats them apart from tools in one
//! way: a pattern allows or asks for a gate only if it ends with the gate's method.

/// The methods a gate's name ends with.
pub(crate) const GATE_METHODS: [&str; 4] = [
    "resources/read",
    "prompts/get",
    "sampling/createMessage",
    "elicitation/create",
];

/// The method `name` ends with, if it names a gate.
pub(crate) fn gate_method(name: &str) -> Option<&'static str> {
    GATE_METHODS
        .iter()
        .copied()
        .find(|method| name.ends_with(method))
}
