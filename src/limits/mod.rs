//! Rate limits: how often a tool (or a group of tools) may run — per minute, hour or day, for the
//! session, and optionally per key taken from an argument (per recipient, per repository).
//!
//! Limits are written in a [`RulePolicy`](crate::RulePolicy)'s JSON beside its rules and checked
//! at load like them; the [`ToolController`](crate::ToolController) counts. A policy only says
//! which counters a call would take ([`Policy::rate_slots`](crate::Policy::rate_slots)); deciding
//! counts nothing, because a call may be decided several times (explained, shadowed, re-checked).
//!
//! ```json
//! {"limits": [
//!   {"id": "mail-per-recipient", "tool": "send_email", "max": 5, "per": "hour",
//!    "key": {"pointer": "/to", "case_insensitive": true},
//!    "over": "deny", "reason": "at most 5 emails an hour to one recipient"},
//!   {"id": "deploys", "tool": "deploy__*", "max": 3, "per": "day", "over": "ask",
//!    "reason": "more than 3 deploys a day need a person"}
//! ]}
//! ```
//!
//! # Guarantees
//!
//! - **Counted when it runs.** A call takes one slot in each of its counters at the moment the
//!   controller authorizes it — after every policy, layer and async check has decided, once per
//!   call — and all or none: a call refused by one limit takes no slot from another.
//! - **Exact windows.** A limit of `max` per minute lets at most `max` calls be authorized in any
//!   60 seconds (a sliding window over the times of the calls, not fixed clock minutes);
//!   `"per": "session"` counts for the counters' whole life.
//! - **Past the cap.** `"over": "deny"` denies the call, naming the limit; `"over": "ask"` holds it
//!   for a person, and an approved call runs and is counted. A call held for approval for another
//!   reason is counted when the approval is answered, and a `deny` limit reached by then denies it.
//! - **Never a value.** Counters are named by the limit's id and a SHA-256 of the key's
//!   canonical JSON, never by the value; reasons name the limit and the pointer.
//! - **Fail closed.** A key that cannot be read, a call with more than [`MAX_KEYS_PER_CALL`]
//!   keys, full counters or a counter store that fails all deny the call.
//! - **Bounded.** [`MemoryRateCounters`] holds at most its capacity in call times and refuses
//!   (denies) rather than forgets — records that yield room ([`Take::yields_room`]: provenance's
//!   values) at most half of it, so they never crowd out a limit's calls; the SQLite and PostgreSQL counters delete times a day (the
//!   longest window) after they were taken.
//!
//! Times come from the controller's [`Clock`](crate::clock::Clock), so tests move time with a
//! [`ManualClock`](crate::clock::ManualClock).

mod memory;
mod names;
#[cfg(feature = "sqlite")]
mod opened_file;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use memory::MemoryRateCounters;
#[cfg(feature = "postgres")]
pub use postgres::PostgresRateCounters;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteRateCounters;

use crate::decision::PolicyAction;
// The vocabulary moved to `crate::decision`; these paths keep naming it until the next release.
#[doc(hidden)]
pub use crate::decision::{RateSlot, Refuses, SlotKind};

/// The most distinct keys one call may count under one limit (a list of recipients); a call with
/// more is denied rather than counted partly.
pub const MAX_KEYS_PER_CALL: usize = 64;

/// The longest window ([`Per::Day`]): durable counters keep every call time this long, so a policy
/// replaced with a longer window still sees the calls counted under a shorter one.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) const LONGEST_WINDOW_MS: u64 = 86_400_000;

/// The largest `max` a limit may have.
pub const MAX_CALLS_PER_LIMIT: u32 = 100_000;

/// One limit as written in a policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RateLimitConfig {
    /// A unique, non-empty id (unique among the rules' ids too), named by every decision the
    /// limit takes.
    pub id: String,
    /// A tool's exact name, or a pattern over whole names (`server__*`) whose matching tools
    /// share one count.
    pub tool: String,
    /// How many calls may run in one window, 1 to [`MAX_CALLS_PER_LIMIT`]; for a `sum`, the
    /// most they may add up to (1 to 2^32 - 1).
    pub max: u32,
    /// The window.
    pub per: Per,
    /// Count separately per value of this argument; absent: one count for the tool or group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<LimitKey>,
    /// Add up this integer argument instead of counting calls: `max` is then the most the
    /// window's calls may add up to (the refunds of one order: 10,000 cents a day). A call whose
    /// value is missing, negative or not a whole number is denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<String>,
    /// What happens to a call past the cap: `deny` or `ask`.
    pub over: PolicyAction,
    /// Why, shown when the cap is reached; not empty.
    pub reason: String,
}

