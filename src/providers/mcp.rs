//! Model Context Protocol: `tools/list` entries ↔ [`ToolSpec`], `tools/call` requests →
//! [`ToolCall`], [`ToolResult`] → `CallToolResult`.
//!
//! Annotations a server sends (`readOnlyHint`, `destructiveHint`, …) are kept as hints for a
//! person to read; toolgate never treats them as permission — only a policy decides.
//!
//! ```
//! use serde_json::{json, Value};
//! use toolgate::providers::mcp;
//! use toolgate::*;
//!
//! let noop = |_: &Value| -> Result<String, ToolError> { Ok("sunny".into()) };
//! let spec = ToolSpec::new("get_weather", "Weather.", json!({"type": "object"}));
//! let registry = ToolRegistry::new([ToolDefinition::new(spec, noop)?])?;
//!
//! let request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
//!                      "params": {"name": "get_weather", "arguments": {"location": "New York"}}});
//! let call = mcp::call_from_request(&request, &registry).map_err(|e| e.to_string())?;
//! assert_eq!(call.call_id, "2");
//! let response = mcp::call_tool_response(&request["id"], &ToolResult::ok("2", "sunny"));
//! assert_eq!(response["result"]["isError"], json!(false));
//!
//! let unknown = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope"}});
//! let error = mcp::call_from_request(&unknown, &registry).unwrap_err();
//! assert_eq!(error["error"]["code"], json!(-32602));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde_json::{Value, json};

use super::{ExportError, NameRule, WireError, parse_call, string_field};
use crate::contract::{ToolCall, ToolResult, ToolSpec, quote_bounded};
use crate::registry::ToolRegistry;

const NAMES: NameRule = NameRule {
    provider: "MCP",
    max_len: 128,
    extra: "_-.",
    text: "1 to 128 characters from a-z, A-Z, 0-9, '_', '-' and '.'",
};

/// JSON-RPC "Invalid params", which MCP uses for unknown tools and malformed calls.
pub const INVALID_PARAMS: i64 = -32602;

/// JSON-RPC "Invalid Request", answered (with id `null`) to a `tools/call` that has no usable id.
pub const INVALID_REQUEST: i64 = -32600;

/// A tool as an MCP server lists it: the spec toolgate uses, plus what is only informative.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpTool {
    /// Name, description and input schema.
    pub spec: ToolSpec,
    /// The human-readable title, if any.
    pub title: Option<String>,
    /// The server's annotations, as sent. Hints from the server, never a reason to allow.
    pub annotations: Option<Value>,
}

/// One `tools/list` entry for a spec: `{name, description, inputSchema}`.
///
/// # Errors
///
/// [`ExportError::InvalidName`] if MCP clients would refuse the name.
pub fn tool(spec: &ToolSpec) -> Result<Value, ExportError> {
    NAMES.check(spec)?;
    Ok(json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
    }))
}

/// The `result` of a `tools/list` response: `{"tools": [...]}` in order.
///
/// # Errors
///
/// [`ExportError::InvalidName`] for the first spec whose name MCP clients would refuse.
pub fn tools_list_result<'a>(
    specs: impl IntoIterator<Item = &'a ToolSpec>,
) -> Result<Value, ExportError> {
    let tools = specs.into_iter().map(tool).collect::<Result<Vec<_>, _>>()?;
    Ok(json!({ "tools": tools }))
}

/// Reads one entry of a server's `tools/list` result.
///
/// # Errors
///
/// [`WireError`] if `name` is missing or `inputSchema` is not an object.
pub fn tool_from_list_entry(entry: &Value) -> Result<McpTool, WireError> {
    let name = string_field(entry, "name", "tool")?;
    let schema = entry
        .get("inputSchema")
        .filter(|schema| schema.is_object())
        .ok_or_else(|| WireError::malformed("tool.inputSchema", "missing or not an object"))?;
    Ok(McpTool {
        spec: ToolSpec::new(
            name,
            entry
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            schema.clone(),
        ),
        title: entry
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_owned),
        annotations: entry.get("annotations").cloned(),
    })
}

/// JSON-RPC "Method not found", answered to a request whose method is not `tools/call` when it
/// is read with [`call_from_request`].
pub const METHOD_NOT_FOUND: i64 = -32601;

