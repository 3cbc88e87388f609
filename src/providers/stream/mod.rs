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
//! # Bounds
//!
//! An assembler buffers only what [`StreamLimits`] allows (defaults in brackets, each
//! configurable with the assembler's `with_limits`):
//!
//! | Bound | When it is exceeded |
//! |---|---|
//! | argument text of one call ([`DEFAULT_MAX_ARGUMENT_BYTES`], 1 MiB) | error result for that call's id; its text is dropped at once |
//! | argument text of every open call together ([`DEFAULT_MAX_BUFFERED_BYTES`], 8 MiB) | error result for the call whose fragment would exceed it; its text is dropped |
//! | open calls in one stream ([`DEFAULT_MAX_OPEN_CALLS`], 128) | [`WireError`] for the event that opens one more |
//! | indices (calls, content, items) one stream opens ([`DEFAULT_MAX_INDICES`], 4,096) | [`WireError`] for the event that opens one more |
//!
//! A whole input a call holds beside its text (an Anthropic start event's `input`, a Responses
//! item finished without ever being streamed) counts against the same two bounds. A call that
//! failed buffers nothing more, so what is held stays within the bounds however many deltas
//! follow. The ids of a stream's calls are kept to the end (two calls with the same id are a
//! [`WireError`] for the second: a result could not say which of them it answers), and their
//! bytes together are bounded by `max_buffered_bytes` too (past it, a [`WireError`]); a name
//! longer than 1,024 bytes fails its call. Bound the bytes of each event you read from the
//! provider as well.

mod anthropic;
mod chat;
mod frame;
mod responses;

pub use anthropic::AnthropicStream;
pub use chat::ChatStream;
pub use responses::ResponsesStream;

use serde_json::Value;

use super::{ParsedCall, WireError, parse_call};
use crate::contract::{ToolResult, quote_bounded};

/// [`StreamLimits::max_argument_bytes`] unless set: 1 MiB.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 1 << 20;
/// [`StreamLimits::max_buffered_bytes`] unless set: 8 MiB.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 8 << 20;
/// [`StreamLimits::max_open_calls`] unless set.
pub const DEFAULT_MAX_OPEN_CALLS: usize = 128;
/// [`StreamLimits::max_indices`] unless set.
pub const DEFAULT_MAX_INDICES: usize = 4096;

/// What one stream assembler may buffer; see the [module docs](self#bounds) for what happens at
/// each bound.
///
/// ```
/// use toolgate::providers::stream::{ChatStream, StreamLimits};
///
/// let limits = StreamLimits::default().with_max_argument_bytes(64 * 1024).with_max_open_calls(16);
/// assert_eq!(limits.max_argument_bytes(), 64 * 1024);
/// let stream = ChatStream::with_limits(limits);
/// # drop(stream);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    max_argument_bytes: usize,
    max_buffered_bytes: usize,
    max_open_calls: usize,
    max_indices: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            max_open_calls: DEFAULT_MAX_OPEN_CALLS,
            max_indices: DEFAULT_MAX_INDICES,
        }
    }
}

impl StreamLimits {
    /// The most argument text one call may hold, in bytes.
    pub fn max_argument_bytes(&self) -> usize {
        self.max_argument_bytes
    }

    /// The most argument text all open calls may hold together, in bytes.
    pub fn max_buffered_bytes(&self) -> usize {
        self.max_buffered_bytes
    }

    /// The most calls one stream may have open at once.
    pub fn max_open_calls(&self) -> usize {
        self.max_open_calls
    }

    /// The most indices (calls, content blocks, output items) one stream may open.
    pub fn max_indices(&self) -> usize {
        self.max_indices
    }

    /// With at most `bytes` of argument text per call.
    #[must_use]
    pub fn with_max_argument_bytes(mut self, bytes: usize) -> Self {
        self.max_argument_bytes = bytes;
        self
    }

    /// With at most `bytes` of argument text over all open calls.
    #[must_use]
    pub fn with_max_buffered_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_bytes = bytes;
        self
    }

    /// With at most `calls` open at once.
    #[must_use]
    pub fn with_max_open_calls(mut self, calls: usize) -> Self {
        self.max_open_calls = calls;
        self
    }

    /// With at most `indices` opened in one stream.
    #[must_use]
    pub fn with_max_indices(mut self, indices: usize) -> Self {
        self.max_indices = indices;
        self
    }
}

/// The limits and what the open calls of one stream hold now.
#[derive(Debug, Default)]
struct Budget {
    limits: StreamLimits,
    /// Invariant: the sum of `arguments.len() + held` over the stream's open partials.
    buffered: usize,
    /// The bytes of the ids claimed so far (kept for the whole stream), within the same bound.
    id_bytes: usize,
    /// The ids of every call opened so far: a second call with one of them is refused.
    ids: super::DistinctIds,
}

