//! Flow rules against evasions of sum caps and of windows.

use super::*;

#[test]
fn sum_amounts_that_cannot_be_added_exactly_are_denied_and_count_nothing() {
    let (controller, _, _) = controller(PAY_CAP, MemoryRateCounters::default());
    let texts = [
        "10.5",
        "1e2",
        "100.0",
        "-1",
        "-0",
        "-0.0",
        "1e20",
        "18446744073709551615",
        "18446744073709551616",
        "9007199254740993",
        "\"100\"",
        "null",
        "true",
        "[100]",
        "{\"n\": 100}",
        "1e400",
    ];
    for text in texts {
        let Ok(cents) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let result = call(&controller, "pay", json!({"order": "A", "cents": cents}));
        assert_eq!(result, "deny", "cents {text}");
    }
    assert_eq!(
        call(&controller, "pay", json!({"order": "A"})),
        "deny",
        "missing"
    );
    // Nothing was counted: the whole cap is still there, and not a cent more.
    assert_eq!(
        call(&controller, "pay", json!({"order": "A", "cents": 10_000})),
        "allow"
    );
    assert_eq!(
        call(&controller, "pay", json!({"order": "A", "cents": 1})),
        "deny"
    );
    // A weight of 0 runs and adds nothing.
    assert_eq!(
        call(&controller, "pay", json!({"order": "A", "cents": 0})),
        "allow"
    );
}

#[test]
fn sum_keys_spellings_and_many_keys() {
    let (controller, _, _) = controller(PAY_CAP, MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "pay", json!({"order": 7, "cents": 10_000})),
        "allow"
    );
    for order in [json!(7.0), json!([7]), json!([[7], 7]), json!(7e0)] {
        assert_eq!(
            call(&controller, "pay", json!({"order": order, "cents": 1})),
            "deny",
            "{order}"
        );
    }
    // A list of orders takes the amount from each; more than 64 keys is refused.
    let many: Vec<Value> = (0..65).map(|i| json!(format!("o{i}"))).collect();
    assert_eq!(
        call(&controller, "pay", json!({"order": many, "cents": 1})),
        "deny"
    );
    let some: Vec<Value> = (0..64).map(|i| json!(format!("o{i}"))).collect();
    assert_eq!(
        call(&controller, "pay", json!({"order": some, "cents": 10_000})),
        "allow"
    );
    assert_eq!(
        call(&controller, "pay", json!({"order": "o63", "cents": 1})),
        "deny"
    );
    // Missing and null keys share one count.
    assert_eq!(call(&controller, "pay", json!({"cents": 10_000})), "allow");
    assert_eq!(
        call(&controller, "pay", json!({"order": null, "cents": 1})),
        "deny"
    );
    assert_eq!(
        call(&controller, "pay", json!({"order": [], "cents": 1})),
        "deny"
    );
}

#[test]
fn sum_window_edges_to_the_millisecond_in_memory_and_sqlite() {
    let file = scratch("sum-edge");
    let stores: Vec<Arc<dyn RateCounters>> = vec![
        Arc::new(MemoryRateCounters::default()),
        Arc::new(SqliteRateCounters::open(&file, "s").unwrap()),
    ];
    for counters in stores {
        let (controller, clock, _) = controller(PAY_CAP, counters);
        let pay = |cents: u64| call(&controller, "pay", json!({"order": "A", "cents": cents}));
        assert_eq!(pay(6_000), "allow");
        advance(&clock, 1);
        assert_eq!(pay(4_000), "allow");
        advance(&clock, DAY - 2);
        assert_eq!(pay(1), "deny", "one ms before the first leaves");
        advance(&clock, 1);
        assert_eq!(pay(6_001), "deny");
        assert_eq!(pay(6_000), "allow", "the first left exactly a day later");
        assert_eq!(pay(1), "deny");
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn a_huge_amount_approved_past_an_ask_cap_never_makes_room() {
    let ask_cap = PAY_CAP.replace(r#""over": "deny""#, r#""over": "ask""#);
    let file = scratch("huge");
    let stores: Vec<Arc<dyn RateCounters>> = vec![
        Arc::new(MemoryRateCounters::default()),
        Arc::new(SqliteRateCounters::open(&file, "s").unwrap()),
    ];
    for counters in stores {
        let (controller, _, _) = controller(&ask_cap, counters);
        for cents in [u64::MAX, 1 << 63, (1 << 63) - 1, u64::MAX] {
            // Held past the cap, or denied when the store cannot add up what it holds.
            if let Outcome::PendingApproval(request) = controller.handle(ToolCall::new(
                "c",
                "pay",
                json!({"order": "A", "cents": cents}),
            )) {
                let _ = controller
                    .resolve(ApprovalResponse::approve(request.approval_id))
                    .unwrap();
            }
        }
        // Whatever the store did with those (wrap, clamp, overflow), a small amount is not let
        // through unasked.
        assert_ne!(
            call(&controller, "pay", json!({"order": "A", "cents": 1})),
            "allow"
        );
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

// ---- windows -----------------------------------------------------------------------------------

#[test]
fn flow_window_edges_to_the_millisecond_in_memory_and_sqlite() {
    let file = scratch("flow-edge");
    let stores: Vec<Arc<dyn RateCounters>> = vec![
        Arc::new(MemoryRateCounters::default()),
        Arc::new(SqliteRateCounters::open(&file, "s").unwrap()),
    ];
    for counters in stores {
        let (controller, clock, _) = controller(SECRETS, counters);
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
            "allow"
        );
        advance(&clock, HOUR / 2);
        // A later read of a public path replaces nothing of the secret one's record.
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/public/k"})),
            "allow"
        );
        advance(&clock, HOUR / 2 - 1);
        assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
        advance(&clock, 1);
        assert_eq!(call(&controller, "web_fetch", json!({})), "allow");
        // A second secret read restarts the hour.
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
            "allow"
        );
        advance(&clock, HOUR - 1);
        assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}
