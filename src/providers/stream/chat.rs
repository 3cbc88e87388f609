//! OpenAI Chat Completions streaming: `chat.completion.chunk` objects whose
//! `choices[0].delta.tool_calls` carry fragments of each call, addressed by `index`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::frame::Frame;
use super::{Partial, StreamLimits, cut_short, index, reason};
use crate::contract::ToolResult;
use crate::providers::{ParsedCall, Turn, WireError};

/// Assembles the tool calls of one streamed Chat Completions response (choice 0; request
/// `n = 1`).
///
/// The first delta of a call carries its `id`, `type` and `function.name`; later ones append to
/// `function.arguments`. All calls complete at the choice's `finish_reason`: `tool_calls` or
/// `stop` reads them, any other (`length`, `content_filter`) makes each an error result. See the
/// [module docs](super) for the full table.
///
/// ```
/// use serde_json::json;
/// use toolgate::providers::stream::ChatStream;
///
/// let mut stream = ChatStream::new();
/// let first = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1",
///     "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}, "finish_reason": null}]});
/// assert!(stream.push(&first)?.is_empty());
/// stream.push_data(r#"{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
///     "function": {"arguments": "{\"location\": \"Paris\"}"}}]}, "finish_reason": null}]}"#)?;
/// let done = stream.push_data(r#"{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}"#)?;
/// assert_eq!(done[0].as_ref().map(|call| call.arguments["location"].clone()), Ok(json!("Paris")));
/// stream.push_data("[DONE]")?;
/// assert!(stream.finish()?.calls.is_empty());
/// # Ok::<(), toolgate::providers::WireError>(())
/// ```
#[derive(Default)]
pub struct ChatStream {
    /// Open calls by their `tool_calls[].index`.
    calls: BTreeMap<u64, Chat>,
    /// Its `ended` is set by `finish_reason` or `[DONE]`.
    frame: Frame,
}

/// The most ids one call may be sent beyond its first; each is answered with an error result.
const MAX_EXTRA_IDS: usize = 16;

#[derive(Default)]
struct Chat {
    partial: Partial,
    /// Ids sent after the first for the same index: each is answered with an error result too,
    /// so no id the model used goes unanswered.
    extra_ids: Vec<String>,
}

impl std::fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatStream")
            .field("open_calls", &self.calls.len())
            .field("ended", &self.frame.ended)
            .finish_non_exhaustive()
    }
}

impl ChatStream {
    /// An assembler for one response, with the default [`StreamLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An assembler for one response that buffers at most what `limits` allow.
    pub fn with_limits(limits: StreamLimits) -> Self {
        Self {
            frame: Frame::new(limits),
            ..Self::default()
        }
    }

