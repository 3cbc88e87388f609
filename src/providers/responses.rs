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

use super::{ExportError, ParsedCall, WireError, call_id, openai::NAMES, parse_call};
use crate::contract::{ToolResult, ToolSpec, quote_bounded};

/// The request's `tools` array in the Responses API's flat shape: `{"type": "function", name,
/// description, parameters, strict}`.
///
/// # Errors
///
/// [`ExportError::InvalidName`] for the first spec whose name OpenAI would refuse.
pub fn tools<'a>(
    specs: impl IntoIterator<Item = &'a ToolSpec>,
    strict: bool,
) -> Result<Value, ExportError> {
    let mut tools = Vec::new();
    for spec in specs {
        NAMES.check(spec)?;
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
/// in order; other items (messages, reasoning) are skipped. Each call is read as the
/// [module docs](super) say (its `arguments` a string holding an object, parsed strictly, or an
/// object). A `custom_tool_call` item, or a call that cannot be used, is an error result for its
/// `call_id`.
///
/// # Errors
///
/// [`WireError`] if there is no `output` array or a call item has no non-empty string `call_id`.
pub fn function_calls(response: &Value) -> Result<Vec<ParsedCall>, WireError> {
    let items = match response {
        Value::Array(items) => items,
        _ => response
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| WireError::malformed("output", "missing or not an array"))?,
    };
    let mut calls = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let place = format!("output[{index}]");
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let id = call_id(item, "call_id", &place)?;
                calls.push(parse_call(id, item.get("name"), item.get("arguments")));
            }
            Some("custom_tool_call") => {
                let id = call_id(item, "call_id", &place)?;
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                calls.push(Err(ToolResult::error(
                    id,
                    format!(
                        "custom tool {:?} cannot be called: only function tools are supported",
                        quote_bounded(name)
                    ),
                )));
            }
            _ => {}
        }
    }
    Ok(calls)
}

/// The `function_call_output` input item that answers one call. An error result's content is
/// sent as the output text (the Responses API has no error flag on this item).
pub fn function_call_output(result: &ToolResult) -> Value {
    json!({"type": "function_call_output", "call_id": result.call_id, "output": result.content})
}
