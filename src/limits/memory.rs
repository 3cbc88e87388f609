//! Counters in this process's memory: exact sliding windows, bounded by a capacity in call times.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use super::names::{NameKeys, NameMap};
use super::{CounterError, RateCounters, Take, Taken};

/// How many call times [`MemoryRateCounters::default`] holds: 2^20 (8 MiB of times).
const DEFAULT_CAPACITY: usize = 1 << 20;

/// A take of at most this many counters keeps its hashes and totals on the stack.
const FEW: usize = 8;

/// Counts in memory, for one process: a controller's default.
///
/// # Guarantees
///
/// - Exact: each counter keeps the times of the calls in its window (a sliding window).
/// - Bounded: at most `capacity` call times in all; when a call would exceed it after dropping the
///   times whose window has passed, the call is denied ([`CounterError::Full`]) — nothing is
///   forgotten early, which would let calls past a cap.
/// - Room kept: the times of takes that yield room ([`Take::yields_room`], provenance's values)
///   hold at most half the capacity; a call that would record more is refused by its first such
///   take ([`Taken::Full`]), so however many values are recorded, the limits, flow rules and
///   labels keep the other half. To make room for such takes alone, passed times are swept at
///   most once a second (a value refused meanwhile only overflows a session); for the store as
///   a whole, whenever a time may have passed.
/// - `"per": "session"` counters last as long as this value.
#[derive(Debug)]
pub struct MemoryRateCounters {
    state: Mutex<State>,
    keys: NameKeys,
    capacity: usize,
}

#[derive(Debug, Default)]
struct State {
    counters: NameMap<Counter>,
    // Call times held across all counters.
    held: usize,
    // Of those, the times held by counters that yield room (see `Take::yields_room`).
    yielding: usize,
    // No time held passes before this (a lower bound on every counter's oldest time plus its
    // keep): the sweep that makes room for a call is skipped before it. Without it, a store
    // kept full (values yielding room past their half) swept every counter on every call.
    sweep_after_ms: u64,
    // When a sweep last ran for values yielding room alone (see `SWEEP_FOR_VALUES_EVERY_MS`).
    swept_for_values_ms: Option<u64>,
}

/// How often, at most, every counter is swept to make room for values that yield it, while the
/// store as a whole has room: such a call refused only overflows a session (it fails closed),
/// and a store held at its half — the day's first values passing one by one — swept every
/// counter on every recording (39 ms each at 519k counters: an independent attack). The store
/// as a whole short of room is swept exactly, as a limit's call refused for room is denied.
const SWEEP_FOR_VALUES_EVERY_MS: u64 = 1_000;

#[derive(Debug)]
struct Counter {
    // How long times are kept: the longest window any take of this counter has named (`u64::MAX`
    // for a session), so a policy replaced with a longer window still sees the calls of the
    // shorter one's.
    keep_ms: u64,
    // Ascending: a time earlier than the last (a clock stepped back) is kept as the last, which
    // only makes it count longer.
    times: VecDeque<u64>,
    // The running total of the weights up to and including each time, so a window's total is
    // one subtraction after a binary search, however many calls are held.
    running: VecDeque<u128>,
    // The running total before the oldest time held (what expired times added).
    dropped: u128,
    // Whether the take that made it yields room: its times count against the half of the
    // capacity such takes may hold.
    yields: bool,
}

/// A window as a length; a session's never ends.
fn length(window_ms: Option<u64>) -> u64 {
    window_ms.unwrap_or(u64::MAX)
}

impl Counter {
    /// Drops the times older than every window this counter has been taken with; returns how many.
    fn expire(&mut self, now_ms: u64) -> usize {
        let before = self.times.len();
        while self
            .times
            .front()
            .is_some_and(|&time| now_ms.saturating_sub(time) >= self.keep_ms)
        {
            self.times.pop_front();
            if let Some(total) = self.running.pop_front() {
                self.dropped = total;
            }
        }
        before - self.times.len()
    }

