//! A session's bound on the values it records: 100,000 (`MAX_VALUES_PER_SESSION`), counted per
//! value (a value recorded again counts again). Past it the session is overflowed, and every
//! `seen_in` a result source holds — the rules ask rather than miss a value never recorded.
#![cfg(all(feature = "sqlite", feature = "postgres", feature = "unicode", unix))]

use serde_json::json;
use toolgate::limits::MemoryRateCounters;
use toolgate::provenance::MAX_VALUES_PER_SESSION;

use crate::amounts::{GYM, call, read_mail, world};

#[test]
fn a_session_overflows_past_its_bound_counted_per_value() {
    // No request from the person: its values would count against the same bound.
    let world = world(MemoryRateCounters::default());
    // One line of 500 long numbers (no line short enough to be a value of its own): 500 values
    // each time it is read.
    let page: String = (0..500).map(|n| format!("{}, ", 10_000_000 + n)).collect();
    let per_read = 500;
    let reads = MAX_VALUES_PER_SESSION as usize / per_read;
    // A memo amount no result carried: the rule on memo amounts from content does not hold…
    let memo = || {
        call(
            &world,
            "send_money",
            json!({"iban": GYM, "cents": 2000, "memo": "gym, EUR 5"}),
        )
    };
    for _ in 0..reads {
        read_mail(&world, &page);
    }
    // … at exactly the bound …
    assert_eq!(memo(), "allow");
    // … and past it the session is overflowed: every value counts as seen in a result.
    read_mail(&world, &page);
    assert_eq!(memo(), "ask");
}
