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

/// A page of `count` distinct long numbers on one line (too long to be a value of its own):
/// `count` values.
fn numbers(count: usize) -> String {
    (0..count)
        .map(|n| format!("{}, ", 20_000_000 + n))
        .collect()
}

/// The memo probe of the test above: allowed unless the session is overflowed.
fn memo(world: &crate::amounts::World) -> &'static str {
    call(
        world,
        "send_money",
        json!({"iban": GYM, "cents": 2000, "memo": "gym, EUR 5"}),
    )
}

#[test]
fn a_result_of_exactly_the_bound_in_values_records_them_one_more_overflows() {
    let bound = toolgate::provenance::MAX_VALUES_PER_RESULT;
    let at_bound = world(MemoryRateCounters::default());
    read_mail(&at_bound, &numbers(bound));
    assert_eq!(memo(&at_bound), "allow");
    let past = world(MemoryRateCounters::default());
    read_mail(&past, &numbers(bound + 1));
    assert_eq!(memo(&past), "ask");
}

#[test]
fn a_value_a_result_carries_many_times_counts_once_against_the_bound() {
    // The bound is on distinct values: the same values repeated past it, in text and as
    // spellings that read alike (`1234-5678` is `12345678`), keep the session within it.
    let bound = toolgate::provenance::MAX_VALUES_PER_RESULT;
    let counters = std::sync::Arc::new(MemoryRateCounters::default());
    let world = world(std::sync::Arc::clone(&counters));
    let repeated: String = (0..3)
        .map(|_| numbers(bound))
        .chain((0..bound).map(|n| {
            let value = 20_000_000 + n;
            format!("{}-{:04}, ", value / 10_000, value % 10_000)
        }))
        .collect();
    read_mail(&world, &repeated);
    // Each value recorded once: as many times held as for the values read once.
    let once = std::sync::Arc::new(MemoryRateCounters::default());
    read_mail(
        &crate::amounts::world(std::sync::Arc::clone(&once)),
        &numbers(bound),
    );
    assert_eq!(counters.held(), once.held());
    assert_eq!(memo(&world), "allow");
}

#[test]
fn a_value_recorded_again_holds_one_time_and_so_does_the_overflow_mark() {
    // Each value's counter, and the overflow mark, replace their time: reading a result again
    // adds one time in all (the session's count of values), however many values it carries.
    let counters = std::sync::Arc::new(MemoryRateCounters::default());
    let world = world(std::sync::Arc::clone(&counters));
    read_mail(&world, &numbers(100));
    let once = counters.held();
    read_mail(&world, &numbers(100));
    assert_eq!(counters.held(), once + 1);
    let past = toolgate::provenance::MAX_VALUES_PER_RESULT + 1;
    read_mail(&world, &numbers(past));
    let overflowed = counters.held();
    read_mail(&world, &numbers(past));
    assert_eq!(counters.held(), overflowed + 1);
    assert_eq!(memo(&world), "ask");
}

#[test]
fn a_request_naming_nothing_marks_nothing_and_a_request_counts_its_values_not_its_kinds() {
    let world = world(MemoryRateCounters::default());
    let empty = world.controller.record_person_request(None, "").unwrap();
    assert_eq!((empty.values, empty.overflowed), (0, false));
    assert_eq!(memo(&world), "allow");
    // One word: one value (the word), beside the marker that some text was named.
    let hello = world
        .controller
        .record_person_request(None, "hello")
        .unwrap();
    assert_eq!(hello.values, 1);
}

/// Whole lines of a result are values up to 200 characters — characters, not bytes.
#[test]
fn a_line_is_a_value_of_its_own_up_to_two_hundred_characters_of_any_width() {
    use toolgate::{
        Outcome, RulePolicy, ToolCall, ToolController, ToolDefinition, ToolError, ToolRegistry,
        ToolSpec,
    };
    let page = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let shown = std::sync::Arc::clone(&page);
    let registry = ToolRegistry::new([
        ToolDefinition::new(
            ToolSpec::new("read_page", "A page.", json!({"type": "object"})),
            move |_: &serde_json::Value| -> Result<String, ToolError> {
                Ok(shown.lock().unwrap().clone())
            },
        )
        .unwrap(),
        ToolDefinition::new(
            ToolSpec::new(
                "note",
                "Keeps a note.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            ),
            |_: &serde_json::Value| -> Result<String, ToolError> { Ok("kept".to_owned()) },
        )
        .unwrap(),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "test"}],
            "flows": [{"id": "from-pages", "tool": "note", "action": "ask", "reason": "a page's line",
                       "provenance": {"pointer": "/text", "seen_in": ["untrusted"]}}]}"#,
        &registry,
    )
    .unwrap();
    let controller = ToolController::try_new(registry, policy).unwrap();
    let seen = |line: &str| {
        *page.lock().unwrap() = format!("intro\n{line}\noutro");
        let read = controller.handle(ToolCall::new("r", "read_page", json!({})));
        assert!(matches!(read, Outcome::Completed(_)));
        let noted = controller.handle(ToolCall::new("n", "note", json!({"text": line})));
        matches!(noted, Outcome::PendingApproval(_))
    };
    // 200 and 150 characters of two bytes each (400 and 300 bytes): values of their own.
    assert!(seen(&"é".repeat(200)));
    assert!(seen(&"ü".repeat(150)));
    // 201 characters, ASCII or not, and 300 ASCII ones: not.
    assert!(!seen(&"a".repeat(201)));
    assert!(!seen(&"ö".repeat(201)));
    assert!(!seen(&"b".repeat(300)));
    assert!(seen(&"c".repeat(200)));
}

