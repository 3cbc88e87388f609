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
mod tests {
    use super::*;
    use crate::decision::Refuses;

    fn take(bucket: &str, window_ms: Option<u64>, max: u32) -> Take<'_> {
        Take::limit(bucket, window_ms, max)
    }

    #[test]
    fn weights_sum_within_the_window_and_looks_record_nothing() {
        let counters = MemoryRateCounters::default();
        let sum = |weight| Take {
            weight,
            refuses: Refuses::Above(100),
            ..take("cents", Some(60_000), 0)
        };
        assert_eq!(counters.take(&[sum(60)], 0).unwrap(), Taken::All);
        assert_eq!(counters.take(&[sum(41)], 1).unwrap(), Taken::Full(0));
        assert_eq!(counters.take(&[sum(40)], 2).unwrap(), Taken::All);
        assert_eq!(counters.take(&[sum(1)], 3).unwrap(), Taken::Full(0));
        // The 60 leaves the window at 60,000: 40 remain.
        assert_eq!(counters.take(&[sum(60)], 60_000).unwrap(), Taken::All);
        assert_eq!(counters.held(), 2);
        let look = |refuses| Take {
            weight: 0,
            refuses,
            ..take("cents", Some(60_000), 0)
        };
        assert_eq!(
            counters.take(&[look(Refuses::AnyCounted)], 60_001).unwrap(),
            Taken::Full(0)
        );
        assert_eq!(
            counters
                .take(&[look(Refuses::NothingCounted)], 60_001)
                .unwrap(),
            Taken::All
        );
        assert_eq!(
            counters
                .take(&[look(Refuses::NothingCounted)], 999_999)
                .unwrap(),
            Taken::Full(0)
        );
        assert_eq!(
            counters.held(),
            0,
            "looking recorded nothing; the window passed"
        );
    }

    #[test]
    fn a_shorter_window_counts_only_its_own_times_of_a_counter_kept_longer() {
        let counters = MemoryRateCounters::default();
        let hour = |weight| Take {
            weight,
            refuses: Refuses::Never,
            ..take("shared", Some(3_600_000), 0)
        };
        for at in [0, 1_000, 2_000] {
            assert_eq!(counters.take(&[hour(1)], at).unwrap(), Taken::All);
        }
        // Kept for the hour; the 1.5 s window in force at 2,500 holds the time 2,000 alone.
        let look = |most| Take {
            weight: 0,
            refuses: Refuses::Above(most),
            ..take("shared", Some(1_500), 0)
        };
        assert_eq!(counters.take(&[look(1)], 2_500).unwrap(), Taken::All);
        assert_eq!(counters.take(&[look(0)], 2_500).unwrap(), Taken::Full(0));
        // The hour's window still holds all three.
        let hour_look = Take {
            weight: 0,
            refuses: Refuses::Above(2),
            ..take("shared", Some(3_600_000), 0)
        };
        assert_eq!(counters.take(&[hour_look], 2_500).unwrap(), Taken::Full(0));
        assert_eq!(counters.held(), 3);
    }

    #[test]
    fn a_window_holds_max_calls_and_frees_a_slot_exactly_when_the_oldest_leaves() {
        let counters = MemoryRateCounters::default();
        let minute = [take("a", Some(60_000), 2)];
        assert_eq!(counters.take(&minute, 1_000).unwrap(), Taken::All);
        assert_eq!(counters.take(&minute, 30_000).unwrap(), Taken::All);
        assert_eq!(counters.take(&minute, 60_999).unwrap(), Taken::Full(0));
        assert_eq!(counters.take(&minute, 61_000).unwrap(), Taken::All);
        assert_eq!(counters.take(&minute, 61_000).unwrap(), Taken::Full(0));
        assert_eq!(counters.held(), 2);
    }

    #[test]
    fn all_or_none_a_full_counter_takes_nothing_from_the_others() {
        let counters = MemoryRateCounters::default();
        let both = [take("a", None, 5), take("b", None, 1)];
        assert_eq!(counters.take(&both, 0).unwrap(), Taken::All);
        assert_eq!(counters.take(&both, 0).unwrap(), Taken::Full(1));
        assert_eq!(counters.held(), 2, "the refused call took no slot in a");
        // An unenforced take counts past the cap.
        let forced = [Take {
            enforce: false,
            ..take("b", None, 1)
        }];
        assert_eq!(counters.take(&forced, 0).unwrap(), Taken::All);
        assert_eq!(counters.held(), 3);
    }

    #[test]
    fn full_capacity_refuses_after_dropping_passed_times_never_forgets_live_ones() {
        let counters = MemoryRateCounters::with_capacity(2);
        let minute = |bucket| [take(bucket, Some(60_000), 10)];
        assert_eq!(counters.take(&minute("a"), 0).unwrap(), Taken::All);
        assert_eq!(counters.take(&minute("b"), 10).unwrap(), Taken::All);
        assert!(matches!(
            counters.take(&minute("c"), 59_999),
            Err(CounterError::Full { capacity: 2 })
        ));
        // At 60,000 "a" has left its window: room for "c".
        assert_eq!(counters.take(&minute("c"), 60_000).unwrap(), Taken::All);
        assert_eq!(counters.held(), 2);
        // Full, a look still answers: it records nothing.
        let look = Take {
            weight: 0,
            refuses: Refuses::Above(10),
            ..take("c", Some(60_000), 0)
        };
        assert_eq!(counters.take(&[look], 60_001).unwrap(), Taken::All);
    }

    #[test]
    fn a_take_that_replaces_holds_one_time_however_often_it_is_taken() {
        let counters = MemoryRateCounters::with_capacity(3);
        let mark = |bucket| Take {
            refuses: Refuses::Never,
            replaces: true,
            ..take(bucket, Some(60_000), 0)
        };
        for at in 0..10 {
            assert_eq!(counters.take(&[mark("seen")], at).unwrap(), Taken::All);
            assert_eq!(counters.held(), 1, "at {at}");
        }
        // The capacity counts one time for it: two more buckets fit.
        assert_eq!(
            counters.take(&[mark("a"), mark("b")], 10).unwrap(),
            Taken::All
        );
        assert_eq!(counters.held(), 3);
    }

    #[test]
    fn a_clock_stepped_back_still_counts_later_times() {
        let counters = MemoryRateCounters::default();
        let minute = [take("a", Some(60_000), 1)];
        assert_eq!(counters.take(&minute, 100_000).unwrap(), Taken::All);
        assert_eq!(counters.take(&minute, 10_000).unwrap(), Taken::Full(0));
    }

    #[test]
    fn a_longer_window_named_by_a_take_that_cannot_refuse_keeps_the_times_it_covers() {
        // A limit widened from a minute to an hour keeps its counter; the call approved past it
        // is counted unenforced. Its hour must keep the first call, or a third call in the hour
        // passes a max of 2 (what skipping unenforced takes in the first phase once did).
        let counters = MemoryRateCounters::default();
        let minute = take("l", Some(60_000), 2);
        let hour = take("l", Some(3_600_000), 2);
        let approved = Take {
            enforce: false,
            ..hour
        };
        assert_eq!(counters.take(&[minute], 0).unwrap(), Taken::All);
        assert_eq!(counters.take(&[approved], 90_000).unwrap(), Taken::All);
        assert_eq!(counters.take(&[hour], 100_000).unwrap(), Taken::Full(0));
        // A look of the whole session, unenforced, keeps a record a minute's would drop.
        let counters = MemoryRateCounters::default();
        let seen = |window_ms, enforce| Take {
            weight: 0,
            enforce,
            refuses: Refuses::AnyCounted,
            ..take("f", window_ms, 0)
        };
        let record = Take {
            refuses: Refuses::Never,
            ..take("f", Some(1_000), 0)
        };
        assert_eq!(counters.take(&[record], 0).unwrap(), Taken::All);
        assert_eq!(
            counters.take(&[seen(None, false)], 5_000).unwrap(),
            Taken::All
        );
        assert_eq!(
            counters.take(&[seen(Some(1_000), true)], 5_000).unwrap(),
            Taken::All
        );
        assert_eq!(
            counters.take(&[seen(None, true)], 6_000).unwrap(),
            Taken::Full(0)
        );
        // So does a look that cannot refuse, though it records nothing.
        let counters = MemoryRateCounters::default();
        let never = Take {
            weight: 0,
            ..record
        };
        assert_eq!(counters.take(&[record], 0).unwrap(), Taken::All);
        assert_eq!(
            counters
                .take(
                    &[Take {
                        window_ms: None,
                        ..never
                    }],
                    500
                )
                .unwrap(),
            Taken::All
        );
        // A second's look past the record's second drops nothing the session's look must see.
        assert_eq!(
            counters.take(&[seen(Some(1_000), true)], 5_000).unwrap(),
            Taken::All
        );
        assert_eq!(
            counters.take(&[seen(None, true)], 6_000).unwrap(),
            Taken::Full(0)
        );
    }

    #[test]
    fn a_record_that_cannot_refuse_is_found_before_the_call_is_judged() {
        // What finding it does — widening its counter's window, dropping its passed times — is
        // done even when the call is then refused, and before the capacity is judged.
        let record = |bucket, window| Take {
            refuses: Refuses::Never,
            replaces: true,
            ..take(bucket, Some(window), 0)
        };
        let look = |bucket, window| Take {
            weight: 0,
            refuses: Refuses::AnyCounted,
            ..take(bucket, Some(window), 0)
        };
        let always = Take {
            refuses: Refuses::Always,
            ..take("x", None, 0)
        };
        // A refused call still widened the window to the record's second.
        let counters = MemoryRateCounters::default();
        assert_eq!(counters.take(&[record("h", 10)], 0).unwrap(), Taken::All);
        assert_eq!(
            counters.take(&[always, record("h", 1_000)], 1).unwrap(),
            Taken::Full(0)
        );
        assert_eq!(counters.take(&[look("h", 10)], 20).unwrap(), Taken::All);
        assert_eq!(
            counters.take(&[look("h", 1_000)], 30).unwrap(),
            Taken::Full(0)
        );
        // A session's record widens the window before the capacity is judged: the passed time it
        // would replace still counts.
        let counters = MemoryRateCounters::with_capacity(1);
        let counted = Take {
            refuses: Refuses::AnyCounted,
            ..take("a", Some(5), 0)
        };
        assert_eq!(counters.take(&[counted], 1).unwrap(), Taken::All);
        let session = Take {
            window_ms: None,
            ..record("a", 0)
        };
        assert!(matches!(
            counters.take(&[session], 6),
            Err(CounterError::Full { capacity: 1 })
        ));
        // A refused call dropped the record's passed time, so a clock stepped back finds room.
        let counters = MemoryRateCounters::with_capacity(1);
        assert_eq!(counters.take(&[record("a", 10)], 4).unwrap(), Taken::All);
        assert_eq!(
            counters.take(&[record("a", 10), always], 18).unwrap(),
            Taken::Full(1)
        );
        assert_eq!(counters.held(), 0);
        assert_eq!(counters.take(&[record("a", 10)], 13).unwrap(), Taken::All);
    }

    #[test]
    fn records_that_cannot_refuse_are_counted_as_any_record_is() {
        // What they hold is dropped once passed, replaced, and counted against the capacity.
        let counters = MemoryRateCounters::with_capacity(2);
        let record = |bucket, replaces| Take {
            refuses: Refuses::Never,
            replaces,
            ..take(bucket, Some(1_000), 0)
        };
        assert_eq!(counters.take(&[record("a", false)], 0).unwrap(), Taken::All);
        assert_eq!(counters.take(&[record("a", false)], 1).unwrap(), Taken::All);
        assert_eq!(counters.held(), 2);
        assert_eq!(
            counters
                .take(&[record("b", false)], 2)
                .unwrap_err()
                .to_string(),
            CounterError::Full { capacity: 2 }.to_string()
        );
        // Once they passed, they make room.
        assert_eq!(
            counters.take(&[record("b", true)], 1_001).unwrap(),
            Taken::All
        );
        assert_eq!(counters.held(), 1);
        let look = Take {
            weight: 0,
            refuses: Refuses::NothingCounted,
            ..take("a", Some(1_000), 0)
        };
        assert_eq!(counters.take(&[look], 1_001).unwrap(), Taken::Full(0));
    }
}
