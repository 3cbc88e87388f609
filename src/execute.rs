//! Execution: an authorized call's handler run, its answer turned into a result.

use std::sync::Arc;

use serde_json::Value;

use crate::authorized::Authorized;
use crate::contract::ToolResult;
use crate::definition::{Handler, ToolDefinition, block_on};
use crate::runtime::{PreparedToolCall, ToolRuntime};

impl ToolRuntime {
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
    // Inlined into the controller, the async and structured handlers kept out of line: the
    // authorized call is not copied into a callee's frame.
    #[inline(always)]
    pub fn execute(&self, authorized: Authorized<PreparedToolCall>) -> ToolResult {
        let (call_id, arguments, definition) = unpack(authorized);
        let outcome = match definition.handler() {
            Handler::Blocking(handler) => handler.call(&arguments),
            Handler::Async(_)
            | Handler::Structured(_)
            | Handler::AsyncStructured(_)
            | Handler::AsyncBlocks(_) => {
                return not_blocking(call_id, arguments, &definition);
            }
        };
        // Freed before the result is made, so the result is made where it is returned instead
        // of being kept aside across the frees and copied.
        drop(arguments);
        let max_output_bytes = definition.max_output_bytes();
        drop(definition);
        into_result(call_id, outcome, max_output_bytes)
    }

    /// The async form of [`execute`](Self::execute), with the same typestate and guarantees: an
    /// async handler is awaited (its arguments moved into it, not copied); a blocking handler
    /// runs on the task that polls this future.
    pub async fn execute_async(&self, authorized: Authorized<PreparedToolCall>) -> ToolResult {
        let (call_id, arguments, definition) = unpack(authorized);
        let outcome = match definition.handler() {
            Handler::Blocking(handler) => handler.call(&arguments),
            Handler::Async(handler) => handler.call(arguments).await,
            Handler::Structured(handler) => {
                return structured(call_id, handler(&arguments), &definition);
            }
            Handler::AsyncStructured(handler) => {
                let outcome = handler(arguments).await;
                return structured(call_id, outcome, &definition);
            }
            Handler::AsyncBlocks(handler) => {
                let outcome = handler(arguments).await;
                return blocks(call_id, outcome, &definition);
            }
        };
        into_result(call_id, outcome, definition.max_output_bytes())
    }
}

/// [`ToolRuntime::execute`] for an async handler (driven on this thread) or a structured one.
#[inline(never)]
fn not_blocking(call_id: String, arguments: Value, definition: &ToolDefinition) -> ToolResult {
    let outcome = match definition.handler() {
        Handler::Blocking(handler) => handler.call(&arguments),
        Handler::Async(handler) => block_on(handler.call(arguments)),
        Handler::Structured(handler) => {
            return structured(call_id, handler(&arguments), definition);
        }
        Handler::AsyncStructured(handler) => {
            return structured(call_id, block_on(handler(arguments)), definition);
        }
        Handler::AsyncBlocks(handler) => {
            return blocks(call_id, block_on(handler(arguments)), definition);
        }
    };
    into_result(call_id, outcome, definition.max_output_bytes())
}

/// Spends the proof: the call's id and arguments (moved, not copied) and the definition they
/// validated against.
#[inline(always)]
fn unpack(authorized: Authorized<PreparedToolCall>) -> (String, Value, Arc<ToolDefinition>) {
    let (call, definition) = authorized.into_inner().into_parts();
    (call.call_id, call.arguments, definition)
}

/// The result of a structured handler: checked against the output schema, then bounded like any
/// output (its JSON text counts).
fn structured(
    call_id: String,
    outcome: Result<Value, crate::ToolError>,
    definition: &ToolDefinition,
) -> ToolResult {
    let result = match outcome {
        Ok(value) => definition.structured_result(call_id, value),
        Err(error) => ToolResult::error(call_id, error.to_string()),
    };
    bounded(result, definition.max_output_bytes())
}

/// The result of a handler answering in content blocks: checked and bounded by the definition
/// ([`ToolDefinition::blocks_result`]).
fn blocks(
    call_id: String,
    outcome: Result<crate::definition::ToolOutput, crate::ToolError>,
    definition: &ToolDefinition,
) -> ToolResult {
    match outcome {
        Ok(output) => definition.blocks_result(call_id, output),
        Err(error) => bounded(
            ToolResult::error(call_id, error.to_string()),
            definition.max_output_bytes(),
        ),
    }
}

#[inline(always)]
fn into_result(
    call_id: String,
    outcome: Result<String, crate::ToolError>,
    max_output_bytes: usize,
) -> ToolResult {
    let result = match outcome {
        Ok(content) => ToolResult::ok(call_id, content),
        Err(error) => ToolResult::error(call_id, error.to_string()),
    };
    bounded(result, max_output_bytes)
}

/// The result, or an error result if its text is longer than the tool passes on.
#[inline(always)]
fn bounded(result: ToolResult, max_output_bytes: usize) -> ToolResult {
    if result.content.len() <= max_output_bytes {
        return result;
    }
    too_large(result, max_output_bytes)
}

/// The error result for an output longer than the tool passes on.
#[cold]
#[inline(never)]
fn too_large(result: ToolResult, max_output_bytes: usize) -> ToolResult {
    let size = result.content.len();
    ToolResult::error(
        result.call_id,
        format!(
            "tool output too large: {size} bytes, the limit is {max_output_bytes}; the tool ran, and its output was not passed on"
        ),
    )
}