#[test]
fn past_the_bound_the_values_kept_are_the_first_in_their_order_whatever_the_key() {
    // A result of as many addresses as long numbers, together past the bound: as many as the
    // bound are kept, the first in the values' own order (addresses before numbers, numbers in
    // order), the same under any key — or a payment asked in one process would run in the next,
    // under a new random key.
    let each = toolgate::provenance::MAX_VALUES_PER_RESULT * 3 / 5;
    use toolgate::provenance::ProvenanceKey;
    use toolgate::*;
    let page: String = (0..each)
        .map(|n| format!("a{n}@x.example, {}, ", 30_000_000 + n))
        .collect();
    let allowed_under = |key: [u8; 32]| {
        let page = page.clone();
        let read = move |_: &serde_json::Value| -> Result<String, ToolError> { Ok(page.clone()) };
        let noop = |_: &serde_json::Value| -> Result<String, ToolError> { Ok(String::new()) };
        let to = json!({"type": "object", "properties": {"to": {"type": "string"}}});
        let registry = ToolRegistry::new([
            ToolDefinition::new(ToolSpec::new("read", "r", json!({"type": "object"})), read)
                .unwrap(),
            ToolDefinition::new(ToolSpec::new("pay", "p", to), noop).unwrap(),
        ])
        .unwrap();
        let policy = RulePolicy::from_json(
            r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
                "flows": [{"id": "unseen", "tool": "pay", "action": "ask", "reason": "r",
                           "provenance": {"pointer": "/to", "not_seen_in": ["untrusted"]}}]}"#,
            &registry,
        )
        .unwrap();
        let controller = ToolController::try_new(registry, policy)
            .unwrap()
            .with_provenance_key(ProvenanceKey::new(key));
        let read = controller.handle(ToolCall::new("r", "read", json!({})));
        assert!(matches!(read, Outcome::Completed(ref result) if !result.is_error));
        let runs = |to: String| {
            matches!(
                controller.handle(ToolCall::new("p", "pay", json!({ "to": to }))),
                Outcome::Completed(_)
            )
        };
        let addresses: Vec<bool> = (0..each).map(|n| runs(format!("a{n}@x.example"))).collect();
        let numbers: Vec<bool> = (0..each)
            .map(|n| runs((30_000_000 + n).to_string()))
            .collect();
        (addresses, numbers)
    };
    let (addresses, numbers) = allowed_under([1; 32]);
    assert!(addresses.iter().all(|&ran| ran), "every address was kept");
    let kept = numbers.iter().take_while(|&&ran| ran).count();
    assert!(kept < each, "the bound was passed");
    assert!(
        numbers[kept..].iter().all(|&ran| !ran),
        "the first {kept} numbers were kept"
    );
    for key in [[2; 32], [77; 32], [200; 32]] {
        assert_eq!(allowed_under(key), (addresses.clone(), numbers.clone()));
    }
}

#[test]
fn a_result_nesting_links_deeper_than_they_are_read_overflows_its_session() {
    // A link inside a link inside a link … (a redirector's `?q=`, a Markdown target, a link
    // glued to the next): read 64 levels deep, the nested readings of a chunk within eight times
    // the chunk, then the session overflows rather than the stack or the memory.
    for piece in [
        "https://a.example/",
        "https://a.example/?q=",
        "[a](https://a.example/",
        "https:/a.example,",
    ] {
        let shallow = world(MemoryRateCounters::default());
        read_mail(&shallow, &piece.repeat(5));
        assert_eq!(memo(&shallow), "allow", "{piece} 5 deep is read whole");
        let deep = world(MemoryRateCounters::default());
        read_mail(&deep, &piece.repeat(8_000));
        assert_eq!(memo(&deep), "ask", "{piece} 8,000 deep overflows");
    }
}

#[test]
fn a_result_of_more_values_than_are_read_overflows_its_session_however_few_are_distinct() {
    // Each line is a value of its own (counted apart from a result's bound, but read all the
    // same): a result is read for at most 65,536 values (what reading a value a line held was 35
    // times the text); past that the reading stops and the session overflows, failing closed as
    // past the bound on distinct values.
    let lines = |count: usize| "same value\n".repeat(count);
    let within = world(MemoryRateCounters::default());
    read_mail(&within, &lines(60_000));
    assert_eq!(memo(&within), "allow");
    let past = world(MemoryRateCounters::default());
    read_mail(&past, &lines(70_000));
    assert_eq!(memo(&past), "ask");
}
