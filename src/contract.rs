//! The plain data that crosses the boundary to and from the model.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the model proposed: run `tool_name` with `arguments`.
///
/// Plain data with no authority of its own: a `ToolCall` becomes runnable only after
/// [`ToolRuntime::prepare`](crate::ToolRuntime::prepare) resolved and validated it and a policy or a
/// one-time approval authorized it.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolgate::ToolCall;
///
/// let call = ToolCall::new("call_1", "calculator", json!({"a": 40, "b": 2}));
/// let wire = serde_json::to_string(&call)?;
/// assert_eq!(serde_json::from_str::<ToolCall>(&wire)?, call);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for this call; every [`ToolResult`] answering it carries the same id.
    pub call_id: String,
    /// The name of the tool the model asked for; matched exactly, never fuzzily.
    pub tool_name: String,
    /// The arguments as the model sent them, before validation.
    pub arguments: Value,
}

/// Names the call and its tool; the arguments, which may hold secrets, are never printed, so a
/// `{:?}` in a log line is safe (also inside [`ApprovalRequest`](crate::ApprovalRequest),
/// [`Outcome`](crate::Outcome) and the controller).
impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("arguments", &Redacted)
            .finish()
    }
}

/// Stands in for a value a model or a person sent, in `Debug` output.
pub(crate) struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl ToolCall {
    /// Builds a call from its three parts.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// let call = toolgate::ToolCall::new("call_1", "calculator", json!({"a": 1, "b": 2}));
    /// assert_eq!(call.tool_name, "calculator");
    /// ```
    pub fn new(call_id: impl Into<String>, tool_name: impl Into<String>, arguments: Value) -> Self {
        Self {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            arguments,
        }
    }
}

/// The answer the model sees next: the handler's output, or an error it can react to.
///
/// # Examples
///
/// ```
/// let result = toolgate::ToolResult::error("call_3", "file not found");
/// assert!(result.is_error);
/// assert_eq!(result.call_id, "call_3");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the [`ToolCall`] this result answers (G7).
    pub call_id: String,
    /// The handler's output, or a description of why the call did not run.
    pub content: String,
    /// `true` when the call failed or did not run.
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result.
    ///
    /// # Examples
    ///
    /// ```
    /// let result = toolgate::ToolResult::ok("call_1", "42");
    /// assert!(!result.is_error);
    /// ```
    pub fn ok(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// An error result the model can read and react to.
    ///
    /// # Examples
    ///
    /// ```
    /// let result = toolgate::ToolResult::error("call_1", "unknown tool: rm");
    /// assert!(result.is_error);
    /// ```
    pub fn error(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            content: content.into(),
            is_error: true,
        }
    }
}

/// What the model is shown about a tool: its name, what it does, and its argument schema.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolgate::ToolSpec;
///
/// let spec = ToolSpec::new(
///     "calculator",
///     "Add exactly two integers named a and b.",
///     json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
/// );
/// let back: ToolSpec = serde_json::from_value(serde_json::to_value(&spec)?)?;
/// assert_eq!(back, spec);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The exact name the model uses to call the tool.
    pub name: String,
    /// What the tool does, in words the model reads.
    pub description: String,
    /// The JSON Schema its arguments must satisfy.
    pub input_schema: Value,
}

impl ToolSpec {
    /// Builds a spec from its three parts.
    ///
    /// # Examples
    ///
    /// ```
    /// let spec = toolgate::ToolSpec::new("noop", "Does nothing.", serde_json::json!({"type": "object"}));
    /// assert_eq!(spec.name, "noop");
    /// ```
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
        }
    }
}

/// Shortens text the model sent before it is quoted back in a message, so a megabyte-long tool
/// name cannot turn every error result into a megabyte.
pub(crate) fn quote_bounded(text: &str) -> String {
    const MAX_CHARS: usize = 128;
    // Fast path: short printable ASCII with nothing to escape is quoted as it is.
    if text.len() <= MAX_CHARS
        && text.bytes().all(|byte| {
            byte == b' ' || (byte.is_ascii_graphic() && !matches!(byte, b'\\' | b'"' | b'\''))
        })
    {
        return text.to_owned();
    }
    let mut quoted: String = text
        .chars()
        .take(MAX_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(MAX_CHARS).is_some() {
        quoted.push('…');
    }
    quoted
}
