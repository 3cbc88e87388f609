//! Anthropic Messages streaming: `content_block_start` opens a `tool_use` block with its id and
//! name, `input_json_delta` events carry `partial_json`, `content_block_stop` closes it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::frame::{Frame, Slot};
use super::{Partial, StreamLimits, event_type, index, reason};
use crate::providers::anthropic::classify;
use crate::providers::{NotHandled, ParsedCall, Turn, WireError, call_id};

/// Assembles the tool calls of one streamed Anthropic message.
///
/// A `tool_use` block completes at its `content_block_stop`: the concatenated `partial_json` is
/// its input (read strictly, as a whole message's `input` string would be); a block without
/// deltas keeps the `input` of its start event (`{}`). Blocks that are not calls
/// (`server_tool_use`, `mcp_tool_use`, …) are reported as in
/// [`anthropic::turn`](crate::providers::anthropic::turn). See the [module docs](super) for the
/// full table.
///
/// ```
/// use serde_json::json;
/// use toolgate::providers::stream::AnthropicStream;
///
/// let mut stream = AnthropicStream::new();
/// stream.push(&json!({"type": "content_block_start", "index": 1, "content_block": {
///     "type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}))?;
/// stream.push(&json!({"type": "content_block_delta", "index": 1, "delta": {
///     "type": "input_json_delta", "partial_json": "{\"location\": \"Paris\"}"}}))?;
/// let done = stream.push(&json!({"type": "content_block_stop", "index": 1}))?;
/// assert_eq!(done[0].as_ref().map(|call| call.call_id.as_str()), Ok("toolu_1"));
/// # Ok::<(), toolgate::providers::WireError>(())
/// ```
#[derive(Default)]
pub struct AnthropicStream {
    blocks: BTreeMap<u64, Block>,
    frame: Frame,
}

enum Block {
    /// A `tool_use` block being assembled. Invariant: `partial.id` is `Some`.
    Tool {
        partial: Partial,
        /// The start event's `input`, used when no delta comes.
        start_input: Value,
    },
    /// A block already yielded.
    Yielded,
    /// Content, or a block already reported.
    Other,
}

impl std::fmt::Debug for AnthropicStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicStream")
            .field("blocks", &self.blocks.len())
            .field("not_handled", &self.frame.not_handled)
            .field("ended", &self.frame.ended)
            .finish_non_exhaustive()
    }
}

impl AnthropicStream {
    /// An assembler for one message, with the default [`StreamLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An assembler for one message that buffers at most what `limits` allow.
    pub fn with_limits(limits: StreamLimits) -> Self {
        Self {
            frame: Frame::new(limits),
            ..Self::default()
        }
    }

    /// The blocks reported so far that are not calls toolgate runs.
    pub fn not_handled(&self) -> &[NotHandled] {
        &self.frame.not_handled
    }

