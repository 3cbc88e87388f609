//! The memory counters' tests: windows, capacity, replacing records, a clock stepped back.

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
    // A look of the whole session that cannot refuse — unenforced, or refusing never — keeps a
    // record a second's look would drop: after it, a second's look past the record's second and
    // then a session's look still count the record.
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
    let never = Take {
        weight: 0,
        window_ms: None,
        ..record
    };
    for (widening, at) in [(seen(None, false), 5_000), (never, 500)] {
        let counters = MemoryRateCounters::default();
        assert_eq!(counters.take(&[record], 0).unwrap(), Taken::All);
        assert_eq!(counters.take(&[widening], at).unwrap(), Taken::All);
        assert_eq!(
            counters.take(&[seen(Some(1_000), true)], 5_000).unwrap(),
            Taken::All
        );
        assert_eq!(
            counters.take(&[seen(None, true)], 6_000).unwrap(),
            Taken::Full(0),
            "{widening:?}"
        );
    }
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

/// A record that yields room (provenance's values), kept a day and replacing its counter's time.
fn value(bucket: &str) -> Take<'_> {
    Take {
        refuses: Refuses::Never,
        replaces: true,
        yields_room: true,
        ..take(bucket, Some(86_400_000), 0)
    }
}

#[test]
fn records_that_yield_room_hold_half_the_capacity_and_are_refused_past_it_not_the_store() {
    let counters = MemoryRateCounters::with_capacity(6);
    assert_eq!(
        counters
            .take(&[value("v1"), value("v2"), value("v3")], 0)
            .unwrap(),
        Taken::All
    );
    // Half full: one more is refused by the first take that yields room, and records nothing.
    let limit = take("limit", Some(60_000), 10);
    assert_eq!(
        counters
            .take(&[limit, value("v4"), value("v5")], 1)
            .unwrap(),
        Taken::Full(1)
    );
    assert_eq!(counters.held(), 3);
    // A value held already is recorded again: it adds no time.
    assert_eq!(
        counters.take(&[value("v1"), value("v3")], 2).unwrap(),
        Taken::All
    );
    // The other half is the limits': three calls, then the store is full.
    for at in 3..6 {
        assert_eq!(counters.take(&[limit], at).unwrap(), Taken::All, "at {at}");
    }
    assert!(matches!(
        counters.take(&[limit], 6),
        Err(CounterError::Full { capacity: 6 })
    ));
    // A day after the first values, their room is free again.
    assert_eq!(
        counters.take(&[value("v4")], 86_400_001).unwrap(),
        Taken::All
    );
}

#[test]
fn the_sweep_for_room_is_skipped_only_while_nothing_can_have_passed() {
    let counters = MemoryRateCounters::with_capacity(3);
    let day = |bucket| take(bucket, Some(86_400_000), 10);
    assert_eq!(counters.take(&[day("a"), day("b")], 0).unwrap(), Taken::All);
    // Too many: the sweep finds nothing passed before a day.
    assert!(counters.take(&[day("c"), day("d")], 1).is_err());
    // A counter of a short window, made after that sweep: it passes at 12, and then makes room.
    let short = take("e", Some(10), 10);
    assert_eq!(counters.take(&[short], 2).unwrap(), Taken::All);
    assert!(counters.take(&[day("f")], 11).is_err());
    assert_eq!(counters.take(&[day("f")], 12).unwrap(), Taken::All);
    assert_eq!(counters.held(), 3);
}

#[test]
fn a_keep_of_nothing_is_swept_even_before_its_time() {
    // An independent attack: a window of 0 drops its time at any later call, even one whose
    // clock stepped back before it, so the sweep may not wait for the time plus its window.
    let counters = MemoryRateCounters::with_capacity(2);
    assert_eq!(
        counters.take(&[take("a", Some(1_000), 10)], 0).unwrap(),
        Taken::All
    );
    let two = [take("b", Some(1_000), 10), take("c", Some(1_000), 10)];
    assert!(counters.take(&two, 1).is_err());
    assert_eq!(
        counters.take(&[take("g", Some(0), 10)], 214).unwrap(),
        Taken::All
    );
    assert_eq!(
        counters.take(&[take("x", Some(1_000), 10)], 188).unwrap(),
        Taken::All
    );
}

#[test]
fn values_short_of_their_half_sweep_once_a_second_the_store_short_of_room_always() {
    let counters = MemoryRateCounters::with_capacity(4);
    let short = |bucket| Take {
        window_ms: Some(10),
        ..value(bucket)
    };
    assert_eq!(
        counters.take(&[short("v1"), short("v2")], 0).unwrap(),
        Taken::All
    );
    // Their half full: a sweep finds nothing passed, and the value is refused.
    assert_eq!(counters.take(&[short("v3")], 5).unwrap(), Taken::Full(0));
    // Passed at 10, but the values' sweep waits a second: refused, as an overflow.
    assert_eq!(counters.take(&[short("v3")], 10).unwrap(), Taken::Full(0));
    assert_eq!(counters.take(&[short("v3")], 1_005).unwrap(), Taken::All);
    // The store as a whole short of room sweeps at once: a limit's call is never refused for
    // room a sweep would make.
    let limit = |bucket| take(bucket, Some(10), 10);
    assert_eq!(
        counters.take(&[limit("l1"), limit("l2")], 1_006).unwrap(),
        Taken::All
    );
    assert_eq!(counters.take(&[limit("l3")], 1_010).unwrap(), Taken::All);
    assert!(counters.take(&[limit("l4")], 1_014).is_err());
    // v3 passed at 1,015, a few milliseconds after the last sweep: swept, and room is made.
    assert_eq!(counters.take(&[limit("l4")], 1_015).unwrap(), Taken::All);
}