/// What one incoming JSON-RPC message is, as far as tool calls go.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Message {
    /// A `tools/call` request, read into a call whose `call_id` keeps the id's type (see
    /// [`call_id_for`]).
    Call(ToolCall),
    /// A `tools/call` request that cannot become a call: send this JSON-RPC error response.
    Reply(Value),
    /// A notification (no `id`): never a call, and never answered.
    Notification,
    /// A request for another method (`tools/list`, `initialize`, …): not a call; route it
    /// elsewhere.
    OtherMethod,
    /// A response or error from the peer (no `method`): not a call.
    Response,
}

/// The `call_id` for a JSON-RPC request id, keeping its type so `1` and `"1"` never share one:
/// an integer is its decimal text (`1` → `1`); a string is itself (`"req-7"` → `req-7`) unless it
/// could be mistaken for an integer or an escaped string — then it is its JSON text (`"1"` →
/// `"1"` with the quotes, `"\"x"` → `"\"x"`). `None` for an id MCP does not allow (`null`, an
/// empty string, a fraction, anything else). [`request_id`] reverses it.
pub fn call_id_for(id: &Value) -> Option<String> {
    match id {
        Value::Number(number) if number.is_i64() || number.is_u64() => Some(number.to_string()),
        Value::String(text) if text.is_empty() => None,
        Value::String(text) if looks_like_integer(text) || text.starts_with('"') => {
            Some(id.to_string())
        }
        Value::String(text) => Some(text.clone()),
        _ => None,
    }
}

/// The JSON-RPC id a `call_id` made by [`call_id_for`] came from.
pub fn request_id(call_id: &str) -> Value {
    if looks_like_integer(call_id)
        && let Ok(Value::Number(number)) = serde_json::from_str::<Value>(call_id)
    {
        return Value::Number(number);
    }
    if call_id.starts_with('"')
        && let Ok(text @ Value::String(_)) = serde_json::from_str::<Value>(call_id)
    {
        return text;
    }
    Value::String(call_id.to_owned())
}

fn looks_like_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit())
}

/// Reads one incoming JSON-RPC message: a `tools/call` request becomes a call (or the error
/// response to send); a notification, another method or a response is never a call.
///
/// A `tools/call` request is read as [`call_from_request`] documents.
pub fn read_message(message: &Value, registry: &ToolRegistry) -> Message {
    let Some(object) = message.as_object() else {
        return Message::Reply(invalid_request("a JSON-RPC message is an object"));
    };
    let Some(method) = object.get("method") else {
        return Message::Response;
    };
    if !object.contains_key("id") {
        return Message::Notification;
    }
    if method != "tools/call" {
        return Message::OtherMethod;
    }
    match read_call(message, registry) {
        Ok(call) => Message::Call(call),
        Err(reply) => Message::Reply(reply),
    }
}

/// The call a `tools/call` request asks for; its `call_id` is the JSON-RPC `id` as
/// [`call_id_for`] spells it (keeping `1` and `"1"` apart). The name and `arguments` are read as
/// the [module docs](super) say (an object, or a string holding one, parsed strictly).
///
/// # Errors
///
/// The JSON-RPC error response to send back:
/// - code [`INVALID_REQUEST`] with id `null` if the request's `id` is not a non-empty string or an
///   integer (MCP forbids a `null` id, and a request without one cannot be answered), or if the
///   message is a notification (then send nothing: [`read_message`] tells the two apart);
/// - code [`METHOD_NOT_FOUND`] with the request's id if its `method` is not `tools/call`;
/// - code [`INVALID_PARAMS`] with the request's id for a tool the registry does not have (exact
///   name), a missing name, or arguments that cannot be used.
pub fn call_from_request(request: &Value, registry: &ToolRegistry) -> Result<ToolCall, Value> {
    if request
        .get("method")
        .is_some_and(|method| method != "tools/call")
        && let Some(id) = request.get("id").filter(|id| call_id_for(id).is_some())
    {
        return Err(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": METHOD_NOT_FOUND, "message": "only tools/call is read here"},
        }));
    }
    read_call(request, registry)
}

fn invalid_request(message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": INVALID_REQUEST, "message": message},
    })
}

