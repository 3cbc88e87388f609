//! What one assistant turn holds besides calls: items toolgate does not run, reported by place
//! and kind so none disappears without a trace.

use crate::contract::quote_bounded;

use super::ParsedCall;

/// The calls of one turn, in order, and every item of the turn that is not a call toolgate runs
/// (other than plain content: text, reasoning, thinking).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Turn {
    /// The calls, each usable or already answered with an error result for its id.
    pub calls: Vec<ParsedCall>,
    /// Items toolgate did not turn into calls, in order.
    pub not_handled: Vec<NotHandled>,
}

/// An item of a provider's output that is not a call toolgate can run.
///
/// Its place, kind and id are reported; its content (which the model or a remote tool wrote)
/// is not copied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotHandled {
    /// Where it was: `output[2]`, `content[1]`, `parts[0]`, or the stream index.
    pub place: String,
    /// Its type as the provider named it, quoted bounded, e.g. `mcp_call`.
    pub kind: String,
    /// Its id (`call_id`, else `id`), quoted bounded, if it had one.
    pub id: Option<String>,
    /// Why toolgate did not run it.
    pub reason: NotHandledReason,
}

/// Why an item was not turned into a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotHandledReason {
    /// The provider ran this tool on its own side (web search, code execution, a remote MCP
    /// server): no toolgate policy saw it. Remove the provider-side tool from the request if
    /// every call must pass the gate.
    RanByProvider,
    /// The provider waits for an answer toolgate cannot give (a local shell or computer action,
    /// an MCP approval request): answer or refuse it yourself.
    NeedsAnswer,
    /// A type this version of toolgate does not know: do not ignore it silently.
    Unknown,
}

impl NotHandled {
    pub(super) fn new(
        place: String,
        kind: &str,
        id: Option<&str>,
        reason: NotHandledReason,
    ) -> Self {
        Self {
            place,
            kind: quote_bounded(kind),
            id: id.map(quote_bounded),
            reason,
        }
    }
}

/// How an adapter treats an item type it met.
pub(super) enum Class {
    /// Plain content: not reported.
    Content,
    /// Not a call toolgate runs: reported.
    NotHandled(NotHandledReason),
}

/// Responses API output item types other than `function_call` and `custom_tool_call`.
pub(super) fn responses_item(kind: &str) -> Class {
    use NotHandledReason::*;
    match kind {
        // Input items a stateless request carries back: the user's messages, the answers
        // already given, references to stored items. None is a call to run.
        "message"
        | "reasoning"
        | "function_call_output"
        | "custom_tool_call_output"
        | "item_reference"
        | "compaction" => Class::Content,
        "file_search_call"
        | "web_search_call"
        | "code_interpreter_call"
        | "image_generation_call"
        | "mcp_call"
        | "mcp_list_tools" => Class::NotHandled(RanByProvider),
        "computer_call"
        | "local_shell_call"
        | "shell_call"
        | "apply_patch_call"
        | "mcp_approval_request" => Class::NotHandled(NeedsAnswer),
        _ => Class::NotHandled(Unknown),
    }
}

/// Anthropic content block types other than `tool_use`.
pub(super) fn anthropic_block(kind: &str) -> Class {
    use NotHandledReason::*;
    match kind {
        "text" | "thinking" | "redacted_thinking" => Class::Content,
        "server_tool_use"
        | "mcp_tool_use"
        | "mcp_tool_result"
        | "web_search_tool_result"
        | "web_fetch_tool_result"
        | "code_execution_tool_result"
        | "bash_code_execution_tool_result"
        | "text_editor_code_execution_tool_result"
        | "tool_search_tool_result"
        | "container_upload" => Class::NotHandled(RanByProvider),
        _ => Class::NotHandled(Unknown),
    }
}

/// The `WireError` an item-by-item reader (`function_calls`, `tool_uses`) returns for the first
/// item it does not handle: those readers have no place to report it.
pub(super) fn refuse(not_handled: &[NotHandled]) -> Result<(), super::WireError> {
    match not_handled.first() {
        None => Ok(()),
        Some(item) => Err(super::WireError::NotHandled {
            place: item.place.clone(),
            kind: item.kind.clone(),
            reason: item.reason,
        }),
    }
}
