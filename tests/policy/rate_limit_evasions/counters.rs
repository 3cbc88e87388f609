//! The counters themselves: fresh keys fill memory counters, which then deny and never evict,
//! counters emptied by refused calls are dropped within the capacity, and SQLite counters count
//! past calls by a replaced policy's own window.

use super::*;

#[test]
fn memory_fresh_keys_fill_the_counters_then_deny_never_evict() {
    let limit = r#"{"id": "per-recipient", "tool": "send_email", "max": 1, "per": "minute",
        "over": "deny", "key": {"pointer": "/to"}, "reason": "one a minute to one recipient"}"#;
    let bench = bench(limit);
    let counters = Arc::new(MemoryRateCounters::with_capacity(8));
    let controller = bench.controller.with_rate_counters(Arc::clone(&counters));
    let mail =
        |to: String| ran(&controller.handle(ToolCall::new("c", "send_email", json!({"to": to}))));
    for i in 0..8 {
        assert!(mail(format!("r{i}")));
    }
    // Full: new recipients are refused, and no old count was dropped to make room.
    for i in 8..100 {
        assert!(!mail(format!("r{i}")));
    }
    assert!(!mail("r0".to_owned()));
    assert_eq!(counters.held(), 8);
    // Once the minute passes, room is made from passed times only.
    bench.clock.advance(Duration::from_secs(60));
    for i in 100..108 {
        assert!(mail(format!("r{i}")));
    }
    assert!(counters.held() <= 8);
}

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_a_replaced_policy_counts_past_calls_by_its_own_window() {
    use toolgate::limits::SqliteRateCounters;
    let dir = std::env::temp_dir().join(format!("toolgate-attacked-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let minute = r#"{"id": "cap", "tool": "deploy__web", "max": 1, "per": "minute",
        "over": "deny", "reason": "one"}"#;
    let bench = bench(minute);
    let controller = bench
        .controller
        .with_rate_counters(SqliteRateCounters::open(dir.join("rates.db"), "s").unwrap());
    let call = || ToolCall::new("c", "deploy__web", json!({}));
    assert!(ran(&controller.handle(call())));
    bench.clock.advance(Duration::from_secs(30));
    controller
        .try_replace_policy(|registry| {
            RulePolicy::from_json(
                &policy_json(RULES, &minute.replace("minute", "hour")),
                registry,
            )
        })
        .unwrap();
    // 90 s after the first call: past a minute, within the hour the policy now says.
    bench.clock.advance(Duration::from_secs(60));
    let second = ran(&controller.handle(call()));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !second,
        "the sqlite counters forgot a call by the old window"
    );
}

#[test]
fn memory_counters_emptied_by_refused_calls_are_dropped_within_the_capacity() {
    // A keyed cap (one a minute per recipient) listed before a group cap (five an hour). Once the
    // group cap is full, a call to an old recipient empties that recipient's counter and is then
    // refused by the group cap: the empty counter must not stay behind for ever.
    let limits = r#"{"id": "per-recipient", "tool": "send_email", "max": 1, "per": "minute",
            "over": "deny", "key": {"pointer": "/to"}, "reason": "one a minute to one recipient"},
        {"id": "group", "tool": "send_email", "max": 5, "per": "hour", "over": "deny",
            "reason": "five an hour"}"#;
    let bench = bench(limits);
    let counters = Arc::new(MemoryRateCounters::with_capacity(10));
    let controller = bench.controller.with_rate_counters(Arc::clone(&counters));
    let mail =
        |to: String| ran(&controller.handle(ToolCall::new("c", "send_email", json!({"to": to}))));
    for round in 0..20 {
        for i in 0..5 {
            assert!(mail(format!("r{round}-{i}")));
        }
        bench.clock.advance(Duration::from_secs(61));
        for i in 0..5 {
            assert!(!mail(format!("r{round}-{i}")));
        }
        bench.clock.advance(Duration::from_secs(3_600));
    }
    let kept = format!("{counters:?}").matches("Counter {").count();
    assert!(
        kept <= 10,
        "{kept} counters kept for a capacity of 10 call times ({} held)",
        counters.held()
    );
}
