//! OpenAI Responses API streaming: `response.output_item.added` opens an item,
//! `response.function_call_arguments.delta` / `.done` carry a function call's arguments,
//! `response.output_item.done` closes the item.

use std::collections::BTreeMap;

use serde_json::Value;

use sha2::{Digest as _, Sha256};

use super::frame::{Frame, Slot};
use super::{Budget, Partial, StreamLimits, event_type, index, reason};
use crate::providers::responses::{classify, custom_tool_error, read_item};
use crate::providers::{NotHandled, ParsedCall, Turn, WireError, call_id};

/// Assembles the function calls of one streamed Responses API response.
///
/// A call completes at `response.function_call_arguments.done` (whose `arguments` must equal the
/// deltas, if any came), or at `response.output_item.done` if that comes first; the item's
/// `call_id` is the call's id. A `response.output_item.done` for a call already yielded must
/// repeat its `call_id`, name and arguments. Items that are not calls are reported as in
/// [`responses::turn`](crate::providers::responses::turn). See the [module docs](super) for the
/// full table.
///
/// ```
/// use serde_json::json;
/// use toolgate::providers::stream::ResponsesStream;
///
/// let mut stream = ResponsesStream::new();
/// stream.push(&json!({"type": "response.output_item.added", "output_index": 0, "item": {
///     "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": ""}}))?;
/// stream.push(&json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1",
///     "output_index": 0, "delta": "{\"location\":\"Paris\"}"}))?;
/// let done = stream.push(&json!({"type": "response.function_call_arguments.done", "item_id": "fc_1",
///     "output_index": 0, "arguments": "{\"location\":\"Paris\"}"}))?;
/// assert_eq!(done[0].as_ref().map(|call| call.call_id.as_str()), Ok("call_1"));
/// assert!(stream.finish()?.calls.is_empty());
/// # Ok::<(), toolgate::providers::WireError>(())
/// ```
#[derive(Default)]
pub struct ResponsesStream {
    items: BTreeMap<u64, Item>,
    frame: Frame,
}

enum Item {
    /// A function call being assembled. Invariant: `partial.id` is `Some`.
    Open {
        item_id: Option<String>,
        partial: Partial,
    },
    /// A call already yielded, with what it was yielded as: its arguments as a digest, so a
    /// yielded call holds no buffered text.
    Yielded {
        call_id: String,
        name: Option<String>,
        arguments: [u8; 32],
    },
    /// Content, or an item already reported.
    Other,
}

impl std::fmt::Debug for ResponsesStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesStream")
            .field("items", &self.items.len())
            .field("not_handled", &self.frame.not_handled)
            .field("ended", &self.frame.ended)
            .finish_non_exhaustive()
    }
}

impl ResponsesStream {
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

    /// The items reported so far that are not calls toolgate runs.
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
    /// [`WireError`] for an event without a type, an item event without an `output_index`, an
    /// argument event for an index never opened, a call item without a `call_id`, an event
    /// after the response ended, or an event that contradicts a call already yielded.
    pub fn push(&mut self, event: &Value) -> Result<Vec<ParsedCall>, WireError> {
        let place = self.frame.next_place("event");
        let kind = event_type(event, &place)?;
        let ends = matches!(
            kind,
            "response.completed" | "response.incomplete" | "response.failed" | "error"
        );
        if self.frame.ended
            && (ends || kind.starts_with("response.output_item") || kind.contains("arguments"))
        {
            return Err(WireError::malformed(
                place,
                "an event after the response ended",
            ));
        }
        match kind {
            "response.output_item.added" => self.added(event, &place),
            "response.function_call_arguments.delta" => {
                let slot = index(event, "output_index", &place)?;
                match self.items.get_mut(&slot) {
                    Some(Item::Open { item_id, partial }) => {
                        check_item_id(item_id.as_deref(), event, partial, &mut self.frame.budget);
                        partial.append(event.get("delta"), &mut self.frame.budget);
                        Ok(Vec::new())
                    }
                    Some(Item::Other) => Ok(Vec::new()),
                    Some(Item::Yielded { .. }) => Err(after_yield(&place)),
                    None => Err(never_opened(&place)),
                }
            }
            "response.function_call_arguments.done" => {
                let slot = index(event, "output_index", &place)?;
                match self.items.get_mut(&slot) {
                    Some(Item::Open { item_id, partial }) => {
                        check_item_id(item_id.as_deref(), event, partial, &mut self.frame.budget);
                        final_arguments(
                            partial,
                            event.get("arguments"),
                            false,
                            &mut self.frame.budget,
                        );
                        Ok(vec![self.yield_call(slot)])
                    }
                    Some(Item::Other) => Ok(Vec::new()),
                    Some(Item::Yielded { .. }) => Err(after_yield(&place)),
                    None => Err(never_opened(&place)),
                }
            }
            "response.output_item.done" => self.item_done(event, &place),
            _ if ends => {
                self.frame.ended = true;
                let status = event
                    .get("response")
                    .and_then(|response| response.get("status"))
                    .or_else(|| event.get("code"));
                let why = format!(
                    "the response ended ({})",
                    reason(status.or(Some(&Value::String(kind.to_owned()))))
                );
                Ok(self.cut_open(&why))
            }
            // Text, reasoning, provider-side tool progress and lifecycle events carry no call:
            // every item, whatever its events, opens with `output_item.added`.
            _ => Ok(Vec::new()),
        }
    }