    /// Reads one SSE `data` payload: `[DONE]` ends the stream, anything else is parsed strictly
    /// (duplicate keys refused) and pushed.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push), and [`WireError`] for a payload that is not strict JSON.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<ParsedCall>, WireError> {
        if data.trim() == "[DONE]" {
            self.frame.ended = true;
            return Ok(Vec::new());
        }
        let chunk = self.frame.parse("chunk", data)?;
        self.push(&chunk)
    }

    /// Reads one chunk; returns the calls it completed (at `finish_reason`), in index order.
    ///
    /// # Errors
    ///
    /// [`WireError`] for a chunk that is not a completion chunk, a choice other than 0, a legacy
    /// `function_call` delta, a `tool_calls` entry without an index or with an id that is not a
    /// non-empty string, a chunk after the end, or a completed call that never got an id.
    pub fn push(&mut self, chunk: &Value) -> Result<Vec<ParsedCall>, WireError> {
        let place = self.frame.next_place("chunk");
        if chunk.get("error").is_some_and(|error| !error.is_null()) {
            return Err(WireError::malformed(
                format!("{place}.error"),
                "the provider reported an error in the stream",
            ));
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Err(WireError::malformed(
                format!("{place}.choices"),
                "missing or not an array: expected a chat.completion.chunk",
            ));
        };
        let mut completed = Vec::new();
        for (position, choice) in choices.iter().enumerate() {
            let place = format!("{place}.choices[{position}]");
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                return Err(WireError::malformed(
                    format!("{place}.index"),
                    "only choice 0 is assembled: request n = 1",
                ));
            }
            if self.frame.ended {
                return Err(WireError::malformed(
                    place,
                    "a chunk after the stream ended",
                ));
            }
            if let Some(delta) = choice.get("delta").filter(|delta| !delta.is_null()) {
                self.delta(delta, &format!("{place}.delta"))?;
            }
            match choice.get("finish_reason") {
                None | Some(Value::Null) => {}
                Some(finish) => {
                    self.frame.ended = true;
                    let readable = matches!(finish.as_str(), Some("tool_calls" | "stop"));
                    let why = format!("the stream stopped ({})", reason(Some(finish)));
                    completed.extend(self.complete_all(&place, readable.then_some(()), &why)?);
                }
            }
        }
        Ok(completed)
    }

    fn delta(&mut self, delta: &Value, place: &str) -> Result<(), WireError> {
        if !delta.is_object() {
            return Err(WireError::malformed(place, "a delta is not an object"));
        }
        if delta
            .get("function_call")
            .is_some_and(|call| !call.is_null())
        {
            return Err(WireError::malformed(
                format!("{place}.function_call"),
                "legacy function_call has no id to answer: request tools instead of functions",
            ));
        }
        let fragments = match delta.get("tool_calls") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(fragments)) => fragments,
            Some(_) => {
                return Err(WireError::malformed(
                    format!("{place}.tool_calls"),
                    "not an array",
                ));
            }
        };
        for (position, fragment) in fragments.iter().enumerate() {
            let place = format!("{place}.tool_calls[{position}]");
            let slot = index(fragment, "index", &place)?;
            if !self.calls.contains_key(&slot) {
                // Chat calls stay open until the end, so every index is an open call.
                let open = self.calls.len();
                self.frame
                    .budget
                    .open(open, open, true, &format!("{place}.index"))?;
            }
            let call = self.calls.entry(slot).or_default();
            match fragment.get("id") {
                None | Some(Value::Null) => {}
                Some(Value::String(id)) if !id.is_empty() => match &call.partial.id {
                    None => {
                        self.frame.budget.claim_id(id, &format!("{place}.id"))?;
                        call.partial.id = Some(id.clone());
                    }
                    Some(known) if known == id => {}
                    Some(_) if call.extra_ids.contains(id) => {}
                    Some(_) => {
                        // Each is answered, so each is held: a bounded number of them.
                        if call.extra_ids.len() >= MAX_EXTRA_IDS {
                            return Err(WireError::malformed(
                                format!("{place}.id"),
                                format!(
                                    "the stream sent more than {MAX_EXTRA_IDS} ids for one call"
                                ),
                            ));
                        }
                        self.frame.budget.claim_id(id, &format!("{place}.id"))?;
                        call.partial.fail_dropping(
                            "the stream sent two ids for one call",
                            &mut self.frame.budget,
                        );
                        call.extra_ids.push(id.clone());
                    }
                },
                Some(_) => {
                    return Err(WireError::malformed(
                        format!("{place}.id"),
                        "not a non-empty string",
                    ));
                }
            }
            match fragment.get("type") {
                None | Some(Value::Null) => {}
                Some(Value::String(kind)) if kind == "function" => {}
                Some(_) => call.partial.fail_dropping(
                    "unsupported tool call type: only function tools can be called",
                    &mut self.frame.budget,
                ),
            }
            if let Some(function) = fragment.get("function").filter(|f| !f.is_null()) {
                if !function.is_object() {
                    call.partial.fail_dropping(
                        "the stream sent a function that is not an object",
                        &mut self.frame.budget,
                    );
                    continue;
                }
                if let Some(name) = function.get("name") {
                    call.partial.name(name);
                }
                call.partial
                    .append(function.get("arguments"), &mut self.frame.budget);
            }
        }
        Ok(())
    }

    /// Completes every open call: read (`Some`) or cut short with `why` (`None`).
    fn complete_all(
        &mut self,
        place: &str,
        readable: Option<()>,
        why: &str,
    ) -> Result<Vec<ParsedCall>, WireError> {
        let calls = std::mem::take(&mut self.calls);
        if let Some(slot) = calls
            .iter()
            .find_map(|(slot, call)| call.partial.id.is_none().then_some(slot))
        {
            return Err(WireError::malformed(
                format!("{place}: tool call index {slot}"),
                "the stream never sent the call's id",
            ));
        }
        let mut completed = Vec::with_capacity(calls.len());
        for call in calls.into_values() {
            let Chat {
                mut partial,
                extra_ids,
            } = call;
            self.frame.budget.release(&partial);
            let Some(id) = partial.id.take() else {
                continue; // unreachable: checked above
            };
            for extra in extra_ids {
                completed.push(Err(ToolResult::error(
                    extra,
                    "the stream sent two ids for one call",
                )));
            }
            completed.push(match readable {
                Some(()) => partial.complete(id),
                None => cut_short(id, why),
            });
        }
        Ok(completed)
    }

    /// Ends the stream: every call still open (no `finish_reason` came) becomes an error result
    /// for its id.
    ///
    /// # Errors
    ///
    /// [`WireError`] if an open call never got an id.
    pub fn finish(mut self) -> Result<Turn, WireError> {
        let calls = self.complete_all(
            "end of stream",
            None,
            "the stream ended without a finish_reason",
        )?;
        Ok(self.frame.turn(calls))
    }
}
