//! Preparation (resolve + validate) and execution.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use serde_json::Value;

use crate::authorized::Authorized;
use crate::contract::{ToolCall, ToolResult, quote_bounded};
use crate::definition::{Handler, ToolDefinition, drop_deep};
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
/// use toolgate::{ToolCall, ToolDefinition, ToolError, ToolRegistry, ToolRuntime, ToolSpec};
///
/// let echo = |args: &Value| -> Result<String, ToolError> { Ok(args.to_string()) };
/// let spec = ToolSpec::new("echo", "Echo.", json!({"type": "object", "required": ["x"]}));
/// let runtime = ToolRuntime::new(ToolRegistry::new([ToolDefinition::new(spec, echo)?])?);
///
/// let unknown = runtime.prepare(ToolCall::new("c1", "rm", json!({}))).unwrap_err();
/// assert_eq!(unknown.content, "unknown tool: rm");
/// let invalid = runtime.prepare(ToolCall::new("c2", "echo", json!({}))).unwrap_err();
/// assert!(invalid.content.starts_with("invalid arguments for echo: 1 violation"));
/// let prepared = runtime
///     .prepare(ToolCall::new("c3", "echo", json!({"x": 1})))
///     .map_err(|result| result.content)?;
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
    /// An error [`ToolResult`] with the call's id, for the model to read: `unknown tool: NAME`, or
    /// `invalid arguments for NAME: …` listing the first violations with their JSON Pointers and
    /// keywords and counting the rest (the listing is at most
    /// [`ArgumentErrors::MAX_TEXT_BYTES`](crate::ArgumentErrors::MAX_TEXT_BYTES) long). Argument
    /// values, and property names the schema does not declare, are never quoted.
    ///
    /// A [`typed`](ToolDefinition::typed) tool's arguments are normalized after validation and
    /// validated again; the prepared call holds the normalized arguments.
    pub fn prepare(&self, mut call: ToolCall) -> Result<PreparedToolCall, ToolResult> {
        let Some(definition) = self.registry.resolve(&call.tool_name) else {
            let mut content = quote_bounded(&call.tool_name);
            content.insert_str(0, "unknown tool: ");
            return Err(reject(call, content));
        };
        match definition.check(&call.arguments) {
            Ok(normalized) => {
                if let Some(normalized) = normalized {
                    call.arguments = normalized;
                }
                Ok(PreparedToolCall {
                    call,
                    definition: Arc::clone(definition),
                })
            }
            Err(errors) => {
                let content = format!("invalid arguments for {}: {errors}", call.tool_name);
                Err(reject(call, content))
            }
        }
    }

    /// Runs an authorized call's handler and turns its answer into a result with the call's id.
    ///
    /// A [`ToolError`](crate::ToolError) from the handler becomes an error result. A panic in the
    /// handler is not caught: it is a defect and reaches the caller (G8).
    ///
    /// # Guarantees
    ///
    /// Only an [`Authorized<PreparedToolCall>`] is accepted (G3), and it is consumed: one
    /// authorization runs at most once. Passing a `PreparedToolCall` or a `ToolCall` does not
    /// compile (`ui-tests/execute_prepared.rs`, `ui-tests/execute_raw_call.rs`).
    pub fn execute(&self, authorized: Authorized<PreparedToolCall>) -> ToolResult {
        let (call_id, arguments, definition) = unpack(authorized);
        let outcome = match definition.handler() {
            Handler::Blocking(handler) => handler.call(&arguments),
            Handler::Async(handler) => block_on(handler.call(arguments)),
        };
        into_result(call_id, outcome, definition.max_output_bytes())
    }

    /// The async form of [`execute`](Self::execute), with the same typestate and guarantees: an
    /// async handler is awaited (its arguments moved into it, not copied); a blocking handler
    /// runs on the task that polls this future.
    pub async fn execute_async(&self, authorized: Authorized<PreparedToolCall>) -> ToolResult {
        let (call_id, arguments, definition) = unpack(authorized);
        let outcome = match definition.handler() {
            Handler::Blocking(handler) => handler.call(&arguments),
            Handler::Async(handler) => handler.call(arguments).await,
        };
        into_result(call_id, outcome, definition.max_output_bytes())
    }
}

/// Spends the proof: the call's id and arguments (moved, not copied) and the definition they
/// validated against.
fn unpack(authorized: Authorized<PreparedToolCall>) -> (String, Value, Arc<ToolDefinition>) {
    let PreparedToolCall { call, definition } = authorized.into_inner();
    (call.call_id, call.arguments, definition)
}

fn into_result(
    call_id: String,
    outcome: Result<String, crate::ToolError>,
    max_output_bytes: usize,
) -> ToolResult {
    let result = match outcome {
        Ok(content) => ToolResult::ok(call_id, content),
        Err(error) => ToolResult::error(call_id, error.to_string()),
    };
    if result.content.len() <= max_output_bytes {
        return result;
    }
    let size = result.content.len();
    ToolResult::error(
        result.call_id,
        format!(
            "tool output too large: {size} bytes, the limit is {max_output_bytes}; it was not passed on"
        ),
    )
}

/// Drives a future to completion on the current thread, parking between polls. Enough for a
/// handler that does not need a particular runtime's reactor; safe code only, no dependency.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    loop {
        match future.as_mut().poll(&mut context) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// The error result for a call that did not prepare. The arguments are freed without recursion:
/// they may be nested deeper than the stack can unwind.
fn reject(call: ToolCall, content: String) -> ToolResult {
    let ToolCall {
        call_id, arguments, ..
    } = call;
    drop_deep(arguments);
    ToolResult::error(call_id, content)
}
