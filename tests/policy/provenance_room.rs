//! Provenance's values in the memory counters hold at most half their room (`Take::yields_room`):
//! past it a principal's values are refused as values past the session's bound are — the session
//! overflows, the result reaches the model — and rate limits and flow rules keep the other half.
//! A person's request refused so names nothing and overflows its session as well.
//! Values filling the whole store withheld every result and denied every limited call of every
//! principal, for a day: 11 principals reading 190 pages of 500 values did so to the default
//! store (2^20 times).
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate::limits::MemoryRateCounters;
use toolgate::*;

use crate::flow_setup::outcome_word;

const POLICY: &str = r#"{
  "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
  "limits": [{"id": "pings", "tool": "ping", "max": 100000, "per": "hour", "over": "deny",
              "reason": "too many pings"}],
  "flows": [{"id": "hotel", "tool": "book", "action": "ask", "reason": "a page named it",
             "provenance": {"pointer": "/hotel", "seen_in": ["untrusted"]}}]
}"#;

fn tool(name: &str, page: Option<Arc<Mutex<String>>>) -> ToolDefinition {
    let schema = json!({"type": "object", "properties": {"hotel": {"type": "string"}}});
    ToolDefinition::new(
        ToolSpec::new(name, "A tool.", schema),
        move |_: &Value| -> Result<String, ToolError> {
            Ok(page
                .as_ref()
                .map_or_else(|| "done".to_owned(), |page| page.lock().unwrap().clone()))
        },
    )
    .unwrap()
}

#[test]
fn values_past_their_half_of_the_memory_counters_overflow_the_session_and_limits_keep_theirs() {
    let page = Arc::new(Mutex::new(String::new()));
    let registry = ToolRegistry::new([
        tool("read", Some(Arc::clone(&page))),
        tool("book", None),
        tool("ping", None),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(POLICY, &registry).unwrap();
    // Room for 4,000 times: 2,000 for values, each page 500 values and its session's count.
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_rate_counters(MemoryRateCounters::with_capacity(4_000));
    let call = |who: &str, tool: &str, arguments: Value| {
        let call =
            ToolCall::new("c", tool, arguments).with_principal(Principal::new(who, ["staff"]));
        outcome_word(controller.handle(call))
    };
    let read = |who: &str, first: u64| {
        *page.lock().unwrap() = (first..first + 500).map(|n| format!("{n}, ")).collect();
        call(who, "read", json!({}))
    };
    for at in 0..3 {
        assert_eq!(read("ann", 10_000_000 + at * 1_000), "allow");
        assert_eq!(call("ann", "ping", json!({})), "allow");
    }
    // Ann's values are seen; a hotel no page named is not.
    assert_eq!(call("ann", "book", json!({"hotel": "10000001"})), "ask");
    assert_eq!(
        call("ann", "book", json!({"hotel": "Nowhere Inn"})),
        "allow"
    );
    // Past the half: every page still reaches the model, and every ping runs; ann's session
    // overflows (any value counts as seen), and so does bob's, whose values find no room.
    for at in 3..9 {
        assert_eq!(read("ann", 10_000_000 + at * 1_000), "allow", "read {at}");
        assert_eq!(call("ann", "ping", json!({})), "allow", "ping {at}");
    }
    assert_eq!(call("ann", "book", json!({"hotel": "Nowhere Inn"})), "ask");
    assert_eq!(
        call("bob", "book", json!({"hotel": "Nowhere Inn"})),
        "allow"
    );
    assert_eq!(read("bob", 20_000_000), "allow");
    assert_eq!(call("bob", "book", json!({"hotel": "Nowhere Inn"})), "ask");
    assert_eq!(call("bob", "ping", json!({})), "allow");
    // A page whose values are all counted apart (600 lines without tokens, 512 kept) overflows
    // the session too when the store has no room for them: unrecorded, they would go unseen.
    *page.lock().unwrap() = (0..600).map(|n| format!("line {n}\n")).collect();
    assert_eq!(call("cy", "read", json!({})), "allow");
    assert_eq!(call("cy", "book", json!({"hotel": "Nowhere Inn"})), "ask");
    // A person's request refused for room names nothing, and overflows the session too: what the
    // person named is unknown, so every rule reads it strictly.
    assert_eq!(
        call("dee", "book", json!({"hotel": "Nowhere Inn"})),
        "allow"
    );
    let dee = Principal::new("dee", ["staff"]);
    // 600 invoice numbers: more values than the room left (497 of the 2,000).
    let request: String = (0..600).map(|n| format!("{}, ", 30_000_000 + n)).collect();
    let recorded = controller
        .record_person_request(Some(&dee), &format!("pay the invoices {request}"))
        .unwrap();
    assert_eq!((recorded.values, recorded.overflowed), (0, true));
    assert_eq!(call("dee", "book", json!({"hotel": "Nowhere Inn"})), "ask");
}
