//! What a tool that answers in content blocks returns (see
//! [`ToolDefinition::blocks_async`](crate::ToolDefinition::blocks_async)).

use serde_json::{Map, Value};

/// What a tool that answers in content blocks returned: its blocks (MCP's shape), its structured
/// content, whether it reports an error, and its `_meta` — all passed on as sent once they pass
/// the definition's checks ([`ToolDefinition::blocks_async`](crate::ToolDefinition::blocks_async)).
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolgate::definition::ToolOutput;
///
/// let output = ToolOutput::new(vec![
///     json!({"type": "text", "text": "a chart"}),
///     json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
/// ]);
/// assert!(!output.is_error);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The content blocks, each a JSON object with a string `"type"`.
    pub blocks: Vec<Value>,
    /// The structured content, if the tool sent one.
    pub structured: Option<Value>,
    /// Whether the tool reports that the call failed (MCP's `isError`).
    pub is_error: bool,
    /// The result's `_meta`, if the tool sent one.
    pub meta: Option<Map<String, Value>>,
}

impl ToolOutput {
    /// A successful output made of `blocks`.
    pub fn new(blocks: Vec<Value>) -> Self {
        Self {
            blocks,
            ..Self::default()
        }
    }

    /// The same output with `structured` content beside its blocks.
    #[must_use]
    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured = Some(structured);
        self
    }

    /// The same output, reporting that the call failed (its blocks say how).
    #[must_use]
    pub fn with_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// The same output with the result's `_meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }
}
