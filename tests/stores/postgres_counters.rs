//! The PostgreSQL counters decide every take as the memory counters do: random sequences of takes
//! (several counters in one take, a counter twice, groups, every refusal, weights, replacing
//! records, unenforced takes, time moving on) give the same answer from both, step by step.
//! Each counter is always taken with one window, where the two stores keep times alike (memory
//! keeps a counter's times for the longest window it was taken with, PostgreSQL for the longest
//! any policy may name). Without `TOOLGATE_PG_URL` the test prints a note and passes.
#![cfg(feature = "postgres")]

use proptest::prelude::*;
use toolgate::decision::Refuses;
use toolgate::limits::{MemoryRateCounters, PostgresRateCounters, RateCounters, Take, Taken};

use crate::postgres_support::{Db, server_url};

/// Twelve counters, each always taken with its own window: a second, a minute, five seconds,
/// the session. Takes name up to nine at once, so both ways the store writes are taken: a few
/// counters a statement each, many (each once) in one statement.
const COUNTERS: [(&str, Option<u64>); 12] = [
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
struct Step {
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

fn steps() -> impl Strategy<Value = Vec<Step>> {
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

fn run(counters: &dyn RateCounters, steps: &[Step]) -> Vec<String> {
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

#[test]
fn postgres_counters_decide_every_take_as_memory_counters_do() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "counters_agree");
    let cases = std::sync::atomic::AtomicUsize::new(0);
    let config = ProptestConfig {
        cases: 160,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(steps in steps())| {
        let memory = MemoryRateCounters::default();
        // A session of its own for each case: nothing carries over from the one before.
        let case = cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let postgres = PostgresRateCounters::connect(&db.url("counters"), format!("case-{case}")).unwrap();
        prop_assert_eq!(run(&postgres, &steps), run(&memory, &steps));
    });
}

#[test]
fn counters_recorded_together_replace_their_own_records_and_keep_the_others() {
    // What a result's values do: many counters recorded by one take list, each replacing its
    // record, beside one that adds (the session's count); then looks that tell one record from
    // three, and an added record from a replaced one.
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "counters_together");
    let postgres = PostgresRateCounters::connect(&db.url("counters"), "together").unwrap();
    let memory = MemoryRateCounters::default();
    let record = |bucket, replaces| Take {
        refuses: Refuses::Never,
        replaces,
        ..Take::limit(bucket, Some(60_000), 0)
    };
    let look = |bucket, most| Take {
        weight: 0,
        refuses: Refuses::Above(most),
        ..Take::limit(bucket, Some(60_000), 0)
    };
    for counters in [&postgres as &dyn RateCounters, &memory] {
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
        // More than a few looks, read together: a record leaves a window exactly when the
        // window has passed since it (the replaced ones were last written at 1,002).
        let looks = ["v1", "v2", "v3", "v4", "v5", "v6"].map(|bucket| look(bucket, 0));
        assert_eq!(counters.take(&looks, 61_001).unwrap(), Taken::Full(0));
        assert_eq!(counters.take(&looks, 61_002).unwrap(), Taken::All);
    }
}

#[test]
fn clearing_passed_times_never_waits_for_a_row_another_take_holds() {
    // Take A replaces a counter whose old record has passed; take B, later, clears every
    // passed record. Had B waited for a row A holds while A waits for one B deleted, PostgreSQL
    // would end one of them (`deadlock detected`) and its call would be denied.
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "counters_expiry");
    drop(PostgresRateCounters::connect(&db.url("setup"), "setup").unwrap());
    let mut holder = crate::postgres_support::admin(&db.url("holder"));
    // In this heap order, a sequential scan meets X (A's) before Z and W.
    holder
        .batch_execute(
            "INSERT INTO toolgate_rate_events (bucket, at_ms, expires_ms, weight)
                 VALUES ('*/X', 0, 150, 1), ('*/Z', 0, 100, 1), ('*/W', 0, 110, 1)",
        )
        .unwrap();
    let first = PostgresRateCounters::connect(&db.url("first"), "a").unwrap();
    let second = PostgresRateCounters::connect(&db.url("second"), "b").unwrap();
    // A third party holds W's row, so both takes reach it in a known order.
    let mut holding = holder.transaction().unwrap();
    holding
        .query(
            "SELECT 1 FROM toolgate_rate_events WHERE bucket = '*/W' FOR UPDATE",
            &[],
        )
        .unwrap();
    let replacing = std::thread::spawn(move || {
        let takes: Vec<Take<'_>> = ["X", "p1", "p2", "p3", "p4", "p5"]
            .into_iter()
            .map(|bucket| Take {
                refuses: Refuses::Never,
                replaces: true,
                across_sessions: true,
                ..Take::limit(bucket, Some(1_000), 0)
            })
            .collect();
        first
            .take(&takes, 120)
            .map_err(|error| format!("{error:?}"))
    });
    std::thread::sleep(std::time::Duration::from_millis(400));
    let clearing = std::thread::spawn(move || {
        second
            .take(&[Take::limit("Y", Some(1_000), 5)], 200)
            .map_err(|error| format!("{error:?}"))
    });
    std::thread::sleep(std::time::Duration::from_millis(400));
    holding.commit().unwrap();
    assert_eq!(replacing.join().unwrap(), Ok(Taken::All));
    assert_eq!(clearing.join().unwrap(), Ok(Taken::All));
}
