//! Preparation: a proposed call resolved by exact name and validated, or a typed rejection.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::contract::{ToolCall, ToolResult, quote_bounded};
use crate::definition::{ArgumentErrors, MAX_ARGUMENT_DEPTH, ToolDefinition, drop_deep};
use crate::registry::ToolRegistry;

/// A call whose tool resolved and whose arguments validated against that tool's schema.
///
/// # Guarantees
///
/// Only [`ToolRuntime::prepare`] builds one (G1): the fields are private, and the type is not
/// `Clone`, `Default` or `Deserialize`. Its content is read-only, so the arguments a policy sees
/// are the arguments that validated and the arguments that will run. For a
/// [`typed`](ToolDefinition::typed) tool they are the normalized arguments — read into the Rust
/// type and written back, defaults filled in — so the policy and an approval judge what the
/// handler will receive. It carries the definition
/// it validated against (shared, not copied), so execution uses the same handler and schema.
///
/// A struct literal fails with "cannot construct `PreparedToolCall` with struct literal syntax due
/// to private fields" (`ui-tests/forge_prepared_literal.rs`); assigning to `call().arguments`
/// fails with "cannot assign to data in a `&` reference" (`ui-tests/mutate_prepared_arguments.rs`).
pub struct PreparedToolCall {
    // Invariant: `call.tool_name == definition.spec().name`, `definition.validate(&call.arguments)`
    // succeeds, and for a typed tool `call.arguments` is the normalized value (what the handler
    // receives), not what the model sent.
    call: ToolCall,
    definition: Arc<ToolDefinition>,
    // Invariant: `definition`'s position in the registry the call was prepared against.
    position: usize,
}

impl fmt::Debug for PreparedToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Arguments may hold secrets; a Debug print names the call, not its values.
        f.debug_struct("PreparedToolCall")
            .field("call_id", &self.call.call_id)
            .field("tool_name", &self.call.tool_name)
            .finish_non_exhaustive()
    }
}

impl PreparedToolCall {
    /// The validated call, read-only.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The id of the call, which every result for it carries.
    pub fn call_id(&self) -> &str {
        &self.call.call_id
    }

    /// The resolved tool's name.
    pub fn tool_name(&self) -> &str {
        &self.call.tool_name
    }

    /// The validated arguments, read-only (for a typed tool, normalized: what the handler receives).
    pub fn arguments(&self) -> &Value {
        &self.call.arguments
    }

    /// The definition the arguments validated against.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The definition's position in the registry the call was prepared against, for tables kept
    /// beside that registry (see `ToolRegistry::position`).
    pub(crate) fn position(&self) -> usize {
        self.position
    }

    /// The call and its definition, for execution only.
    pub(crate) fn into_parts(self) -> (ToolCall, Arc<ToolDefinition>) {
        (self.call, self.definition)
    }

    /// Gives back the plain call, dropping the proof that it validated.
    pub fn into_call(self) -> ToolCall {
        self.call
    }
}

/// Resolves calls against a registry, validates them, and runs authorized ones.
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::{Rejection, ToolCall, ToolDefinition, ToolError, ToolRegistry, ToolRuntime, ToolSpec};
///
/// let echo = |args: &Value| -> Result<String, ToolError> { Ok(args.to_string()) };
/// let spec = ToolSpec::new("echo", "Echo.", json!({"type": "object", "required": ["x"]}));
/// let runtime = ToolRuntime::new(ToolRegistry::new([ToolDefinition::new(spec, echo)?])?);
///
/// let unknown = runtime.prepare(ToolCall::new("c1", "rm", json!({}))).unwrap_err();
/// assert!(matches!(&unknown, Rejection::UnknownTool { tool, .. } if tool == "rm"));
/// assert_eq!(unknown.into_result().content, "unknown tool: rm");
/// let invalid = runtime.prepare(ToolCall::new("c2", "echo", json!({}))).unwrap_err();
/// assert!(matches!(&invalid, Rejection::InvalidArguments { errors, .. } if errors.violations()[0].keyword == "required"));
/// assert!(invalid.to_string().starts_with("invalid arguments for echo: 1 violation"));
/// let prepared = runtime.prepare(ToolCall::new("c3", "echo", json!({"x": 1})))?;
/// assert_eq!(prepared.call_id(), "c3");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct ToolRuntime {
    registry: ToolRegistry,
}

impl ToolRuntime {
    /// A runtime over `registry`.
    pub fn new(registry: ToolRegistry) -> Self {
        Self { registry }
    }

