//! The plain data that crosses the boundary to and from the model.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Digest as _;

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
    /// Who the call is made for, when the code that received it authenticated a caller (a
    /// gateway's API key or token). Set only by that code, through
    /// [`with_principal`](Self::with_principal) — never from what a model wrote: the provider
    /// readers and [`new`](Self::new) leave it empty. Rules can judge it (`principals` in a rule),
    /// every audit event records its id, and an approval held for it is bound to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<Arc<Principal>>,
}

/// An authenticated caller: an id (an API key's name, a token's subject) and the groups rules
/// may judge. Neither is secret; both appear in audit events and approvals.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolgate::{Principal, ToolCall};
///
/// let alice = Principal::new("alice", ["developers"]);
/// let call = ToolCall::new("c1", "deploy", json!({})).with_principal(alice.clone());
/// assert_eq!(call.principal.as_deref(), Some(&alice));
/// assert!(alice.in_group("developers") && !alice.in_group("ops"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Principal {
    /// The caller's id.
    pub id: String,
    /// The groups the caller is in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

impl Principal {
    /// A principal `id` in `groups`.
    pub fn new(id: impl Into<String>, groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            id: id.into(),
            groups: groups.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether the caller is in `group` (exact, case-sensitive).
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|own| own == group)
    }
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
            .field(
                "principal",
                &self.principal.as_ref().map(|principal| &principal.id),
            )
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
            principal: None,
        }
    }

    /// The same call, made for `principal` (see [`principal`](Self::principal)).
    #[must_use]
    pub fn with_principal(mut self, principal: impl Into<Arc<Principal>>) -> Self {
        self.principal = Some(principal.into());
        self
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
    /// The handler's structured output: for a tool with an output schema, a JSON value that
    /// satisfied it. For a [`structured`](crate::ToolDefinition::structured) handler `content`
    /// holds the same value as JSON text; for a [`ToolOutput`](crate::definition::ToolOutput)
    /// it sits beside the tool's own content blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// The content blocks a tool sent and the result's `_meta`, kept as sent (a
    /// [`ToolOutput`](crate::definition::ToolOutput) handler's: an MCP upstream's images, audio,
    /// resource links and embedded resources beside its text). MCP servers pass them on
    /// unchanged; providers that read text only get `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Box<ResultBlocks>>,
}

/// Which fields of a content block hold no text a person or a model reads: the block's own
/// `type` (a string), and the payload MCP defines — an image's or audio clip's base64 `data` and
/// its `mimeType`, an embedded resource's `blob` and its `mimeType`. Only there: a `data` field
/// of a text block or a link, a `blob` outside an embedded resource, a `resource` field of a block
/// that is no resource block, and a `data` or `type` key in structured content or deeper in a
/// block (`{"data": [...]}` is the commonest envelope of an API) are text like any other (a card
/// number in a text block's `data` passed every rule). Read from the block's `type` once, before
/// its fields are walked; result rules and provenance skip the same fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockFields {
    /// A block of type `image` or `audio`.
    Media,
    /// A block of type `resource`: its `resource` is an embedded resource.
    Resource,
    /// A block of any other string type.
    Other,
    /// A block whose `type` is no string: every field is text.
    Untyped,
    /// The `resource` a resource block embeds.
    Embedded,
}

impl BlockFields {
    /// The fields of `block`, a content block.
    pub(crate) fn of(block: &serde_json::Map<String, serde_json::Value>) -> Self {
        match block.get("type").and_then(serde_json::Value::as_str) {
            Some("image" | "audio") => Self::Media,
            Some("resource") => Self::Resource,
            Some(_) => Self::Other,
            None => Self::Untyped,
        }
    }

    /// Whether the field `key` is the block's type or payload, not text.
    pub(crate) fn is_payload(self, key: &str) -> bool {
        match self {
            Self::Media => matches!(key, "type" | "data" | "mimeType"),
            Self::Resource | Self::Other => key == "type",
            Self::Untyped => false,
            Self::Embedded => matches!(key, "blob" | "mimeType"),
        }
    }

    /// Whether the field `key` is an embedded resource, read as [`Self::Embedded`].
    pub(crate) fn embeds(self, key: &str) -> bool {
        self == Self::Resource && key == "resource"
    }
}

/// The content blocks of a [`ToolResult`] and its `_meta`, in MCP's shape, as the tool sent them.
///
/// Each block is a JSON object with a string `"type"` (`text`, `image`, `audio`,
/// `resource_link`, `resource`, or one a later protocol revision defines); annotations and
/// `_meta` on a block are part of it.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolgate::ResultBlocks;
///
/// let blocks = ResultBlocks::new(vec![json!({"type": "image", "data": "AA==", "mimeType": "image/png"})]);
/// assert_eq!(blocks.content.len(), 1);
/// assert!(blocks.meta.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResultBlocks {
    /// The content blocks, in the order sent.
    pub content: Vec<Value>,
    /// The result's `_meta` object, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
}

impl ResultBlocks {
    /// `content` with no `_meta`.
    pub fn new(content: Vec<Value>) -> Self {
        Self {
            content,
            meta: None,
        }
    }

