//! OpenAI Chat Completions — and DeepSeek and other OpenAI-compatible APIs, which share it.
//!
//! ```
//! use serde_json::json;
//! use toolgate::providers::openai;
//! use toolgate::ToolResult;
//!
//! let message = json!({"role": "assistant", "content": null, "tool_calls": [
//!     {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": "{\"a\":40,\"b\":2}"}},
//!     {"id": "call_2", "type": "function", "function": {"name": "calculator", "arguments": "{oops"}}
//! ]});
//! let calls = openai::tool_calls(&message)?;
//! assert_eq!(calls[0].as_ref().map(|call| call.arguments["a"].clone()), Ok(json!(40)));
//! assert!(calls[1].as_ref().is_err_and(|result| result.call_id == "call_2"));
//! let reply = openai::tool_message(&ToolResult::ok("call_1", "42"));
//! assert_eq!(reply, json!({"role": "tool", "tool_call_id": "call_1", "content": "42"}));
//! # Ok::<(), toolgate::providers::WireError>(())
//! ```

use serde_json::{Value, json};

use super::{ExportError, NameRule, ParsedCall, WireError, call_id, parse_call};
use crate::contract::{ToolResult, ToolSpec, quote_bounded};

pub(super) const NAMES: NameRule = NameRule {
    provider: "OpenAI",
    max_len: 64,
    extra: "_-",
    text: "1 to 64 characters from a-z, A-Z, 0-9, '_' and '-'",
};

/// The request's `tools` array: `{"type": "function", "function": {name, description,
/// parameters}}` per spec, in order; with `strict`, each function sets `"strict": true` (the
/// schema must then meet OpenAI's strict-mode rules: every property required,
/// `additionalProperties: false`).
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
        let mut function = json!({
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        });
        if strict {
            function["strict"] = Value::Bool(true);
        }
        tools.push(json!({"type": "function", "function": function}));
    }
    Ok(Value::Array(tools))
}

/// The calls in an assistant message's `tool_calls`, in order. A message without `tool_calls`
/// has none. Each call is read as the [module docs](super) say (its `arguments` a string holding
/// an object, parsed strictly, or an object); a call that cannot be used (no name, unusable
/// arguments, a `custom` tool call) is an error result for its id, in its place.
///
/// # Errors
///
/// [`WireError`] if `tool_calls` is not an array or a call has no non-empty string `id`.
pub fn tool_calls(message: &Value) -> Result<Vec<ParsedCall>, WireError> {
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(calls)) => calls,
        Some(_) => return Err(WireError::malformed("tool_calls", "not an array")),
    };
    calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let id = call_id(call, "id", &format!("tool_calls[{index}]"))?;
            match call.get("type") {
                // `type` is optional in some compatible servers' output; "function" is the only one.
                None => {}
                Some(Value::String(kind)) if kind == "function" => {}
                Some(kind) => {
                    let kind = match kind.as_str() {
                        Some(text) => format!("{:?}", quote_bounded(text)),
                        None => super::kind(kind).to_owned(),
                    };
                    return Ok(Err(ToolResult::error(
                        id,
                        format!(
                            "unsupported tool call type {kind}: only function tools can be called"
                        ),
                    )));
                }
            }
            let function = call.get("function");
            Ok(parse_call(
                id,
                function.and_then(|f| f.get("name")),
                function.and_then(|f| f.get("arguments")),
            ))
        })
        .collect()
}

/// The `role: "tool"` message that answers one call.
pub fn tool_message(result: &ToolResult) -> Value {
    json!({"role": "tool", "tool_call_id": result.call_id, "content": result.content})
}
