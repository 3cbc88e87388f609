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
}

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
        // The state is consistent after every statement, so a poisoned lock is still usable.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let State { counters, held } = &mut *state;
        for ((take, hash), slot) in takes.iter().zip(hashes.iter_mut()).zip(totals.iter_mut()) {
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
                    *held -= counter.expire(now_ms);
                    let total = counter.total(take.window_ms, now_ms);
                    if counter.times.is_empty() {
                        // An empty counter costs memory the capacity does not count.
                        counters.remove(hash, take.bucket);
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
        if *held + recorded > self.capacity {
            // Make room from every counter's passed times before refusing.
            counters.retain(|counter| {
                *held -= counter.expire(now_ms);
                !counter.times.is_empty()
            });
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
                *held -= counter.record(take, now_ms);
            } else {
                let mut counter = Counter {
                    keep_ms: length(take.window_ms),
                    times: VecDeque::new(),
                    running: VecDeque::new(),
                    dropped: 0,
                };
                counter.record(take, now_ms);
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