    /// The same blocks with the result's `_meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: serde_json::Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }
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
            structured: None,
            blocks: None,
        }
    }

    /// A successful result carrying structured output: `content` is the value as compact JSON.
    ///
    /// # Examples
    ///
    /// ```
    /// let result = toolgate::ToolResult::structured("call_1", serde_json::json!({"sum": 42}));
    /// assert_eq!(result.content, r#"{"sum":42}"#);
    /// assert_eq!(result.structured, Some(serde_json::json!({"sum": 42})));
    /// ```
    pub fn structured(call_id: impl Into<String>, value: Value) -> Self {
        Self {
            call_id: call_id.into(),
            content: value.to_string(),
            is_error: false,
            structured: Some(value),
            blocks: None,
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
            structured: None,
            blocks: None,
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
    /// The JSON Schema its structured output satisfies, for a tool built with
    /// [`ToolDefinition::structured`](crate::ToolDefinition::structured) (MCP `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
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
            output_schema: None,
        }
    }

    /// The same spec, declaring the JSON Schema of the tool's structured output.
    #[must_use]
    pub fn with_output_schema(mut self, output_schema: Value) -> Self {
        self.output_schema = Some(output_schema);
        self
    }
}

/// Bounds and escapes text the model sent (a tool name, a call id) before it is quoted back in a
/// message, stamped on an audit event or put in a span, so a megabyte-long name cannot turn every
/// result into a megabyte.
///
/// Guarantees:
/// - text of at most 128 characters (`QUOTE_MAX_CHARS`) comes back whole, escaped with
///   `char::escape_debug` (plain printable ASCII without quotes or backslashes is unchanged);
/// - longer text keeps its first 56 characters, escaped, then `…` and the `sha256:` digest (64 hex
///   digits) of the whole text: at most 128 characters before escapes;
/// - two different texts never get the same bounded form (short of a SHA-256 collision): the
///   escaping can be undone, and `…` is escaped (`\u{2026}`) everywhere except as the cut marker, so
///   a short text cannot pose as a cut long one, and two long texts sharing a prefix differ in
///   their digests.
pub(crate) fn quote_bounded(text: &str) -> String {
    /// The characters kept, escaped, before the digest of a cut text; with `…` and the 71
    /// characters of the digest the cut form is exactly `QUOTE_MAX_CHARS` long.
    const KEPT_CHARS: usize = QUOTE_MAX_CHARS - 1 - 71;
    // Fast path: short printable ASCII with nothing to escape is quoted as it is.
    if text.len() <= QUOTE_MAX_CHARS
        && text.bytes().all(|byte| {
            byte == b' ' || (byte.is_ascii_graphic() && !matches!(byte, b'\\' | b'"' | b'\''))
        })
    {
        return text.to_owned();
    }
    let cut = text.chars().nth(QUOTE_MAX_CHARS).is_some();
    let kept = if cut { KEPT_CHARS } else { QUOTE_MAX_CHARS };
    let mut quoted = String::with_capacity(QUOTE_MAX_CHARS + 8);
    for ch in text.chars().take(kept) {
        // `…` marks a cut; escaped anywhere else so the mark cannot be forged.
        if ch == CUT_MARK {
            quoted.push_str("\\u{2026}");
        } else {
            quoted.extend(ch.escape_debug());
        }
    }
    if cut {
        quoted.push(CUT_MARK);
        quoted.push_str(&crate::canonical::hex_digest(&sha2::Sha256::digest(
            text.as_bytes(),
        )));
    }
    quoted
}

/// Texts up to this many characters are quoted whole by `quote_bounded`.
const QUOTE_MAX_CHARS: usize = 128;

/// What `quote_bounded` puts between the kept prefix and the digest of a cut text.
const CUT_MARK: char = '…';

#[cfg(test)]
mod tests {
    use super::quote_bounded;

    #[test]
    fn cut_texts_are_bounded_and_keep_a_digest_of_the_whole() {
        for text in [
            "é".repeat(1_000_000),
            format!("x\n{}", "\u{301}".repeat(10_000)),
            "…".repeat(500),
        ] {
            let quoted = quote_bounded(&text);
            assert!(quoted.len() < 1_000, "{} bytes", quoted.len());
            assert_eq!(quoted.matches('…').count(), 1, "only the cut mark is bare");
            assert!(quoted.contains("…sha256:"));
        }
    }

    #[test]
    fn texts_differing_anywhere_quote_differently() {
        let base = "a".repeat(300);
        let mut seen = std::collections::HashSet::new();
        for at in [0, 55, 56, 128, 129, 299] {
            let mut text = base.clone().into_bytes();
            text[at] = b'b';
            assert!(
                seen.insert(quote_bounded(&String::from_utf8(text).unwrap())),
                "{at}"
            );
        }
        assert!(seen.insert(quote_bounded(&base)));
        // A text within the bound, a cut text, and one that spells the cut text: all distinct.
        let short = "a".repeat(128);
        assert_eq!(quote_bounded(&short), short);
        assert_ne!(quote_bounded(&quote_bounded(&base)), quote_bounded(&base));
    }
}
