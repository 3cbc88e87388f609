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

use super::{ExportError, NameRule, NotHandled, ParsedCall, Turn, WireError, call_id, parse_call};
use crate::contract::{ToolResult, ToolSpec};

pub(super) const NAMES: NameRule = NameRule {
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

/// The `tool_use` blocks of an assistant message (or of a bare content array), in order. Each
/// block is read as the [module docs](super) say (its `input` an object, or a string holding
/// one, parsed strictly); a block that cannot be used is an error result for its id. Text and
/// thinking blocks are content and skipped.
///
/// # Errors
///
/// [`WireError`] if there is no `content` array, the message's `role` is not `assistant`, or a
/// `tool_use` block has no non-empty string `id`; [`WireError::NotHandled`] for the first block
/// that is not a call toolgate runs (`server_tool_use`, `mcp_tool_use`, their results, an
/// unknown type) — [`turn`] lists those instead.
pub fn tool_uses(message: &Value) -> Result<Vec<ParsedCall>, WireError> {
    let turn = turn(message)?;
    super::turn::refuse(&turn.not_handled)?;
    Ok(turn.calls)
}

/// The calls of an assistant message, as [`tool_uses`] reads them, and every block that is not
/// a call toolgate runs: tools Anthropic ran itself (`server_tool_use`, `mcp_tool_use` and the
/// `*_tool_result` blocks that answer them) and unknown types.
///
/// # Errors
///
/// [`WireError`] if there is no `content` array, the `role` is not `assistant`, a block is not
/// an object, or a `tool_use` block has no non-empty string `id`.
pub fn turn(message: &Value) -> Result<Turn, WireError> {
    let blocks = match message {
        Value::Array(blocks) => blocks,
        _ => {
            if message.get("role").is_some_and(|role| role != "assistant") {
                return Err(WireError::malformed(
                    "role",
                    "expected an assistant message",
                ));
            }
            // Another format's calls, which this reader would not see.
            for key in ["tool_calls", "function_call"] {
                if message.get(key).is_some_and(|value| !value.is_null()) {
                    return Err(WireError::malformed(
                        key,
                        "a Chat Completions field: read this message with openai::tool_calls",
                    ));
                }
            }
            message
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| WireError::malformed("content", "missing or not an array"))?
        }
    };
    let mut turn = Turn::default();
    let mut ids = super::DistinctIds::default();
    for (index, block) in blocks.iter().enumerate() {
        let place = format!("content[{index}]");
        if !block.is_object() {
            return Err(WireError::malformed(
                place,
                "a content block is not an object",
            ));
        }
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("(none)");
        if kind == "tool_use" {
            let id = call_id(block, "id", &place)?;
            ids.claim(&id, &format!("{place}.id"))?;
            turn.calls
                .push(parse_call(id, block.get("name"), block.get("input")));
        } else if let Some(item) = classify(block, kind, place) {
            turn.not_handled.push(item);
        }
    }
    Ok(turn)
}

/// A block other than `tool_use`: `None` for content, else what to report.
pub(crate) fn classify(block: &Value, kind: &str, place: String) -> Option<NotHandled> {
    match super::turn::anthropic_block(kind) {
        super::turn::Class::Content => None,
        super::turn::Class::NotHandled(reason) => {
            let id = block
                .get("id")
                .or_else(|| block.get("tool_use_id"))
                .and_then(Value::as_str);
            Some(NotHandled::new(place, kind, id, reason))
        }
    }
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

/// One `tool_result` block for a result with a structured (JSON) part: `content` is an array of
/// text blocks, the result's text then the value as compact JSON. Without `structured` it is
/// [`tool_result_block`].
pub fn tool_result_block_with(result: &ToolResult, structured: Option<&Value>) -> Value {
    let mut block = tool_result_block(result);
    if structured.is_some() {
        block["content"] = Value::Array(super::results::text_blocks(result, structured, "text"));
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