impl Budget {
    fn new(limits: StreamLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Refuses an event that would open one more index (`open_calls` calls are open,
    /// `indices` indices were opened), or one more call if `call` is set.
    fn open(
        &self,
        indices: usize,
        open_calls: usize,
        call: bool,
        place: &str,
    ) -> Result<(), WireError> {
        if indices >= self.limits.max_indices {
            return Err(WireError::malformed(
                place,
                format!(
                    "the stream opened more than {} indices (StreamLimits::max_indices)",
                    self.limits.max_indices
                ),
            ));
        }
        if call && open_calls >= self.limits.max_open_calls {
            return Err(WireError::malformed(
                place,
                format!(
                    "the stream has more than {} calls open (StreamLimits::max_open_calls)",
                    self.limits.max_open_calls
                ),
            ));
        }
        Ok(())
    }

    /// Records a call's id; one already used in this stream is refused.
    fn claim_id(&mut self, id: &str, place: &str) -> Result<(), WireError> {
        self.id_bytes = self.id_bytes.saturating_add(id.len());
        if self.id_bytes > self.limits.max_buffered_bytes {
            return Err(WireError::malformed(
                place,
                format!(
                    "the stream's call ids exceed {} bytes (StreamLimits::max_buffered_bytes)",
                    self.limits.max_buffered_bytes
                ),
            ));
        }
        self.ids.claim(id, place)
    }

    /// Gives back what a call that leaves the stream (completed or cut) held.
    fn release(&mut self, partial: &Partial) {
        self.buffered -= partial.arguments.len() + partial.held;
    }

    /// Charges a whole input a call holds beside its text (Anthropic's start `input`) to the
    /// call; `false` (the call failed, with nothing charged) if it does not fit the bounds.
    fn hold(&mut self, partial: &mut Partial, input: &Value) -> bool {
        let size = json_size(input, self.limits.max_argument_bytes);
        // The text that may follow replaces the start input, so each is bounded on its own.
        match self.take(0, size) {
            Ok(()) => {
                partial.held += size;
                true
            }
            Err(problem) => {
                partial.fail(&problem);
                false
            }
        }
    }

    /// Charges `size` more bytes to a call whose arguments hold `already`, within both byte
    /// bounds; else the problem to fail it with, and nothing charged. The one check for text and
    /// whole inputs alike.
    fn take(&mut self, already: usize, size: usize) -> Result<(), String> {
        let limits = self.limits;
        if already.saturating_add(size) > limits.max_argument_bytes {
            return Err(too_long(limits));
        }
        if self.buffered.saturating_add(size) > limits.max_buffered_bytes {
            return Err(format!(
                "the stream's open calls exceed {} bytes of arguments (StreamLimits::max_buffered_bytes)",
                limits.max_buffered_bytes
            ));
        }
        self.buffered += size;
        Ok(())
    }
}

/// The problem of a call whose arguments pass the per-call bound.
fn too_long(limits: StreamLimits) -> String {
    format!(
        "the call's arguments exceed {} bytes (StreamLimits::max_argument_bytes)",
        limits.max_argument_bytes
    )
}

/// The bytes `value` takes as compact JSON, counted only up to one past `limit`.
fn json_size(value: &Value, limit: usize) -> usize {
    struct Count {
        bytes: usize,
        limit: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes = self.bytes.saturating_add(buf.len());
            if self.bytes > self.limit {
                // Enough is known: stop serializing.
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { bytes: 0, limit };
    let _ = serde_json::to_writer(&mut count, value);
    count.bytes
}

/// The most bytes a call's name may have: every provider caps names at 64 or 128 characters.
const MAX_NAME_BYTES: usize = 1024;

/// A whole call's arguments (an item never streamed in pieces) within `limits`, or the error
/// result that says they are not.
fn whole_within(call: ParsedCall, arguments: Option<&Value>, limits: StreamLimits) -> ParsedCall {
    let Ok(call) = call else {
        return call;
    };
    let size = arguments.map_or(0, |arguments| {
        json_size(arguments, limits.max_argument_bytes)
    });
    if size > limits.max_argument_bytes {
        return Err(ToolResult::error(call.call_id, too_long(limits)));
    }
    Ok(call)
}

/// A call being assembled.
#[derive(Default)]
struct Partial {
    /// Invariant: `Some` before the call is completed, for every format but Chat (whose first
    /// delta may lack it; completion then is a `WireError`).
    id: Option<String>,
    name: Option<String>,
    /// The concatenated argument text.
    arguments: String,
    /// Bytes charged to the budget for a whole input held beside the text.
    held: usize,
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
            (Value::String(name), _) if name.len() > MAX_NAME_BYTES => {
                self.fail("the stream sent a name longer than 1024 bytes");
            }
            (Value::String(name), None) if !name.is_empty() => self.name = Some(name.clone()),
            // An empty name is no name yet (as `null` is); a later fragment may bring it.
            (Value::String(_), None) => {}
            (Value::String(name), Some(known)) if name == known || name.is_empty() => {}
            (Value::String(_), Some(_)) => self.fail("the stream named one call twice"),
            _ => self.fail("the stream sent a name that is not a string"),
        }
    }

    /// Records a contradiction and drops the text: a failed call completes as its problem, so
    /// nothing it buffered is needed again.
    fn fail_dropping(&mut self, problem: &str, budget: &mut Budget) {
        self.fail(problem);
        // The text only: a whole input it holds stays charged until the call leaves the stream.
        budget.buffered -= self.arguments.len();
        self.arguments = String::new();
    }

    /// Appends an argument fragment within the budget; anything but text is a contradiction,
    /// and text past a bound fails the call. A failed call buffers nothing more.
    fn append(&mut self, fragment: Option<&Value>, budget: &mut Budget) {
        let text = match fragment {
            None | Some(Value::Null) => return,
            Some(Value::String(text)) => text,
            Some(_) => {
                return self.fail_dropping(
                    "the stream sent an argument fragment that is not text",
                    budget,
                );
            }
        };
        if self.problem.is_some() {
            return;
        }
        match budget.take(self.arguments.len(), text.len()) {
            Ok(()) => self.arguments.push_str(text),
            Err(problem) => self.fail_dropping(&problem, budget),
        }
    }

    /// Whether `text` is exactly what the deltas sent. A call that failed has dropped its text
    /// and completes as its problem whatever this says.
    fn sent_exactly(&self, text: &str) -> bool {
        self.problem.is_some() || self.arguments == text
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