    fn added(&mut self, event: &Value, place: &str) -> Result<Vec<ParsedCall>, WireError> {
        let slot = index(event, "output_index", place)?;
        let item = event
            .get("item")
            .filter(|item| item.is_object())
            .ok_or_else(|| {
                WireError::malformed(format!("{place}.item"), "missing or not an object")
            })?;
        if self.items.contains_key(&slot) {
            return Err(WireError::malformed(
                format!("{place}.output_index"),
                "an item opened twice",
            ));
        }
        let item_place = format!("{place}.item");
        let kind = item.get("type").and_then(Value::as_str);
        let open_calls = self
            .items
            .values()
            .filter(|item| matches!(item, Item::Open { .. }))
            .count();
        self.frame.budget.open(
            self.items.len(),
            open_calls,
            kind == Some("function_call"),
            &format!("{place}.output_index"),
        )?;
        match kind {
            Some("function_call") => {
                let id = call_id(item, "call_id", &item_place)?;
                self.frame
                    .budget
                    .claim_id(&id, &format!("{item_place}.call_id"))?;
                let mut partial = Partial {
                    id: Some(id),
                    ..Partial::default()
                };
                if let Some(name) = item.get("name") {
                    partial.name(name);
                }
                partial.append(item.get("arguments"), &mut self.frame.budget);
                let item_id = item.get("id").and_then(Value::as_str).map(str::to_owned);
                self.items.insert(slot, Item::Open { item_id, partial });
                Ok(Vec::new())
            }
            Some("custom_tool_call") => {
                let id = call_id(item, "call_id", &item_place)?;
                self.frame
                    .budget
                    .claim_id(&id, &format!("{item_place}.call_id"))?;
                self.items.insert(slot, Item::Other);
                Ok(vec![Err(custom_tool_error(id, item))])
            }
            _ => {
                if let Some(not_handled) = classify(item, format!("output[{slot}]")) {
                    self.frame.not_handled.push(not_handled);
                }
                self.items.insert(slot, Item::Other);
                Ok(Vec::new())
            }
        }
    }

