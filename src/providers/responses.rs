//! OpenAI Responses API: `function_call` output items in, `function_call_output` items back.
//! Calls are correlated by `call_id` (the item's `id` is a different identifier).
//!
//! ```
//! use serde_json::json;
//! use toolgate::providers::responses;
//! use toolgate::ToolResult;
//!
//! let response = json!({"output": [
//!     {"type": "reasoning", "id": "rs_1", "summary": []},
//!     {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
//!      "arguments": "{\"location\":\"Paris, France\"}"}
//! ]});
//! let calls = responses::function_calls(&response)?;
//! assert_eq!(calls.len(), 1);
//! assert_eq!(calls[0].as_ref().map(|call| call.call_id.as_str()), Ok("call_1"));
//! let item = responses::function_call_output(&ToolResult::ok("call_1", "sunny"));
//! assert_eq!(item, json!({"type": "function_call_output", "call_id": "call_1", "output": "sunny"}));
//! # Ok::<(), toolgate::providers::WireError>(())
//! ```

use serde_json::{Value, json};

use super::{
    ExportError, NotHandled, OPENAI_NAMES as NAMES, ParsedCall, Turn, WireError, call_id,
    parse_call,
};
use crate::contract::{ToolResult, ToolSpec, quote_bounded};

/// The request's `tools` array in the Responses API's flat shape: `{"type": "function", name,
/// description, parameters, strict}`. `strict: true` is only claimed for a schema that already
/// meets OpenAI's strict-mode rules; [`StrictTools`](super::strict_schema::StrictTools)
/// transforms one that does not.
///
/// # Errors
///
/// [`ExportError::InvalidName`] for the first spec whose name OpenAI would refuse; with
/// `strict`, [`ExportError::UnsupportedSchema`] naming the first place that breaks the rules.
pub fn tools<'a>(
    specs: impl IntoIterator<Item = &'a ToolSpec>,
    strict: bool,
) -> Result<Value, ExportError> {
    let mut tools = Vec::new();
    for spec in specs {
        NAMES.check(spec)?;
        if strict {
            super::strict_schema::check(spec)?;
        }
        tools.push(json!({
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
            "strict": strict,
        }));
    }
    Ok(Value::Array(tools))
}

/// The `function_call` items of a response (the whole response object, or its `output` array),
/// in order. Each call is read as the [module docs](super) say (its `arguments` a string holding
/// an object, parsed strictly, or an object). A `custom_tool_call` item, or a call that cannot be
/// used, is an error result for its `call_id`. Messages and reasoning are content and skipped.
///
/// # Errors
///
/// [`WireError`] if there is no `output` array or a call item has no non-empty string
/// `call_id`; [`WireError::NotHandled`] for the first item that is not a call toolgate runs
/// (`mcp_call`, `web_search_call`, `local_shell_call`, an unknown type, …) — [`turn`] lists
/// those instead.
pub fn function_calls(response: &Value) -> Result<Vec<ParsedCall>, WireError> {
    let turn = turn(response)?;
    super::turn::refuse(&turn.not_handled)?;
    Ok(turn.calls)
}