impl RateLimitConfig {
    /// A limit of `max` calls to `tool` per `per`, then `over`, with `reason`.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        max: u32,
        per: Per,
        over: PolicyAction,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            tool: tool.into(),
            max,
            per,
            key: None,
            sum: None,
            over,
            reason: reason.into(),
        }
    }

    /// The same limit, adding up the integer at `pointer` instead of counting calls.
    #[must_use]
    pub fn summing(mut self, pointer: impl Into<String>) -> Self {
        self.sum = Some(pointer.into());
        self
    }

    /// The same limit, counted per value at `key`.
    #[must_use]
    pub fn per_key(mut self, key: LimitKey) -> Self {
        self.key = Some(key);
        self
    }
}

/// The window of a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Any 60 seconds.
    Minute,
    /// Any 3,600 seconds.
    Hour,
    /// Any 86,400 seconds.
    Day,
    /// The counters' whole life: the controller's for [`MemoryRateCounters`], the session id's
    /// for a durable store.
    Session,
}

impl Per {
    /// The window in milliseconds; `None` for a session.
    pub fn window_ms(self) -> Option<u64> {
        match self {
            Self::Minute => Some(60_000),
            Self::Hour => Some(3_600_000),
            Self::Day => Some(86_400_000),
            Self::Session => None,
        }
    }
}

impl fmt::Display for Per {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Session => "session",
        })
    }
}

/// Which argument a limit counts by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LimitKey {
    /// A JSON Pointer into the arguments naming a field of every covered tool's schema. A list
    /// there counts once for each distinct element (each recipient); a missing value or an empty
    /// list counts under one shared "none" key.
    pub pointer: String,
    /// Compare text keys ignoring case (`Bob@Example.com` and `bob@example.com` share a count).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_insensitive: bool,
    /// Compare text keys normalized: invisible characters removed, NFKC, case folded — so
    /// fullwidth, decomposed and zero-width spellings of one address share a count (implies
    /// `case_insensitive`). Needs toolgate's `unicode` feature; refused at load without it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub normalize: bool,
}

impl LimitKey {
    /// Counting by the value at `pointer`, case-sensitive.
    pub fn new(pointer: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            case_insensitive: false,
            normalize: false,
        }
    }

    /// The same key, comparing text ignoring case.
    #[must_use]
    pub fn case_insensitive(mut self) -> Self {
        self.case_insensitive = true;
        self
    }

    /// The same key, comparing text normalized (see [`normalize`](Self::normalize)).
    #[must_use]
    pub fn normalized(mut self) -> Self {
        self.normalize = true;
        self
    }
}

/// One counter a call is judged by and counted in: what the call adds to it (`weight`), when the
/// counter refuses the call, and whether that is enforced (`false`: the call is counted whatever
/// the count, because a person approved it past an `ask` limit or flow rule).
#[derive(Debug, Clone, Copy)]
pub struct Take<'a> {
    /// The counter.
    pub bucket: &'a str,
    /// Its window; `None` for the session.
    pub window_ms: Option<u64>,
    /// What an authorized call adds to the counter: 1 for a call counted by a rate limit, the
    /// field's value for a sum, 0 for a counter that is only looked at.
    pub weight: u64,
    /// When the counter refuses the call.
    pub refuses: Refuses,
    /// Whether a refusal holds.
    pub enforce: bool,
    /// Whether the call's record replaces the counter's earlier ones: a flow rule's history needs
    /// only the latest call, so it holds one record per counter however many calls ran. The
    /// record keeps the later of its time and the replaced one's (a clock stepped back never
    /// shortens a window).
    pub replaces: bool,
    /// Whether the counter is shared by every session of the store (a principal's history),
    /// instead of belonging to this session.
    pub across_sessions: bool,
    /// Whether the record gives way when a store bounded in room runs short: in
    /// [`MemoryRateCounters`], the times such takes record hold at most half its capacity, and a
    /// call past that is refused by its first such take ([`Taken::Full`]) instead of the store
    /// failing. Provenance records its values so (its recorder then marks the session
    /// overflowed): they are many, a session's worth can be given up, and they must never take
    /// the room rate limits, flow rules and labels need. Stores bounded only by their disk
    /// ignore it.
    pub yields_room: bool,
    /// The group of looks this one refuses with: the takes of one group refuse the call only
    /// together, when every one of them would (a provenance condition: "seen in untrusted
    /// results *and* never named by the person"); `None`: it refuses on its own.
    pub group: Option<u32>,
}

impl<'a> Take<'a> {
    /// A rate limit's take: one call counted, refused once `max` calls are in the window.
    pub fn limit(bucket: &'a str, window_ms: Option<u64>, max: u32) -> Self {
        Self {
            bucket,
            window_ms,
            weight: 1,
            refuses: Refuses::Above(u64::from(max)),
            enforce: true,
            replaces: false,
            across_sessions: false,
            yields_room: false,
            group: None,
        }
    }

    /// Whether the counter's total in the window (before this call) refuses the call.
    pub fn refused_by(&self, total: u64) -> bool {
        self.enforce
            && match self.refuses {
                Refuses::Above(max) => total.saturating_add(self.weight) > max,
                Refuses::AnyCounted => total > 0,
                Refuses::NothingCounted => total == 0,
                Refuses::Always => true,
                Refuses::Never => false,
            }
    }
}