fn read_call(request: &Value, registry: &ToolRegistry) -> Result<ToolCall, Value> {
    let Some(call_id) = request.get("id").and_then(call_id_for) else {
        return Err(invalid_request(
            "tools/call needs an id: a non-empty string or an integer",
        ));
    };
    let id = &request["id"];
    let params = request.get("params");
    let name = params.and_then(|p| p.get("name"));
    if let Some(Value::String(name)) = name
        && !name.is_empty()
        && registry.resolve(name).is_none()
    {
        return Err(error_response(
            id,
            &format!("Unknown tool: {}", quote_bounded(name)),
        ));
    }
    parse_call(call_id, name, params.and_then(|p| p.get("arguments")))
        .map_err(|result| error_response(id, &result.content))
}

/// The `CallToolResult` for a result: the content blocks a tool sent ([`ToolResult::blocks`])
/// as sent, with its `_meta` less the keys under [`RESERVED_META_PREFIX`] (toolgate's own) and
/// [`PROTOCOL_META_PREFIX`] (the hop's),
/// otherwise its content as one text block; and `isError`. A result with structured output
/// ([`ToolResult::structured`]) also carries it as `structuredContent` (when it is an object, as
/// MCP requires).
///
/// [`RESERVED_META_PREFIX`]: crate::providers::mcp::RESERVED_META_PREFIX
pub fn call_tool_result(result: &ToolResult) -> Value {
    let mut body = match &result.blocks {
        Some(blocks) => {
            let mut body = json!({"content": blocks.content, "isError": result.is_error});
            if let Some(meta) = blocks.meta.clone().and_then(without_reserved_keys) {
                body["_meta"] = Value::Object(meta);
            }
            body
        }
        None => json!({
            "content": [{"type": "text", "text": result.content}],
            "isError": result.is_error,
        }),
    };
    if let Some(value) = result.structured.as_ref().filter(|value| value.is_object()) {
        body["structuredContent"] = value.clone();
    }
    body
}

/// The prefix of the `_meta` keys toolgate sets on results (a held call's approval id): a tool's
/// own keys under it are not passed on.
pub const RESERVED_META_PREFIX: &str = "dev.toolgate/";

/// The prefix of the `_meta` keys the protocol reserves for the hop a message travels (on
/// 2026-07-28 a server names itself under `io.modelcontextprotocol/serverInfo`): a tool's own are
/// not passed on, so that no upstream speaks for the server the client talks to.
pub const PROTOCOL_META_PREFIX: &str = "io.modelcontextprotocol/";

/// `meta` less the keys under [`RESERVED_META_PREFIX`] and [`PROTOCOL_META_PREFIX`], so that no
/// tool can make a client believe its call is held for an approval, or that another server
/// answered; `None` when nothing is left.
pub(crate) fn without_reserved_keys(
    mut meta: serde_json::Map<String, Value>,
) -> Option<serde_json::Map<String, Value>> {
    meta.retain(|key, _| {
        !key.starts_with(RESERVED_META_PREFIX) && !key.starts_with(PROTOCOL_META_PREFIX)
    });
    (!meta.is_empty()).then_some(meta)
}

/// The `CallToolResult` for a result with a structured part: the text block, then the value as
/// serialized JSON in a second text block (the specification asks servers to send both for
/// clients that only read text), and the value itself as `structuredContent`. MCP requires
/// `structuredContent` to be an object; any other value is sent in the text block only.
pub fn call_tool_result_with(result: &ToolResult, structured: Option<&Value>) -> Value {
    let mut body = json!({
        "content": [{"type": "text", "text": result.content}],
        "isError": result.is_error,
    });
    if let Some(value) = structured {
        body["content"] = Value::Array(super::results::text_blocks(result, structured, "text"));
        if value.is_object() {
            body["structuredContent"] = value.clone();
        }
    }
    body
}

/// The whole JSON-RPC response to a `tools/call` request.
pub fn call_tool_response(request_id: &Value, result: &ToolResult) -> Value {
    json!({"jsonrpc": "2.0", "id": request_id, "result": call_tool_result(result)})
}

fn error_response(id: &Value, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": INVALID_PARAMS, "message": message},
    })
}