/// The calls of a response, as [`function_calls`] reads them, and every item that is not a call
/// toolgate runs: tools the provider ran itself (`web_search_call`, `file_search_call`,
/// `code_interpreter_call`, `image_generation_call`, `mcp_call`, `mcp_list_tools`), items that
/// wait for an answer toolgate cannot give (`computer_call`, `local_shell_call`, `shell_call`,
/// `apply_patch_call`, `mcp_approval_request`) and unknown types.
///
/// # Errors
///
/// [`WireError`] if there is no `output` array, an item is not an object, or a call item has no
/// non-empty string `call_id`.
pub fn turn(response: &Value) -> Result<Turn, WireError> {
    // A bare array may be a response's `output` or a stateless request's `input` (which also
    // holds the user's messages and the outputs already sent): places name its own indices.
    let (items, array) = match response {
        Value::Array(items) => (items, ""),
        _ => (
            response
                .get("output")
                .and_then(Value::as_array)
                .ok_or_else(|| WireError::malformed("output", "missing or not an array"))?,
            "output",
        ),
    };
    // In a stateless request's input, a call whose output is in it too was run and answered
    // already: it is history, not a call to run again (an independent attack: a loop reading
    // each request re-ran every earlier call).
    let answered: std::collections::HashSet<&str> = items
        .iter()
        .filter(|item| {
            matches!(
                item.get("type").and_then(Value::as_str),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .filter_map(|item| item.get("call_id").and_then(Value::as_str))
        .collect();
    let mut turn = Turn::default();
    let mut ids = super::DistinctIds::default();
    for (index, item) in items.iter().enumerate() {
        let place = format!("{array}[{index}]");
        if !item.is_object() {
            return Err(WireError::malformed(place, "an item is not an object"));
        }
        if let Some(call) = read_item(item, &place)? {
            let id = match &call {
                Ok(call) => &call.call_id,
                Err(result) => &result.call_id,
            };
            ids.claim(id, &format!("{place}.call_id"))?;
            if !answered.contains(id.as_str()) {
                turn.calls.push(call);
            }
        } else if let Some(not_handled) = classify(item, place) {
            turn.not_handled.push(not_handled);
        }
    }
    Ok(turn)
}

/// A `function_call` or `custom_tool_call` item as a call; `None` for any other item.
pub(crate) fn read_item(item: &Value, place: &str) -> Result<Option<ParsedCall>, WireError> {
    match item.get("type").and_then(Value::as_str) {
        Some("function_call") => {
            let id = call_id(item, "call_id", place)?;
            Ok(Some(parse_call(
                id,
                item.get("name"),
                item.get("arguments"),
            )))
        }
        Some("custom_tool_call") => {
            let id = call_id(item, "call_id", place)?;
            Ok(Some(Err(custom_tool_error(id, item))))
        }
        _ => Ok(None),
    }
}

pub(crate) fn custom_tool_error(id: String, item: &Value) -> ToolResult {
    let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
    ToolResult::error(
        id,
        format!(
            "custom tool {:?} cannot be called: only function tools are supported",
            quote_bounded(name)
        ),
    )
}

/// An item other than a call: `None` for content, else what to report.
pub(crate) fn classify(item: &Value, place: String) -> Option<NotHandled> {
    // The API takes an input message without `type` (`{"role": "user", "content": …}`); one
    // holding another format's parts (Anthropic's `tool_use`) or calls is not such a message.
    let kind = match item.get("type") {
        None if is_typeless_message(item) => "message",
        kind => kind.and_then(Value::as_str).unwrap_or("(none)"),
    };
    match super::turn::responses_item(kind) {
        super::turn::Class::Content => None,
        super::turn::Class::NotHandled(reason) => {
            let id = item
                .get("call_id")
                .or_else(|| item.get("id"))
                .and_then(Value::as_str);
            Some(NotHandled::new(place, kind, id, reason))
        }
    }
}

/// A Responses input message written without `type`: a `role`, and `content` that is text or
/// parts of the Responses content types (`input_text`, `output_text`, `refusal`, …), no calls.
fn is_typeless_message(item: &Value) -> bool {
    if !item.get("role").is_some_and(Value::is_string)
        || item.get("tool_calls").is_some()
        || item.get("function_call").is_some()
    {
        return false;
    }
    match item.get("content") {
        Some(Value::String(_)) => true,
        Some(Value::Array(parts)) => parts.iter().all(|part| {
            part.get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| {
                    kind.starts_with("input_")
                        || kind.starts_with("output_")
                        || matches!(kind, "refusal" | "summary_text" | "reasoning_text")
                })
        }),
        _ => false,
    }
}

/// The `function_call_output` input item that answers one call. An error result's content is
/// sent as the output text (the Responses API has no error flag on this item).
pub fn function_call_output(result: &ToolResult) -> Value {
    json!({"type": "function_call_output", "call_id": result.call_id, "output": result.content})
}

/// The `function_call_output` item for a result with a structured (JSON) part: `output` is an
/// array of `input_text` items, the result's text then the value as compact JSON. Without
/// `structured` it is [`function_call_output`].
pub fn function_call_output_with(result: &ToolResult, structured: Option<&Value>) -> Value {
    if structured.is_none() {
        return function_call_output(result);
    }
    json!({
        "type": "function_call_output",
        "call_id": result.call_id,
        "output": super::results::text_blocks(result, structured, "input_text"),
    })
}