    /// Reads one SSE `data` payload, parsed strictly (duplicate keys refused), and pushes it.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push), and [`WireError`] for a payload that is not strict JSON.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<ParsedCall>, WireError> {
        let event = self.frame.parse("event", data)?;
        self.push(&event)
    }

    /// Reads one event; returns the calls it completed.
    ///
    /// # Errors
    ///
    /// [`WireError`] for an event without a type, a block event without an `index`, a delta or
    /// stop for a block never started, a block started twice, a `tool_use` block without an id,
    /// an event after `message_stop`, or an event for a block already yielded.
    pub fn push(&mut self, event: &Value) -> Result<Vec<ParsedCall>, WireError> {
        let place = self.frame.next_place("event");
        let kind = event_type(event, &place)?;
        if self.frame.ended && kind != "ping" {
            return Err(WireError::malformed(place, "an event after message_stop"));
        }
        match kind {
            "content_block_start" => self.start(event, &place),
            "content_block_delta" => {
                let slot = index(event, "index", &place)?;
                match self.blocks.get_mut(&slot) {
                    Some(Block::Tool { partial, .. }) => {
                        let delta = event.get("delta");
                        if delta.and_then(|d| d.get("type")).and_then(Value::as_str)
                            == Some("input_json_delta")
                        {
                            partial.append(
                                delta.and_then(|d| d.get("partial_json")),
                                &mut self.frame.budget,
                            );
                        } else {
                            partial.fail_dropping(
                                "the stream sent a delta other than input_json_delta",
                                &mut self.frame.budget,
                            );
                        }
                        Ok(Vec::new())
                    }
                    Some(Block::Other) => Ok(Vec::new()),
                    Some(Block::Yielded) => Err(after_stop(&place)),
                    None => Err(never_started(&place)),
                }
            }
            "content_block_stop" => {
                let slot = index(event, "index", &place)?;
                match self.blocks.insert(slot, Block::Yielded) {
                    Some(Block::Tool {
                        mut partial,
                        start_input,
                    }) => {
                        self.frame.budget.release(&partial);
                        let id = partial.id.take().unwrap_or_default();
                        if partial.arguments.is_empty() && partial.problem.is_none() {
                            let name = partial.name.map(Value::String);
                            return Ok(vec![crate::providers::parse_call(
                                id,
                                name.as_ref(),
                                Some(&start_input),
                            )]);
                        }
                        if start_input
                            .as_object()
                            .is_some_and(|input| !input.is_empty())
                        {
                            partial.fail("the stream sent the input both whole and in deltas");
                        }
                        Ok(vec![partial.complete(id)])
                    }
                    Some(Block::Other) => {
                        self.blocks.insert(slot, Block::Other);
                        Ok(Vec::new())
                    }
                    Some(Block::Yielded) => Err(after_stop(&place)),
                    None => {
                        self.blocks.remove(&slot);
                        Err(never_started(&place))
                    }
                }
            }
            "message_delta" => {
                let stop = event
                    .get("delta")
                    .and_then(|delta| delta.get("stop_reason"));
                match stop.and_then(Value::as_str) {
                    None | Some("tool_use" | "end_turn" | "stop_sequence") => Ok(Vec::new()),
                    Some(_) => {
                        Ok(self.cut_open(&format!("the message stopped ({})", reason(stop))))
                    }
                }
            }
            "message_stop" => {
                self.frame.ended = true;
                Ok(self.cut_open("the message stopped"))
            }
            "error" => {
                self.frame.ended = true;
                let kind = event.get("error").and_then(|error| error.get("type"));
                Ok(self.cut_open(&format!("the stream reported an error ({})", reason(kind))))
            }
            // `message_start`, `ping` and event types added later carry no block.
            _ => Ok(Vec::new()),
        }
    }

    fn start(&mut self, event: &Value, place: &str) -> Result<Vec<ParsedCall>, WireError> {
        let slot = index(event, "index", place)?;
        let block = event
            .get("content_block")
            .filter(|block| block.is_object())
            .ok_or_else(|| {
                WireError::malformed(format!("{place}.content_block"), "missing or not an object")
            })?;
        if self.blocks.contains_key(&slot) {
            return Err(WireError::malformed(
                format!("{place}.index"),
                "a content block started twice",
            ));
        }
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("(none)");
        let open_calls = self
            .blocks
            .values()
            .filter(|block| matches!(block, Block::Tool { .. }))
            .count();
        self.frame
            .budget
            .open(self.blocks.len(), open_calls, kind == "tool_use", place)?;
        if kind == "tool_use" {
            let id = call_id(block, "id", &format!("{place}.content_block"))?;
            self.frame
                .budget
                .claim_id(&id, &format!("{place}.content_block.id"))?;
            let mut partial = Partial {
                id: Some(id),
                ..Partial::default()
            };
            partial.name(block.get("name").unwrap_or(&Value::Null));
            // A whole input is held until the block stops: charged like argument text.
            let start_input = match block.get("input") {
                Some(input) if self.frame.budget.hold(&mut partial, input) => input.clone(),
                _ => Value::Null,
            };
            self.blocks.insert(
                slot,
                Block::Tool {
                    partial,
                    start_input,
                },
            );
        } else {
            if let Some(item) = classify(block, kind, format!("content[{slot}]")) {
                self.frame.not_handled.push(item);
            }
            self.blocks.insert(slot, Block::Other);
        }
        Ok(Vec::new())
    }

    /// Every open `tool_use` block, as an error result with `why`.
    fn cut_open(&mut self, why: &str) -> Vec<ParsedCall> {
        self.frame.cut_open(self.blocks.values_mut(), why)
    }

    /// Ends the stream: every `tool_use` block still open becomes an error result for its id;
    /// the blocks that are not calls are listed.
    ///
    /// # Errors
    ///
    /// None today; the `Result` matches the other assemblers.
    pub fn finish(mut self) -> Result<Turn, WireError> {
        let calls = self.cut_open("the stream ended");
        Ok(self.frame.turn(calls))
    }
}

impl Slot for Block {
    fn open_partial(&mut self) -> Option<&mut Partial> {
        match self {
            Block::Tool { partial, .. } => Some(partial),
            Block::Yielded | Block::Other => None,
        }
    }

    fn closed() -> Self {
        Block::Yielded
    }
}

fn after_stop(place: &str) -> WireError {
    WireError::malformed(place, "an event for a block already stopped")
}

fn never_started(place: &str) -> WireError {
    WireError::malformed(
        format!("{place}.index"),
        "no content block was started at this index",
    )
}
