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

/// The call a `tools/call` request asks for; its `call_id` is the JSON-RPC `id` as text. The
/// name and `arguments` are read as the [module docs](super) say (an object, or a string holding
/// one, parsed strictly).
///
/// # Errors
///
/// The JSON-RPC error response to send back:
/// - code [`INVALID_REQUEST`] with id `null` if the request's `id` is not a non-empty string or an
///   integer (MCP forbids a `null` id, and a request without one cannot be answered);
/// - code [`INVALID_PARAMS`] with the request's id for a tool the registry does not have (exact
///   name), a missing name, or arguments that cannot be used.
pub fn call_from_request(request: &Value, registry: &ToolRegistry) -> Result<ToolCall, Value> {
    let call_id = match request.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        Some(Value::Number(id)) if id.is_i64() || id.is_u64() => id.to_string(),
        _ => {
            return Err(json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {
                    "code": INVALID_REQUEST,
                    "message": "tools/call needs an id: a non-empty string or an integer",
                },
            }));
        }
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

/// The `CallToolResult` for a result: its content as one text block, and `isError`.
pub fn call_tool_result(result: &ToolResult) -> Value {
    json!({
        "content": [{"type": "text", "text": result.content}],
        "isError": result.is_error,
    })
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
