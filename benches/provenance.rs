//! What provenance costs (memory store), in one run:
//!
//! - `result_10kb_plain` / `result_10kb_recorded`: a call returning a 10 KB page (prose with
//!   links, addresses, IBANs and numbers) under a policy that reads no provenance, and under one
//!   that records its values — the difference is the recording, target ≤ 20 µs;
//! - `one_flow_rule` / `one_provenance_condition`: an allowed call judged by one flow rule, and by
//!   one provenance condition (a payee named by the person) — target ≤ 2×;
//! - `session_10_results` / `session_1000_results`: that provenance call in a session holding 10
//!   or 1,000 recorded results — target ≤ 1.5×.

#[path = "shapes/provenance.rs"]
mod shapes;

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

use shapes::{FLOW, PAYEE, PROVENANCE, allowed, controller, session_with};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("provenance");
    let plain = controller("");
    group.bench_function("result_10kb_plain", |b| {
        b.iter(|| allowed(&plain, "read_page", json!({})));
    });
    // A fresh controller every 400 results: a session's bound (100,000 values) is never reached.
    group.bench_function("result_10kb_recorded", |b| {
        b.iter_custom(|iterations| {
            let mut spent = Duration::ZERO;
            let mut left = iterations;
            while left > 0 {
                let session = controller(PROVENANCE);
                let batch = left.min(400);
                let start = Instant::now();
                for _ in 0..batch {
                    allowed(&session, "read_page", json!({}));
                }
                spent += start.elapsed();
                left -= batch;
            }
            spent
        });
    });
    let flowing = controller(FLOW);
    group.bench_function("one_flow_rule", |b| {
        b.iter(|| allowed(&flowing, "send_money", json!({"iban": PAYEE})));
    });
    for results in [10, 1_000] {
        let session = session_with(results);
        let name = if results == 10 {
            "one_provenance_condition".to_owned()
        } else {
            format!("session_{results}_results")
        };
        group.bench_function(name, |b| {
            b.iter(|| allowed(&session, "send_money", json!({"iban": PAYEE})));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
