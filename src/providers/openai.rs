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

use super::{ExportError, OPENAI_NAMES as NAMES, ParsedCall, WireError, call_id, parse_call};
use crate::contract::{ToolResult, ToolSpec, quote_bounded};

/// The request's `tools` array: `{"type": "function", "function": {name, description,
/// parameters}}` per spec, in order; with `strict`, each function sets `"strict": true`, which
/// is only claimed for a schema that already meets OpenAI's strict-mode rules (every property
/// required, `additionalProperties: false` on every object, only supported keywords). To
/// transform a schema that does not, use [`StrictTools`](super::strict_schema::StrictTools).
///
/// # Errors
///
/// [`ExportError::InvalidName`] for the first spec whose name OpenAI would refuse (map names
/// with [`NameMap`](super::names::NameMap)); with `strict`,
/// [`ExportError::UnsupportedSchema`] naming the first place in a schema that breaks the
/// strict-mode rules.
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
/// [`WireError`] if the value is not an assistant message (not an object; a whole
/// `chat.completion` or a `choices[i]` entry instead of `choices[i].message`; a `role` other
/// than `assistant`), carries a legacy `function_call`, if `tool_calls` is not an array, or a
/// call has no non-empty string `id`.
pub fn tool_calls(message: &Value) -> Result<Vec<ParsedCall>, WireError> {
    check_message(message)?;
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(calls)) => calls,
        Some(_) => return Err(WireError::malformed("tool_calls", "not an array")),
    };
    let mut ids = super::DistinctIds::default();
    calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let id = call_id(call, "id", &format!("tool_calls[{index}]"))?;
            ids.claim(&id, &format!("tool_calls[{index}].id"))?;
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

/// Refuses what is not an assistant message, so a payload of the wrong shape cannot read as a
/// message without calls.
fn check_message(message: &Value) -> Result<(), WireError> {
    let Some(object) = message.as_object() else {
        return Err(WireError::malformed(
            "message",
            format!(
                "expected an assistant message object, got {}",
                super::kind(message)
            ),
        ));
    };
    if object.contains_key("choices") || object.contains_key("object") {
        return Err(WireError::malformed(
            "message",
            "expected an assistant message (choices[0].message), got a whole completion",
        ));
    }
    match object.get("role") {
        None => {}
        Some(Value::String(role)) if role == "assistant" => {}
        Some(_) => {
            return Err(WireError::malformed(
                "message.role",
                "expected an assistant message",
            ));
        }
    }
    if !["tool_calls", "role", "content"]
        .iter()
        .any(|key| object.contains_key(*key))
    {
        return Err(WireError::malformed(
            "message",
            "expected an assistant message (choices[0].message): no role, content or tool_calls",
        ));
    }
    if object
        .get("function_call")
        .is_some_and(|call| !call.is_null())
    {
        return Err(WireError::malformed(
            "message.function_call",
            "legacy function_call has no id to answer: request tools instead of functions",
        ));
    }
    check_content(object.get("content"))
}

/// An assistant message's `content` is text, or parts of text and refusals: anything else is
/// another format's message (Anthropic's `tool_use` blocks, a Responses message's
/// `output_text`), whose calls this reader would not see.
fn check_content(content: Option<&Value>) -> Result<(), WireError> {
    let parts = match content {
        None | Some(Value::Null | Value::String(_)) => return Ok(()),
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(WireError::malformed(
                "message.content",
                format!(
                    "expected text or an array of parts, got {}",
                    super::kind(other)
                ),
            ));
        }
    };
    for (index, part) in parts.iter().enumerate() {
        match part.get("type").and_then(Value::as_str) {
            Some("text" | "refusal") => {}
            Some(kind) => {
                return Err(WireError::malformed(
                    format!("message.content[{index}].type"),
                    format!(
                        "a part of type {:?} is not Chat Completions content (another provider's message?)",
                        quote_bounded(kind)
                    ),
                ));
            }
            None => {
                return Err(WireError::malformed(
                    format!("message.content[{index}].type"),
                    "missing or not a string",
                ));
            }
        }
    }
    Ok(())
}

/// The `role: "tool"` message that answers one call.
pub fn tool_message(result: &ToolResult) -> Value {
    json!({"role": "tool", "tool_call_id": result.call_id, "content": result.content})
}

/// The `role: "tool"` message for a result with a structured (JSON) part: `content` is an array
/// of text parts (the only kind a tool message takes), the result's text then the value as
/// compact JSON. Without `structured` it is [`tool_message`].
pub fn tool_message_with(result: &ToolResult, structured: Option<&Value>) -> Value {
    if structured.is_none() {
        return tool_message(result);
    }
    json!({
        "role": "tool",
        "tool_call_id": result.call_id,
        "content": super::results::text_blocks(result, structured, "text"),
    })
}
