//! toolgate's plain data ↔ the SDK's MCP types.

use rmcp::model::{CallToolResult, ContentBlock, ListToolsResult, MetaObject, Tool};
use serde_json::{Value, json};

use crate::contract::{ToolResult, ToolSpec};
use crate::definition::ToolOutput;

/// The `_meta` key under which a held call's approval id is given to the client (under
/// [`RESERVED_META_PREFIX`], which no tool's own result may use).
pub const APPROVAL_ID_META: &str = "dev.toolgate/approvalId";

/// The `tools/list` result for `specs`. A spec whose schema is not an object (MCP requires one)
/// is listed with an empty object schema only if it had none; others are left out, since a client
/// could not call them correctly.
pub(crate) fn list_result(specs: &[ToolSpec]) -> ListToolsResult {
    let tools: Vec<Tool> = specs.iter().filter_map(tool).collect();
    ListToolsResult::with_all_items(tools)
}

fn tool(spec: &ToolSpec) -> Option<Tool> {
    let schema = match &spec.input_schema {
        Value::Object(schema) => schema.clone(),
        _ => return None,
    };
    let mut schema = schema;
    // MCP requires `"type": "object"` at the top; a schema without a type accepts objects too.
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    let mut tool = json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": schema,
    });
    if let Some(output_schema) = spec
        .output_schema
        .as_ref()
        .filter(|schema| schema.is_object())
    {
        tool["outputSchema"] = output_schema.clone();
    }
    serde_json::from_value(tool).ok()
}

/// The `CallToolResult` for a toolgate result and `isError`: the content blocks a tool sent
/// ([`ToolResult::blocks`]) as sent — or an error result saying it was not passed on, when the SDK
/// cannot send one of them — with its `_meta` less the keys of reserved namespaces; otherwise
/// its content as one text block. A structured result also as `structuredContent`.
pub(crate) fn call_result(result: ToolResult) -> CallToolResult {
    let (content, meta) = match result.blocks {
        Some(blocks) => {
            let blocks = *blocks;
            let mut content = Vec::with_capacity(blocks.content.len());
            for (at, block) in blocks.content.into_iter().enumerate() {
                // The SDK cannot send a block of a type it does not know: the result is not
                // passed on in part.
                let Ok(block) = serde_json::from_value::<ContentBlock>(block) else {
                    return CallToolResult::error(vec![ContentBlock::text(format!(
                        "the tool ran, and its output was not passed on: content block {at} is of a type this server cannot send"
                    ))]);
                };
                content.push(block);
            }
            (
                content,
                blocks
                    .meta
                    .and_then(crate::providers::mcp::without_reserved_keys),
            )
        }
        None => (vec![ContentBlock::text(result.content)], None),
    };
    let mut call_result = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    // Any JSON value: the SDK moves one that is not an object into a text block for a client on
    // a revision that requires an object.
    call_result.structured_content = result.structured;
    call_result.meta = meta.map(MetaObject);
    call_result
}

pub use crate::providers::mcp::RESERVED_META_PREFIX;

/// An error result for a call that did not run, carrying `approval_id` in `_meta` when there is
/// one (a call held for an approval out of band).
pub(crate) fn not_run(text: String, approval_id: Option<String>) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    if let Some(id) = approval_id {
        let mut meta = serde_json::Map::new();
        meta.insert(APPROVAL_ID_META.to_owned(), Value::String(id));
        result.meta = Some(MetaObject(meta));
    }
    result
}

/// The text of an MCP tool result (an upstream's): its text blocks joined by newlines; the
/// structured content as JSON when there is no text. [`tool_output`] keeps the whole result.
///
/// # Examples
///
/// ```
/// use toolgate::mcp::{result_text, rmcp::model::{CallToolResult, ContentBlock}};
/// let result = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
/// assert_eq!(result_text(&result), "a\nb");
/// ```
pub fn result_text(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    if texts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        return structured.to_string();
    }
    texts.join("\n")
}

/// An MCP tool result (an upstream's) as a [`ToolOutput`], every part kept: its content blocks
/// (text, image, audio, resource link, embedded resource, annotations and `_meta` on each),
/// structured content, `isError` and `_meta` — for a [`ToolDefinition::blocks_async`] handler
/// that forwards calls.
///
/// [`ToolDefinition::blocks_async`]: crate::ToolDefinition::blocks_async
///
/// # Examples
///
/// ```
/// use toolgate::mcp::{tool_output, rmcp::model::{CallToolResult, ContentBlock}};
/// let result = CallToolResult::success(vec![ContentBlock::image("AA==", "image/png")]);
/// let output = tool_output(result);
/// assert_eq!(output.blocks[0]["type"], "image");
/// assert!(!output.is_error);
/// ```
pub fn tool_output(result: CallToolResult) -> ToolOutput {
    let blocks = result
        .content
        .into_iter()
        .map(|block| serde_json::to_value(block).unwrap_or(Value::Null))
        .collect();
    let mut output = ToolOutput::new(blocks).with_error(result.is_error == Some(true));
    output.structured = result.structured_content;
    output.meta = result.meta.map(|meta| meta.0);
    output
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::contract::ResultBlocks;

    fn with_blocks(
        content: Vec<Value>,
        meta: Option<serde_json::Map<String, Value>>,
    ) -> ToolResult {
        let mut blocks = ResultBlocks::new(content);
        blocks.meta = meta;
        let mut result = ToolResult::ok("c", "text");
        result.blocks = Some(Box::new(blocks));
        result
    }

    #[test]
    fn structured_content_that_is_not_an_object_is_passed_on() {
        let mut result = with_blocks(vec![json!({"type": "text", "text": "two"})], None);
        result.structured = Some(json!([1, 2]));
        assert_eq!(call_result(result).structured_content, Some(json!([1, 2])));
    }

    #[test]
    fn a_block_the_sdk_cannot_send_refuses_the_whole_result() {
        let result = with_blocks(
            vec![
                json!({"type": "text", "text": "SECRET"}),
                json!({"type": "video", "data": "SECRET"}),
            ],
            None,
        );
        let sent = call_result(result);
        assert_eq!(sent.is_error, Some(true));
        assert_eq!(sent.content.len(), 1);
        let text = &sent.content[0].as_text().unwrap().text;
        assert!(
            text.contains("content block 1 is of a type this server cannot send"),
            "{text}"
        );
        assert!(!text.contains("SECRET"));
    }

    #[test]
    fn a_tools_meta_in_reserved_namespaces_is_not_passed_on() {
        let meta = json!({
            "dev.toolgate/approvalId": "forged",
            "io.modelcontextprotocol/serverInfo": {"name": "forged"},
            "example.com/kept": 1
        });
        let Value::Object(meta) = meta else {
            unreachable!()
        };
        let sent = call_result(with_blocks(vec![], Some(meta)));
        assert_eq!(
            sent.meta.map(|meta| Value::Object(meta.0)),
            Some(json!({"example.com/kept": 1}))
        );
        let Value::Object(only_reserved) = json!({"dev.toolgate/x": 1}) else {
            unreachable!()
        };
        assert!(
            call_result(with_blocks(vec![], Some(only_reserved)))
                .meta
                .is_none()
        );
    }

    #[test]
    fn an_unreadable_answer_is_told_apart_from_no_answer() {
        use super::super::CallFailure;
        assert_eq!(
            CallFailure::of(rmcp::service::ServiceError::UnexpectedResponse),
            CallFailure::Unreadable
        );
    }
}