    /// The total weight within `window_ms` before `now_ms`: `t` counts while `now - t < window`.
    fn total(&self, window_ms: Option<u64>, now_ms: u64) -> u64 {
        let window = length(window_ms);
        let passed = self
            .times
            .partition_point(|&time| now_ms.saturating_sub(time) >= window);
        let before = match passed {
            0 => self.dropped,
            index => self.running[index - 1],
        };
        let last = self.running.back().copied().unwrap_or(self.dropped);
        u64::try_from(last - before).unwrap_or(u64::MAX)
    }

    /// Records `take` at `now_ms`; returns how many times it dropped (a take that replaces
    /// drops every time held before it).
    fn record(&mut self, take: &Take<'_>, now_ms: u64) -> usize {
        self.keep_ms = self.keep_ms.max(length(take.window_ms));
        let mut at_ms = now_ms;
        let mut dropped = 0;
        if take.replaces {
            // The later of the two times: a clock stepped back never shortens a window.
            at_ms = self.times.back().map_or(now_ms, |&last| last.max(now_ms));
            dropped = self.times.len();
            self.dropped = self.running.back().copied().unwrap_or(self.dropped);
            self.times.clear();
            self.running.clear();
        }
        self.push(at_ms, take.weight);
        dropped
    }

    fn push(&mut self, now_ms: u64, weight: u64) {
        let time = self.times.back().map_or(now_ms, |&last| last.max(now_ms));
        let last = self.running.back().copied().unwrap_or(self.dropped);
        self.times.push_back(time);
        self.running.push_back(last + u128::from(weight));
    }
}

impl Default for MemoryRateCounters {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

impl MemoryRateCounters {
    /// Counters holding at most `capacity` call times in all.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State::default()),
            keys: NameKeys::default(),
            capacity,
        }
    }

    /// How many call times are held now (for tests and metrics).
    pub fn held(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .held
    }
}

/// The earliest time a counter whose oldest time is `oldest` may drop it: a keep of nothing
/// drops it at any time, even before it (a clock stepped back: an independent attack found the
/// sweep skipped there).
fn passes_from(oldest: u64, keep_ms: u64) -> u64 {
    if keep_ms == 0 {
        0
    } else {
        oldest.saturating_add(keep_ms)
    }
}

/// `count` times `counter` held are gone (passed or replaced): from the times held, and from
/// those that yield room when its take did.
fn gone(held: &mut usize, yielding: &mut usize, counter: &Counter, count: usize) {
    *held -= count;
    if counter.yields {
        *yielding -= count;
    }
}

/// `len` slots filled with `fill`: in `few` when they fit, else in `many`.
fn scratch<'a, T: Copy>(
    few: &'a mut [T; FEW],
    many: &'a mut Vec<T>,
    len: usize,
    fill: T,
) -> &'a mut [T] {
    if len <= FEW {
        let slots = &mut few[..len];
        slots.fill(fill);
        slots
    } else {
        many.resize(len, fill);
        many
    }
}