    fn item_done(&mut self, event: &Value, place: &str) -> Result<Vec<ParsedCall>, WireError> {
        let slot = index(event, "output_index", place)?;
        let item = event
            .get("item")
            .filter(|item| item.is_object())
            .ok_or_else(|| {
                WireError::malformed(format!("{place}.item"), "missing or not an object")
            })?;
        match self.items.get_mut(&slot) {
            // Never opened: read the whole item, as in a whole response.
            None => {
                self.frame.budget.open(
                    self.items.len(),
                    0,
                    false,
                    &format!("{place}.output_index"),
                )?;
                self.items.insert(slot, Item::Other);
                let item_place = format!("{place}.item");
                if let Some(call) = read_item(item, &item_place)? {
                    let call =
                        super::whole_within(call, item.get("arguments"), self.frame.budget.limits);
                    let id = match &call {
                        Ok(call) => &call.call_id,
                        Err(result) => &result.call_id,
                    };
                    self.frame
                        .budget
                        .claim_id(id, &format!("{item_place}.call_id"))?;
                    return Ok(vec![call]);
                }
                if let Some(not_handled) = classify(item, format!("output[{slot}]")) {
                    self.frame.not_handled.push(not_handled);
                }
                Ok(Vec::new())
            }
            Some(Item::Other) => Ok(Vec::new()),
            Some(Item::Open { partial, .. }) => {
                if item.get("call_id").and_then(Value::as_str) != partial.id.as_deref() {
                    partial.fail("the stream changed the call's call_id");
                }
                if let Some(name) = item.get("name") {
                    partial.name(name);
                }
                final_arguments(partial, item.get("arguments"), true, &mut self.frame.budget);
                Ok(vec![self.yield_call(slot)])
            }
            Some(Item::Yielded {
                call_id,
                name,
                arguments,
            }) => {
                let same = item.get("call_id").and_then(Value::as_str) == Some(call_id.as_str())
                    && item.get("name").and_then(Value::as_str) == name.as_deref()
                    && item.get("arguments").is_none_or(|text| {
                        text.as_str().is_some_and(|text| digest(text) == *arguments)
                    });
                if same {
                    Ok(Vec::new())
                } else {
                    Err(WireError::malformed(
                        place,
                        "the finished item differs from the call already yielded",
                    ))
                }
            }
        }
    }

    /// Completes the open call at `slot` and remembers what it was yielded as.
    fn yield_call(&mut self, slot: u64) -> ParsedCall {
        // Only called for an open item; anything else completes as an unusable, unnamed call.
        let mut partial = match self.items.remove(&slot) {
            Some(Item::Open { partial, .. }) => partial,
            _ => Partial::default(),
        };
        self.frame.budget.release(&partial);
        let call_id = partial.id.take().unwrap_or_default();
        self.items.insert(
            slot,
            Item::Yielded {
                call_id: call_id.clone(),
                name: partial.name.clone(),
                arguments: digest(&partial.arguments),
            },
        );
        partial.complete(call_id)
    }

    /// Every open call, as an error result with `why`.
    fn cut_open(&mut self, why: &str) -> Vec<ParsedCall> {
        self.frame.cut_open(self.items.values_mut(), why)
    }

    /// Ends the stream: every call still open becomes an error result for its id; the items
    /// that are not calls are listed.
    ///
    /// # Errors
    ///
    /// None today; the `Result` matches the other assemblers.
    pub fn finish(mut self) -> Result<Turn, WireError> {
        let calls = self.cut_open("the stream ended");
        Ok(self.frame.turn(calls))
    }
}

impl Slot for Item {
    fn open_partial(&mut self) -> Option<&mut Partial> {
        match self {
            Item::Open { partial, .. } => Some(partial),
            Item::Yielded { .. } | Item::Other => None,
        }
    }

    fn closed() -> Self {
        Item::Other
    }
}

fn check_item_id(item_id: Option<&str>, event: &Value, partial: &mut Partial, budget: &mut Budget) {
    if let (Some(known), Some(sent)) = (item_id, event.get("item_id").and_then(Value::as_str))
        && known != sent
    {
        partial.fail_dropping("the stream sent an argument event for another item", budget);
    }
}

/// The arguments a `done` event or finished item repeats: taken as the call's text if no delta
/// came (within the budget), else they must equal the deltas. `absent_ok`: an item may leave them
/// out.
fn final_arguments(
    partial: &mut Partial,
    sent: Option<&Value>,
    absent_ok: bool,
    budget: &mut Budget,
) {
    match sent {
        Some(text @ Value::String(_))
            if partial.arguments.is_empty() && partial.problem.is_none() =>
        {
            partial.append(Some(text), budget);
        }
        Some(Value::String(text)) if partial.sent_exactly(text) => {}
        None | Some(Value::Null) if absent_ok => {}
        _ => partial.fail_dropping(
            "the stream's final arguments differ from its deltas",
            budget,
        ),
    }
}

/// What a yielded call's arguments are remembered as.
fn digest(arguments: &str) -> [u8; 32] {
    Sha256::digest(arguments.as_bytes()).into()
}

fn after_yield(place: &str) -> WireError {
    WireError::malformed(place, "an event for a call already yielded")
}

fn never_opened(place: &str) -> WireError {
    WireError::malformed(
        format!("{place}.output_index"),
        "no output item was opened at this index",
    )
}
