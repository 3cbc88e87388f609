//! Anthropic Messages API: `tool_use` content blocks in, `tool_result` blocks back — all results
//! of one turn in one user message.
//!
//! ```
//! use serde_json::json;
//! use toolgate::providers::anthropic;
//! use toolgate::ToolResult;
//!
//! let message = json!({"role": "assistant", "content": [
//!     {"type": "text", "text": "Let me check."},
//!     {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}
//! ]});
//! let calls = anthropic::tool_uses(&message)?;
//! assert_eq!(calls[0].as_ref().map(|call| call.tool_name.as_str()), Ok("get_weather"));
//! let reply = anthropic::tool_results_message(&[ToolResult::error("toolu_1", "no such city")]);
//! assert_eq!(reply["content"][0]["is_error"], json!(true));
//! # Ok::<(), toolgate::providers::WireError>(())
//! ```

use serde_json::{Value, json};

use super::{ExportError, NameRule, ParsedCall, WireError, call_id, parse_call};
use crate::contract::{ToolResult, ToolSpec};

const NAMES: NameRule = NameRule {
    provider: "Anthropic",
    max_len: 64,
    extra: "_-",
    text: "1 to 64 characters from a-z, A-Z, 0-9, '_' and '-'",
};

/// The request's `tools` array: `{name, description, input_schema}` per spec, in order.
///
/// # Errors
///
/// [`ExportError::InvalidName`] for the first spec whose name Anthropic would refuse.
pub fn tools<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> Result<Value, ExportError> {
    let mut tools = Vec::new();
    for spec in specs {
        NAMES.check(spec)?;
        tools.push(json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
        }));
    }
    Ok(Value::Array(tools))
}

/// The `tool_use` blocks of an assistant message (or of a bare content array), in order; other
/// blocks are skipped. Each block is read as the [module docs](super) say (its `input` an object,
/// or a string holding one, parsed strictly); a block that cannot be used is an error result for
/// its id.
///
/// # Errors
///
/// [`WireError`] if there is no `content` array or a `tool_use` block has no non-empty string
/// `id`.
pub fn tool_uses(message: &Value) -> Result<Vec<ParsedCall>, WireError> {
    let blocks = match message {
        Value::Array(blocks) => blocks,
        _ => message
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| WireError::malformed("content", "missing or not an array"))?,
    };
    let mut calls = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let id = call_id(block, "id", &format!("content[{index}]"))?;
        calls.push(parse_call(id, block.get("name"), block.get("input")));
    }
    Ok(calls)
}

/// One `tool_result` block.
pub fn tool_result_block(result: &ToolResult) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": result.call_id,
        "content": result.content,
    });
    if result.is_error {
        block["is_error"] = Value::Bool(true);
    }
    block
}

/// The user message carrying every result of one turn, in the order given (Anthropic requires
/// them together, before any other content).
pub fn tool_results_message(results: &[ToolResult]) -> Value {
    json!({
        "role": "user",
        "content": results.iter().map(tool_result_block).collect::<Vec<_>>(),
    })
}