impl RateCounters for MemoryRateCounters {
    fn take(&self, takes: &[Take<'_>], now_ms: u64) -> Result<Taken, CounterError> {
        // Each name hashed at most once, for finding its counter and for recording it (none while
        // no counter is held: nothing to find); a call's few counters on the stack.
        let (mut few_hashes, mut many_hashes) = ([None; FEW], Vec::new());
        let hashes = scratch(&mut few_hashes, &mut many_hashes, takes.len(), None);
        let hash_of = |hash: &mut Option<u64>, take: &Take<'_>| {
            *hash.get_or_insert_with(|| self.keys.hash(take.bucket))
        };
        let (mut few_totals, mut many_totals) = ([0; FEW], Vec::new());
        let totals = scratch(&mut few_totals, &mut many_totals, takes.len(), 0);
        // Whether each take's counter is held already (a replacing take then adds no time).
        let (mut few_found, mut many_found) = ([false; FEW], Vec::new());
        let found = scratch(&mut few_found, &mut many_found, takes.len(), false);
        // The state is consistent after every statement, so a poisoned lock is still usable.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let State {
            counters,
            held,
            yielding,
            sweep_after_ms,
            swept_for_values_ms,
        } = &mut *state;
        let slots = totals.iter_mut().zip(found.iter_mut());
        for ((take, hash), (slot, held_already)) in takes.iter().zip(hashes.iter_mut()).zip(slots) {
            // Every take is found here, even one that cannot refuse: finding it widens its
            // counter's window and drops its passed times before any call is refused or the
            // capacity judged (skipping records that cannot refuse changed both; a test holds it).
            if counters.is_empty() {
                *slot = 0;
                continue;
            }
            let hash = hash_of(hash, take);
            let total = match counters.get_mut(hash, take.bucket) {
                Some(counter) => {
                    // Counted by the window in force now; kept for the longest one seen.
                    counter.keep_ms = counter.keep_ms.max(length(take.window_ms));
                    let expired = counter.expire(now_ms);
                    gone(held, yielding, counter, expired);
                    let total = counter.total(take.window_ms, now_ms);
                    if counter.times.is_empty() {
                        // An empty counter costs memory the capacity does not count.
                        counters.remove(hash, take.bucket);
                    } else {
                        *held_already = true;
                    }
                    total
                }
                None => 0,
            };
            *slot = total;
        }
        if let Some(index) = super::first_refusal(takes, totals) {
            return Ok(Taken::Full(index));
        }
        let recorded = takes.iter().filter(|take| take.weight > 0).count();
        // The times takes that yield room add: a replacing one adds none to a counter held.
        let yielded = takes
            .iter()
            .zip(found.iter())
            .filter(|&(take, &held_already)| {
                take.yields_room && take.weight > 0 && !(take.replaces && held_already)
            })
            .count();
        let yielding_room = self.capacity / 2;
        let over_capacity = *held + recorded > self.capacity;
        let over_half = *yielding + yielded > yielding_room;
        let tight = over_capacity || over_half;
        let values_may_sweep = swept_for_values_ms
            .is_none_or(|swept| now_ms.abs_diff(swept) >= SWEEP_FOR_VALUES_EVERY_MS);
        if (over_capacity || over_half && values_may_sweep) && now_ms >= *sweep_after_ms {
            if !over_capacity {
                *swept_for_values_ms = Some(now_ms);
            }
            // Make room from every counter's passed times before refusing.
            let mut next = u64::MAX;
            counters.retain(|counter| {
                let expired = counter.expire(now_ms);
                gone(held, yielding, counter, expired);
                if let Some(&oldest) = counter.times.front() {
                    next = next.min(passes_from(oldest, counter.keep_ms));
                }
                !counter.times.is_empty()
            });
            *sweep_after_ms = next;
        }
        if tight {
            // Their half full, the takes that yield room refuse the call (the first of them).
            if *yielding + yielded > yielding_room
                && let Some(index) = takes
                    .iter()
                    .position(|take| take.yields_room && take.weight > 0)
            {
                return Ok(Taken::Full(index));
            }
            if *held + recorded > self.capacity {
                return Err(CounterError::Full {
                    capacity: self.capacity,
                });
            }
        }
        for (take, hash) in takes.iter().zip(hashes.iter_mut()) {
            if take.weight == 0 {
                continue;
            }
            let hash = hash_of(hash, take);
            // A counter held already is found without copying its name.
            if let Some(counter) = counters.get_mut(hash, take.bucket) {
                let replaced = counter.record(take, now_ms);
                gone(held, yielding, counter, replaced);
                *yielding += usize::from(counter.yields);
            } else {
                let mut counter = Counter {
                    keep_ms: length(take.window_ms),
                    times: VecDeque::new(),
                    running: VecDeque::new(),
                    dropped: 0,
                    yields: take.yields_room,
                };
                counter.record(take, now_ms);
                *yielding += usize::from(counter.yields);
                // A counter held before passes no earlier for this take (its keep only widens,
                // a replacement is later): only a new one can lower the bound.
                if let Some(&oldest) = counter.times.front() {
                    *sweep_after_ms = (*sweep_after_ms).min(passes_from(oldest, counter.keep_ms));
                }
                counters.insert(hash, take.bucket, counter);
            }
            *held += 1;
        }
        Ok(Taken::All)
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
