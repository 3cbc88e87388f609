//! Tools that answer in content blocks (an MCP upstream's images, audio, resource links and
//! embedded resources beside its text, its structured content and `_meta`): what they return, and
//! the checks and bounds it passes before anything is passed on.

use std::sync::Arc;

use serde_json::Value;

use super::ToolOutput;
use super::handler::{AsyncBlocksHandler, BoxFuture, Handler};
use super::{DefinitionError, MAX_ARGUMENT_DEPTH, ToolDefinition, ToolError, exceeds_depth};
use crate::contract::{ResultBlocks, ToolResult, ToolSpec};

impl ToolDefinition {
    /// A tool whose async handler answers in content blocks ([`ToolOutput`]): a gateway's
    /// forwarding handler, which must pass on what its upstream sent — images, audio, resource
    /// links, embedded resources, structured content, `isError` and `_meta` — not only its text.
    ///
    /// # Guarantees
    ///
    /// What the handler returns is passed on unchanged, or not at all. It is refused — the result
    /// is an error saying the tool ran and why nothing of its output was passed on, quoting none
    /// of it — when a block is not a JSON object with a string `"type"`; when anything nests
    /// deeper than [`MAX_ARGUMENT_DEPTH`]; when the spec declares an output schema and a
    /// successful output has no structured content, or any structured content does not satisfy
    /// it; and when its JSON text (blocks, structured content and `_meta` together) is longer than
    /// [`max_output_bytes`](Self::max_output_bytes). The result's `content` is its text for
    /// providers that read text only: text blocks and embedded text resources as they are, other
    /// blocks named in brackets (`[image/png image]`), the structured content as JSON when there
    /// is nothing else.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), for both schemas; [`DefinitionError::OutputSchema`] if an output
    /// schema is declared and is not an object.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::definition::ToolOutput;
    /// use toolgate::{ToolDefinition, ToolError, ToolSpec};
    ///
    /// let spec = ToolSpec::new("plot", "Plot a series.", json!({"type": "object"}));
    /// let plot = ToolDefinition::blocks_async(spec, |_: Value| async move {
    ///     Ok::<_, ToolError>(ToolOutput::new(vec![
    ///         json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
    ///     ]))
    /// })?;
    /// assert!(plot.is_async());
    /// # Ok::<(), toolgate::definition::DefinitionError>(())
    /// ```
    pub fn blocks_async<F, Fut>(spec: ToolSpec, handler: F) -> Result<Self, DefinitionError>
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let handler: Arc<AsyncBlocksHandler> =
            Arc::new(move |arguments: Value| -> BoxFuture<'static, _> {
                Box::pin(handler(arguments))
            });
        Self::build(spec, Handler::AsyncBlocks(handler))
    }

    /// The result for a [`ToolOutput`]: passed on as sent when every check passes, else an error
    /// result that quotes nothing of it.
    pub(crate) fn blocks_result(&self, call_id: String, output: ToolOutput) -> ToolResult {
        let refused = |why: String| {
            ToolResult::error(
                call_id.clone(),
                format!("the tool ran, and its output was not passed on: {why}"),
            )
        };
        if let Some(at) = output
            .blocks
            .iter()
            .position(|block| type_of(block).is_none())
        {
            return refused(format!(
                "content block {at} is not a JSON object with a string \"type\""
            ));
        }
        let too_deep = output
            .blocks
            .iter()
            .any(|block| exceeds_depth(block, MAX_ARGUMENT_DEPTH))
            || output
                .structured
                .as_ref()
                .is_some_and(|value| exceeds_depth(value, MAX_ARGUMENT_DEPTH))
            || output.meta.as_ref().is_some_and(|meta| {
                meta.values()
                    .any(|value| exceeds_depth(value, MAX_ARGUMENT_DEPTH - 1))
            });
        if too_deep {
            return refused(format!("it nests deeper than {MAX_ARGUMENT_DEPTH} levels"));
        }
        if let Some(validator) = &self.output_validator {
            match &output.structured {
                None if !output.is_error => {
                    return refused(
                        "the tool declares an output schema but sent no structured content"
                            .to_owned(),
                    );
                }
                Some(value) if !validator.is_valid(value) => {
                    let violations = super::output::count_violations(validator, value);
                    return refused(format!(
                        "its structured content does not satisfy the tool's output schema ({violations} violation(s))"
                    ));
                }
                _ => {}
            }
        }
        let size = json_length(&output.blocks)
            + output.structured.as_ref().map_or(0, json_length)
            + output.meta.as_ref().map_or(0, json_length);
        if size > self.max_output_bytes {
            return refused(format!(
                "it is {size} bytes as JSON, the limit is {}",
                self.max_output_bytes
            ));
        }
        let content = text_of(&output.blocks, output.structured.as_ref());
        let mut blocks = ResultBlocks::new(output.blocks);
        blocks.meta = output.meta;
        let mut result = if output.is_error {
            ToolResult::error(call_id, content)
        } else {
            ToolResult::ok(call_id, content)
        };
        result.structured = output.structured;
        result.blocks = Some(Box::new(blocks));
        result
    }
}

/// A block's `"type"`, if it is an object that has a string one.
fn type_of(block: &Value) -> Option<&str> {
    block.as_object()?.get("type")?.as_str()
}

/// The length of `value`'s compact JSON text, counted without building it.
fn json_length(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a counter cannot fail; were it to, the length would be understated,
    // so it is counted as unbounded.
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// The text of a blocks result, for providers that read text only: text blocks and embedded
/// text resources as they are, other blocks named in brackets, joined by newlines; the structured
/// content as JSON when there are no blocks.
pub(crate) fn text_of(blocks: &[Value], structured: Option<&Value>) -> String {
    if blocks.is_empty() {
        return structured.map(Value::to_string).unwrap_or_default();
    }
    let parts: Vec<String> = blocks.iter().map(block_text).collect();
    parts.join("\n")
}

fn block_text(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    match type_of(block).unwrap_or_default() {
        "text" => field("text").unwrap_or_default().to_owned(),
        "resource" => {
            let resource = block.get("resource");
            let inner = |name: &str| resource.and_then(|r| r.get(name)).and_then(Value::as_str);
            match (inner("text"), inner("uri")) {
                (Some(text), _) => text.to_owned(),
                (None, Some(uri)) => format!("[embedded resource {uri}]"),
                (None, None) => "[embedded resource]".to_owned(),
            }
        }
        "resource_link" => match field("uri") {
            Some(uri) => format!("[resource link {uri}]"),
            None => "[resource link]".to_owned(),
        },
        kind => match field("mimeType") {
            Some(mime) => format!("[{mime} {kind}]"),
            None => format!("[{kind}]"),
        },
    }
}
