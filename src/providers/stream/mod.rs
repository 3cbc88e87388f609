//! Tool calls assembled from streamed events, as strictly as whole messages.
//!
//! One assembler per format: [`ChatStream`] (OpenAI Chat Completions chunks, and
//! OpenAI-compatible servers), [`ResponsesStream`] (Responses API events) and
//! [`AnthropicStream`] (Messages API events). Feed each event's parsed `data` to `push` (or its
//! text to `push_data`, which parses it strictly and understands Chat's `[DONE]`); `push` returns
//! the calls that event completed, in order, so a call can go to the gate while later ones are
//! still streaming. At the end, `finish` returns what is left: an error result for every call
//! that was still open, and the items that were not calls.
//!
//! A streamed call ends in the same shared reading as a whole one (see the [parent
//! module](super)): its concatenated argument text is parsed strictly, so duplicate keys, text
//! that is not JSON or not an object, or a truncated stream give an error result for that call's
//! id, never a call with guessed arguments.
//!
//! | Event | Outcome |
//! |---|---|
//! | an event that cannot be attributed to a call (no index, an index never opened, a call item without an id) or is not an object | [`WireError`] |
//! | an event for a call that contradicts it (a second id or name, a delta that is not text, `done` arguments other than the deltas) | error result for that call's id |
//! | the stream stops (`length`, `max_tokens`, `response.incomplete`, an `error` event, or `finish` without the end) while a call is open | error result for that call's id |
//! | an event for a call already yielded | [`WireError`]: a yielded call cannot be taken back |
//!
//! Parallel calls may interleave: events are matched to calls by index (Chat `tool_calls[].index`,
//! Responses `output_index`, Anthropic content block `index`), never by arrival order.
//!
//! Chat Completions has no per-call end event, so its calls complete together at the choice's
//! `finish_reason`; Responses calls complete at `response.function_call_arguments.done` (or
//! `response.output_item.done`), Anthropic calls at `content_block_stop`.
//!
//! No size limit is applied: bound the bytes you read from the provider.

mod anthropic;
mod chat;
mod responses;

pub use anthropic::AnthropicStream;
pub use chat::ChatStream;
pub use responses::ResponsesStream;

use serde_json::Value;

use super::{ParsedCall, WireError, parse_call};
use crate::contract::{ToolResult, quote_bounded};

/// A call being assembled.
#[derive(Default)]
struct Partial {
    /// Invariant: `Some` before the call is completed, for every format but Chat (whose first
    /// delta may lack it; completion then is a `WireError`).
    id: Option<String>,
    name: Option<String>,
    /// The concatenated argument text.
    arguments: String,
    /// Set when an event contradicted the call: it completes as this error.
    problem: Option<String>,
}

impl Partial {
    fn fail(&mut self, problem: &str) {
        if self.problem.is_none() {
            self.problem = Some(problem.to_owned());
        }
    }

    /// Records a name; a second, different one is a contradiction.
    fn name(&mut self, name: &Value) {
        match (name, &self.name) {
            (Value::Null, _) => {}
            (Value::String(name), None) if !name.is_empty() => self.name = Some(name.clone()),
            (Value::String(name), Some(known)) if name == known || name.is_empty() => {}
            (Value::String(_), Some(_)) => self.fail("the stream named one call twice"),
            _ => self.fail("the stream sent a name that is not a string"),
        }
    }

    /// Appends an argument fragment; anything but text is a contradiction.
    fn append(&mut self, fragment: Option<&Value>) {
        match fragment {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => self.arguments.push_str(text),
            Some(_) => self.fail("the stream sent an argument fragment that is not text"),
        }
    }

    /// The call, read by the shared step; its id must be known.
    fn complete(self, id: String) -> ParsedCall {
        if let Some(problem) = self.problem {
            return Err(ToolResult::error(id, problem));
        }
        let name = self.name.map(Value::String);
        parse_call(id, name.as_ref(), Some(&Value::String(self.arguments)))
    }
}

/// The error result for a call the stream left open.
fn cut_short(id: String, why: &str) -> ParsedCall {
    Err(ToolResult::error(
        id,
        format!("{why} before the call was complete"),
    ))
}

/// The reason a stream gave for stopping, bounded for a message.
fn reason(value: Option<&Value>) -> String {
    match value.and_then(Value::as_str) {
        Some(text) => quote_bounded(text),
        None => "unknown".to_owned(),
    }
}

/// An event's `index`-like field as a position.
fn index(event: &Value, field: &str, place: &str) -> Result<u64, WireError> {
    event
        .get(field)
        .and_then(Value::as_u64)
        .ok_or_else(|| WireError::malformed(format!("{place}.{field}"), "missing or not an index"))
}

/// Parses one SSE `data` payload strictly (duplicate keys refused, as in [`super::parse_body`]).
fn parse_data(data: &str, place: &str) -> Result<Value, WireError> {
    super::strict::parse(data).map_err(|problem| WireError::malformed(place, problem))
}

/// A type tag, or a `WireError` at `place.type`.
fn event_type<'a>(event: &'a Value, place: &str) -> Result<&'a str, WireError> {
    if !event.is_object() {
        return Err(WireError::malformed(place, "an event is not an object"));
    }
    event
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| WireError::malformed(format!("{place}.type"), "missing or not a string"))
}
