//! What every stream assembler keeps besides its open calls — the budget its limits allow, how
//! many events it read, whether the stream ended, what it reported as not a call — and the steps
//! they all take with it: written once for the three.

use serde_json::Value;

use super::{Budget, Partial, StreamLimits, cut_short, parse_data};
use crate::providers::{NotHandled, ParsedCall, Turn, WireError};

#[derive(Debug, Default)]
pub(super) struct Frame {
    pub(super) budget: Budget,
    /// Events (chunks, for chat) read so far: the next one's place.
    events: usize,
    /// Set when the stream ended: no call may open after it.
    pub(super) ended: bool,
    pub(super) not_handled: Vec<NotHandled>,
}

/// One slot of an assembler's open calls: the partial it assembles while open, and what it is
/// once cut short.
pub(super) trait Slot {
    /// The call being assembled here, if it is still open.
    fn open_partial(&mut self) -> Option<&mut Partial>;
    /// What the slot holds once its call was cut short.
    fn closed() -> Self;
}

impl Frame {
    pub(super) fn new(limits: StreamLimits) -> Self {
        Self {
            budget: Budget::new(limits),
            ..Self::default()
        }
    }

    /// `{noun}[n]`, the place of the event about to be read, counted.
    pub(super) fn next_place(&mut self, noun: &str) -> String {
        let place = format!("{noun}[{}]", self.events);
        self.events += 1;
        place
    }

    /// One SSE `data` payload parsed strictly at the place of the event it becomes (counted when
    /// it is pushed).
    pub(super) fn parse(&self, noun: &str, data: &str) -> Result<Value, WireError> {
        parse_data(data, &format!("{noun}[{}]", self.events))
    }

    /// Every open call among `slots`, as an error result with `why`: its buffered bytes released,
    /// its slot closed.
    pub(super) fn cut_open<'s, T: Slot + 's>(
        &mut self,
        slots: impl IntoIterator<Item = &'s mut T>,
        why: &str,
    ) -> Vec<ParsedCall> {
        let mut cut = Vec::new();
        for slot in slots {
            let Some(partial) = slot.open_partial() else {
                continue;
            };
            self.budget.release(partial);
            let id = partial.id.take().unwrap_or_default();
            *slot = T::closed();
            cut.push(cut_short(id, why));
        }
        cut
    }

    /// The turn the stream made: `calls`, and what was reported as not a call.
    pub(super) fn turn(self, calls: Vec<ParsedCall>) -> Turn {
        Turn {
            calls,
            not_handled: self.not_handled,
        }
    }
}
