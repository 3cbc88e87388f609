//! The PostgreSQL counters decide every take as the memory counters do: random sequences of takes
//! (several counters in one take, a counter twice, groups, every refusal, weights, replacing
//! records, unenforced takes, time moving on) give the same answer from both, step by step.
//! Each counter is always taken with one window, where the two stores keep times alike (memory
//! keeps a counter's times for the longest window it was taken with, PostgreSQL for the longest
//! any policy may name). Without `TOOLGATE_PG_URL` the test prints a note and passes.
#![cfg(feature = "postgres")]

use toolgate::decision::Refuses;
use toolgate::limits::{PostgresRateCounters, RateCounters, Take, Taken};

use crate::counters_agree::agrees_with_memory;
use crate::postgres_support::{Db, server_url};

#[test]
fn postgres_counters_decide_every_take_as_memory_counters_do() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "counters_agree");
    agrees_with_memory(|case| {
        PostgresRateCounters::connect(&db.url("counters"), format!("case-{case}")).unwrap()
    });
}

#[test]
fn a_clock_stepped_forward_then_back_keeps_the_times() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "counters_clock_step");
    let postgres = PostgresRateCounters::connect(&db.url("counters"), "step").unwrap();
    crate::counters_agree::a_clock_stepped_forward_then_back_keeps_the_times(&postgres);
    // A node whose clock runs a year ahead deletes nothing the others count: the sweep reads the
    // server's clock too.
    let ahead = PostgresRateCounters::connect(&db.url("counters"), "step").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let call = |bucket| Take {
        refuses: Refuses::Above(1),
        ..Take::limit(bucket, Some(3_600_000), 0)
    };
    assert_eq!(postgres.take(&[call("dave")], now).unwrap(), Taken::All);
    let year_ms = 365 * 86_400_000;
    assert_eq!(
        ahead.take(&[call("erin")], now + year_ms).unwrap(),
        Taken::All
    );
    assert_eq!(
        postgres.take(&[call("dave")], now + 1).unwrap(),
        Taken::Full(0)
    );
}

#[test]
fn counters_recorded_together_replace_their_own_records_and_keep_the_others() {
    let Some(url) = server_url() else { return };
    let db = Db::new(&url, "counters_together");
    let postgres = PostgresRateCounters::connect(&db.url("counters"), "together").unwrap();
    crate::counters_agree::recorded_together(&postgres);
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