    /// The registry calls are resolved against.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// Resolves the call's tool by exact name and validates its arguments.
    ///
    /// # Errors
    ///
    /// A [`Rejection`] carrying the call's id: an unknown tool, arguments nested too deep, or
    /// invalid arguments with their violations. Its text for the model (`Display`, or
    /// [`Rejection::into_result`]) quotes no argument value and no property name the schema does
    /// not declare, and is at most a few KiB long.
    ///
    /// A [`typed`](ToolDefinition::typed) tool's arguments are normalized after validation and
    /// validated again; the prepared call holds the normalized arguments.
    // Inlined into the controller, with the rejections kept out of line: built in the caller's
    // frame, the prepared call is not copied out of a returned `Result` and back.
    #[inline(always)]
    pub fn prepare(&self, call: ToolCall) -> Result<PreparedToolCall, Rejection> {
        prepare_in(&self.registry, call)
    }
}

/// [`ToolRuntime::prepare`] against `registry`: the one place a [`PreparedToolCall`] is built
/// (G1), also for the policy analysis, which decides calls as the controller would.
#[inline(always)]
pub(crate) fn prepare_in(
    registry: &ToolRegistry,
    mut call: ToolCall,
) -> Result<PreparedToolCall, Rejection> {
    let Some((position, definition)) = registry.position(&call.tool_name) else {
        return Err(unknown_tool(call));
    };
    match definition.check(&call.arguments) {
        Ok(normalized) => {
            if let Some(normalized) = normalized {
                call.arguments = normalized;
            }
            Ok(PreparedToolCall {
                call,
                definition: Arc::clone(definition),
                position,
            })
        }
        Err(errors) => Err(invalid(call, definition, errors)),
    }
}

/// The rejection of a call to a tool the registry does not have.
#[cold]
#[inline(never)]
fn unknown_tool(call: ToolCall) -> Rejection {
    let tool = quote_bounded(&call.tool_name);
    Rejection::UnknownTool {
        call_id: free_arguments(call),
        tool,
    }
}

/// The rejection of a call whose arguments `definition` refused.
#[cold]
#[inline(never)]
fn invalid(call: ToolCall, definition: &ToolDefinition, errors: ArgumentErrors) -> Rejection {
    let tool = definition.spec().name.clone();
    let call_id = free_arguments(call);
    if errors.is_depth_limit() {
        Rejection::TooDeep {
            call_id,
            tool,
            limit: MAX_ARGUMENT_DEPTH,
        }
    } else {
        Rejection::InvalidArguments {
            call_id,
            tool,
            errors,
        }
    }
}

/// Why a proposed call did not prepare. The model is at fault and can correct itself: each
/// variant carries the call's id, and [`into_result`](Self::into_result) makes the error result
/// it reads. No variant holds an argument value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// No tool has this exact name.
    #[error("unknown tool: {tool}")]
    UnknownTool {
        /// The call's id.
        call_id: String,
        /// The name the model sent, quoted and bounded in length.
        tool: String,
    },
    /// The arguments nest deeper than [`MAX_ARGUMENT_DEPTH`]; whatever else is wrong with them is
    /// not reported (a schema that could recurse into them never saw them).
    #[error("invalid arguments for {tool}: arguments nest deeper than {limit} levels")]
    TooDeep {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The limit that was passed.
        limit: usize,
    },
    /// The arguments broke the tool's schema or its extra check.
    #[error("invalid arguments for {tool}: {errors}")]
    InvalidArguments {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// What was wrong, masked and bounded.
        errors: ArgumentErrors,
    },
}

impl Rejection {
    /// The id of the call that was rejected.
    pub fn call_id(&self) -> &str {
        match self {
            Self::UnknownTool { call_id, .. }
            | Self::TooDeep { call_id, .. }
            | Self::InvalidArguments { call_id, .. } => call_id,
        }
    }

    /// The error result the model reads, with the call's id (G7, G8).
    pub fn into_result(self) -> ToolResult {
        let content = self.to_string();
        let call_id = match self {
            Self::UnknownTool { call_id, .. }
            | Self::TooDeep { call_id, .. }
            | Self::InvalidArguments { call_id, .. } => call_id,
        };
        ToolResult::error(call_id, content)
    }
}

/// The call's id; the arguments are freed without recursion, since they may be nested deeper than
/// the stack can unwind.
fn free_arguments(call: ToolCall) -> String {
    let ToolCall {
        call_id, arguments, ..
    } = call;
    drop_deep(arguments);
    call_id
}
