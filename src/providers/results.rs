//! Results with a structured (JSON) part, as text blocks for the providers whose result formats
//! carry text only (OpenAI Chat, Responses, Anthropic); MCP and Gemini carry JSON natively.

use serde_json::{Value, json};

use crate::contract::ToolResult;

/// The result's text as one block, then — if given — the structured value as compact JSON text
/// in a second block; `text_type` is the provider's name for a text block (`text`,
/// `input_text`). An empty text is left out when a structured value follows, so a handler that
/// only returns JSON does not send an empty block.
pub(super) fn text_blocks(
    result: &ToolResult,
    structured: Option<&Value>,
    text_type: &str,
) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(2);
    if !result.content.is_empty() || structured.is_none() {
        blocks.push(json!({"type": text_type, "text": result.content}));
    }
    if let Some(value) = structured {
        blocks.push(json!({"type": text_type, "text": value.to_string()}));
    }
    blocks
}
