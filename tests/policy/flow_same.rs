//! Round-4 item 16(a): how a flow rule's `same` compares the value seen earlier with the value
//! now. Exact by default (four spellings of one order are four orders), `case_insensitive` folds
//! case and reads numbers as text, `normalize` also removes invisible characters and applies
//! NFKC — one order however it is spelled.
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use crate::flow_setup::*;
use serde_json::json;
use toolgate::limits::MemoryRateCounters;

/// An order is settled only after it was paid in this session, compared with `options`.
fn settle_after_pay(options: &str) -> String {
    format!(
        r#""flows": [{{"id": "settle-after-pay", "tool": "settle", "action": "deny",
           "reason": "an order is settled only after it was paid",
           "unless_after": {{"tool": "pay", "within": "session",
                             "same": {{"earlier": "/order", "now": "/order"{options}}}}}}}]"#
    )
}

fn settles(options: &str, paid: serde_json::Value, settled: serde_json::Value) -> &'static str {
    let (controller, _, _) = controller(&settle_after_pay(options), MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "pay", json!({"order": paid, "cents": 5})),
        "allow"
    );
    call(&controller, "settle", json!({"order": settled}))
}

#[test]
fn exact_by_default_every_spelling_is_another_value() {
    assert_eq!(settles("", json!("ORD-1"), json!("ORD-1")), "allow");
    for other in [
        json!("ord-1"),
        json!("ＯＲＤ-１"),
        json!("ORD-1\u{200b}"),
        json!("ORD-1 "),
    ] {
        assert_eq!(
            settles("", json!("ORD-1"), other.clone()),
            "deny",
            "{other}"
        );
    }
    assert_eq!(settles("", json!(1), json!("1")), "deny");
    assert_eq!(settles("", json!(1), json!(1.0)), "allow", "one number");
}

#[test]
fn case_insensitive_folds_case_and_reads_numbers_as_text() {
    let loose = r#", "case_insensitive": true"#;
    for same in [json!("ord-1"), json!("Ord-1"), json!("ORD-1")] {
        assert_eq!(
            settles(loose, json!("ORD-1"), same.clone()),
            "allow",
            "{same}"
        );
    }
    assert_eq!(settles(loose, json!(1), json!("1")), "allow");
    assert_eq!(settles(loose, json!("1"), json!(1)), "allow");
    // Folding is not normalizing: fullwidth letters and invisible characters stay apart.
    for other in [json!("ＯＲＤ-１"), json!("ORD-1\u{200b}"), json!("ORD-2")] {
        assert_eq!(
            settles(loose, json!("ORD-1"), other.clone()),
            "deny",
            "{other}"
        );
    }
}

#[cfg(feature = "unicode")]
#[test]
fn normalize_makes_every_spelling_of_one_value_the_same() {
    let normalized = r#", "normalize": true"#;
    for same in [
        json!("ord-1"),
        json!("ＯＲＤ-１"),
        json!("ORD-1\u{200b}"),
        json!("\u{2060}O\u{200d}RD-1"),
        json!("ORD\u{00ad}-1"),
    ] {
        assert_eq!(
            settles(normalized, json!("ORD-1"), same.clone()),
            "allow",
            "{same}"
        );
    }
    assert_eq!(settles(normalized, json!(1), json!("１")), "allow");
    for other in [json!("ORD-2"), json!("ORD-11"), json!("OR-D1")] {
        assert_eq!(
            settles(normalized, json!("ORD-1"), other.clone()),
            "deny",
            "{other}"
        );
    }
}

#[test]
fn text_options_on_paths_are_refused_at_load() {
    let tools = tools();
    for options in [
        r#", "as_path": true, "case_insensitive": true"#,
        r#", "as_path": true, "normalize": true"#,
    ] {
        let error = try_policy(&settle_after_pay(options), &tools.registry)
            .unwrap_err()
            .to_string();
        assert!(error.contains("flows[0]"), "{options}: {error}");
    }
}
