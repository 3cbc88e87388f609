//! What the differential tests of the SQL counters share: random sequences of takes (several
//! counters in one take, a counter twice, groups, every refusal, weights, replacing records,
//! unenforced takes, time moving on), run on a store step by step. Each counter is always taken
//! with one window, where the stores keep times alike (memory keeps a counter's times for the
//! longest window it was taken with, the SQL stores for the longest any policy may name).
#![cfg(any(feature = "postgres", feature = "sqlite"))]

use proptest::prelude::*;
use toolgate::decision::Refuses;
use toolgate::limits::{MemoryRateCounters, RateCounters, Take, Taken};

/// Twelve counters, each always taken with its own window: a second, a minute, five seconds,
/// the session. Takes name up to nine at once, so both ways the store writes are taken: a few
/// counters a statement each, many (each once) in one statement.
pub(crate) const COUNTERS: [(&str, Option<u64>); 12] = [
    ("a", Some(1_000)),
    ("b", Some(60_000)),
    ("c", Some(5_000)),
    ("d", None),
    ("e", Some(1_000)),
    ("f", Some(60_000)),
    ("g", Some(5_000)),
    ("h", None),
    ("i", Some(1_000)),
    ("j", Some(60_000)),
    ("k", Some(5_000)),
    ("l", None),
];

#[derive(Debug, Clone)]
pub(crate) struct Step {
    advance_ms: u64,
    takes: Vec<(usize, u64, u8, bool, bool, Option<u32>)>,
}

fn refuses(pick: u8) -> Refuses {
    match pick % 7 {
        0 => Refuses::Above(0),
        1 => Refuses::Above(1),
        2 => Refuses::Above(3),
        3 => Refuses::AnyCounted,
        4 => Refuses::NothingCounted,
        5 => Refuses::Never,
        _ => Refuses::Always,
    }
}

pub(crate) fn steps() -> impl Strategy<Value = Vec<Step>> {
    let take = (
        0..COUNTERS.len(),
        0_u64..3,
        any::<u8>(),
        any::<bool>(),
        prop::bool::weighted(0.8),
        prop::option::weighted(0.3, 0_u32..2),
    );
    let step = (
        prop::sample::select(vec![0_u64, 1, 400, 999, 1_000, 4_000, 70_000]),
        prop::collection::vec(take, 1..10),
    )
        .prop_map(|(advance_ms, takes)| Step { advance_ms, takes });
    prop::collection::vec(step, 1..14)
}

pub(crate) fn run(counters: &dyn RateCounters, steps: &[Step]) -> Vec<String> {
    let mut now = 1_000_000;
    steps
        .iter()
        .map(|step| {
            now += step.advance_ms;
            let takes: Vec<Take<'_>> = step
                .takes
                .iter()
                .map(|&(counter, weight, refusal, replaces, enforce, group)| {
                    let (bucket, window_ms) = COUNTERS[counter];
                    Take {
                        weight,
                        refuses: refuses(refusal),
                        replaces,
                        enforce,
                        group,
                        ..Take::limit(bucket, window_ms, 0)
                    }
                })
                .collect();
            format!("{:?}", counters.take(&takes, now))
        })
        .collect()
}

/// What a result's values do, on `store` and on the memory counters alike: many counters
/// recorded by one take list, each replacing its record, beside one that adds (the session's
/// count); then looks that tell one record from three, and an added record from a replaced one.
pub(crate) fn recorded_together(store: &dyn RateCounters) {
    let memory = MemoryRateCounters::default();
    for counters in [store, &memory] {
        for at in 0..3 {
            // More than a few counters, each once: written together.
            let together = [
                record("v1", true),
                record("v2", true),
                record("v3", true),
                record("v4", true),
                record("v5", true),
                record("v6", true),
                Take {
                    weight: 2,
                    ..record("count", false)
                },
            ];
            assert_eq!(counters.take(&together, 1_000 + at).unwrap(), Taken::All);
        }
        // One record in each value's counter, three of weight 2 in the count.
        assert_eq!(
            counters.take(&[look("v2", 0)], 2_000).unwrap(),
            Taken::Full(0)
        );
        assert_eq!(counters.take(&[look("v2", 1)], 2_000).unwrap(), Taken::All);
        assert_eq!(
            counters.take(&[look("count", 5)], 2_000).unwrap(),
            Taken::Full(0)
        );
        assert_eq!(
            counters.take(&[look("count", 6)], 2_000).unwrap(),
            Taken::All
        );
        // A clock stepped back: each replaced record keeps the later time, 1,002.
        let again: Vec<Take<'_>> = ["v1", "v2", "v3", "v4", "v5", "v6"]
            .into_iter()
            .map(|bucket| record(bucket, true))
            .collect();
        assert_eq!(counters.take(&again, 500).unwrap(), Taken::All);
        // More than a few looks, read together: a record leaves a window exactly when the
        // window has passed since it (the replaced ones were last written at 1,002).
        let looks = ["v1", "v2", "v3", "v4", "v5", "v6"].map(|bucket| look(bucket, 0));
        assert_eq!(counters.take(&looks, 61_001).unwrap(), Taken::Full(0));
        assert_eq!(counters.take(&looks, 61_002).unwrap(), Taken::All);
    }
}

/// A record in `bucket` under a minute's window that never refuses: replacing the counter's
/// records when `replaces` (a value's), else added to them.
pub(crate) fn record(bucket: &str, replaces: bool) -> Take<'_> {
    Take {
        refuses: Refuses::Never,
        replaces,
        ..Take::limit(bucket, Some(60_000), 0)
    }
}

/// A look at `bucket` under a minute's window, refused past `most`.
pub(crate) fn look(bucket: &str, most: u64) -> Take<'_> {
    Take {
        weight: 0,
        refuses: Refuses::Above(most),
        ..Take::limit(bucket, Some(60_000), 0)
    }
}

/// The differential test: `open(case)` a store of a session of its own for each case, held to
/// the memory counters' answers step by step over 160 random sequences.
pub(crate) fn agrees_with_memory<S: RateCounters>(open: impl Fn(usize) -> S) {
    let cases = std::sync::atomic::AtomicUsize::new(0);
    let config = ProptestConfig {
        cases: 160,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(steps in steps())| {
        let memory = MemoryRateCounters::default();
        let store = open(cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        prop_assert_eq!(run(&store, &steps), run(&memory, &steps));
    });
}

/// A clock stepped forward for one take, then back, deletes no time a window still counts: three
/// calls, one take 36 hours ahead naming another counter (or, from another node, the same store),
/// then the fourth call a minute after the first three is refused — as by the memory counters,
/// which drop only the times of the counters a take names. (An independent attack: one take two
/// days ahead deleted every session's times, and the caps began again.)
pub(crate) fn a_clock_stepped_forward_then_back_keeps_the_times(store: &dyn RateCounters) {
    const HOUR_MS: u64 = 3_600_000;
    let call = |bucket| Take {
        refuses: Refuses::Above(3),
        ..Take::limit(bucket, Some(HOUR_MS), 0)
    };
    let start = 1_000 * HOUR_MS;
    for at in 0..3 {
        assert_eq!(store.take(&[call("bob")], start + at).unwrap(), Taken::All);
    }
    assert_eq!(
        store.take(&[call("bob")], start + 3).unwrap(),
        Taken::Full(0)
    );
    assert_eq!(
        store.take(&[call("carol")], start + 36 * HOUR_MS).unwrap(),
        Taken::All
    );
    assert_eq!(
        store.take(&[call("bob")], start + 60_000).unwrap(),
        Taken::Full(0),
        "the cap began again after a clock step"
    );
}