/// Which take refuses the call, from each take's total in its window before the call (`totals`
/// in the order of `takes`): the first that refuses on its own, or the first of a group whose
/// every take refuses. Every store decides with this one function.
pub fn first_refusal(takes: &[Take<'_>], totals: &[u64]) -> Option<usize> {
    let refused = |index: usize| takes[index].refused_by(totals[index]);
    (0..takes.len()).find(|&index| match takes[index].group {
        None => refused(index),
        Some(group) => {
            // The group's first take answers for it.
            let first = takes.iter().position(|take| take.group == Some(group));
            first == Some(index)
                && (index..takes.len())
                    .filter(|&other| takes[other].group == Some(group))
                    .all(refused)
        }
    })
}

/// What [`RateCounters::take`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Every counter took a slot.
    All,
    /// The counter at this index is full; no counter took a slot.
    Full(usize),
}

/// Counting failed: the call is denied (fail closed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CounterError {
    /// The counters hold as many call times as they may; nothing is forgotten to make room.
    #[error("the rate-limit counters are full ({capacity} call times)")]
    Full {
        /// The capacity.
        capacity: usize,
    },
    /// The store failed.
    #[error("the rate-limit store failed: {message}")]
    Store {
        /// What failed.
        message: String,
        /// The store's own error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl CounterError {
    /// A store failure caused by `error`, kept as the source.
    pub fn store(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Store {
            message: error.to_string(),
            source: Some(Box::new(error)),
        }
    }
}

/// A counter's name in a durable store: behind this session's prefix, or — for a counter shared
/// by every session (a principal's history) — behind `*/`, which no session prefix (a length,
/// then `:`) can spell.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn bucket_name(session_prefix: &str, take: &Take<'_>) -> String {
    if take.across_sessions {
        format!("*/{}", take.bucket)
    } else {
        format!("{session_prefix}{}", take.bucket)
    }
}

/// Where counts are kept. [`MemoryRateCounters`] counts in one process; `SqliteRateCounters` and
/// `PostgresRateCounters` share counts between processes through the approval store's database.
///
/// # Contract
///
/// `take` is atomic: of concurrent takes (from any thread or process sharing the store), each sees
/// the others' records, and either every counter records the call's weight at `now_ms` or none
/// does — none when [`first_refusal`] names a take, given each counter's total before the call. A counter's
/// total is the sum of the weights recorded within its window before `now_ms` (times later than
/// `now_ms`, left by a clock that stepped back, still count). A take of weight 0 records nothing.
pub trait RateCounters: Send + Sync + fmt::Debug {
    /// Takes a slot in every counter of `takes` at `now_ms`, unless an enforced one is full.
    ///
    /// # Errors
    ///
    /// [`CounterError`] when the counters cannot count; the controller then denies the call.
    fn take(&self, takes: &[Take<'_>], now_ms: u64) -> Result<Taken, CounterError>;
}

impl<C: RateCounters + ?Sized> RateCounters for Arc<C> {
    fn take(&self, takes: &[Take<'_>], now_ms: u64) -> Result<Taken, CounterError> {
        (**self).take(takes, now_ms)
    }
}

#[cfg(test)]
mod group_tests {
    use super::*;

    fn look(refuses: Refuses, group: Option<u32>) -> Take<'static> {
        Take {
            weight: 0,
            refuses,
            group,
            ..Take::limit("b", None, 0)
        }
    }

    #[test]
    fn a_group_refuses_only_when_every_take_in_it_would_and_answers_with_its_first() {
        let seen = look(Refuses::AnyCounted, Some(7));
        let unnamed = look(Refuses::NothingCounted, Some(7));
        // Seen (1) and never named (0): the group refuses, named by its first take.
        assert_eq!(first_refusal(&[seen, unnamed], &[1, 0]), Some(0));
        // Seen but named, or named but not seen: it does not.
        assert_eq!(first_refusal(&[seen, unnamed], &[1, 1]), None);
        assert_eq!(first_refusal(&[seen, unnamed], &[0, 0]), None);
        // Another group's refusal is its own; an ungrouped take refuses alone, in order.
        let other = look(Refuses::AnyCounted, Some(8));
        assert_eq!(first_refusal(&[seen, unnamed, other], &[1, 1, 1]), Some(2));
        let alone = look(Refuses::Always, None);
        assert_eq!(first_refusal(&[alone, seen, unnamed], &[0, 1, 0]), Some(0));
        assert_eq!(first_refusal(&[seen, alone, unnamed], &[1, 0, 0]), Some(0));
        // An unenforced take never refuses, so neither does its group.
        let waived = Take {
            enforce: false,
            ..seen
        };
        assert_eq!(first_refusal(&[waived, unnamed], &[1, 0]), None);
    }
}
