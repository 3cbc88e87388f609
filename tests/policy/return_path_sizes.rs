//! The second attack (6 December 2026, later): sizes that made result rules quadratic. Each test
//! holds what the fix must keep; at these sizes the old code took tens of seconds in a debug build.

use super::*;

const IDS: &str = r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
  "results": [{"id": "ids", "tool": "fetch", "pattern": "id[0-9]+", "action": "redact",
               "reason": "ids stay inside"}]}"#;

#[test]
fn thousands_of_keys_redacted_alike_are_each_numbered_once_and_no_value_is_lost() {
    // Every key becomes the same marker: each later one took the next free number by trying
    // every number from 2 again (16,000 keys: 18 s).
    const KEYS: usize = 20_000;
    let held: Output = Arc::default();
    let controller = controller(IDS, &held);
    let keys: Map<String, Value> = (0..KEYS).map(|n| (format!("id{n}"), json!(n))).collect();
    *held.lock().unwrap() = with_structured(Value::Object(keys));
    let result = completed(run(&controller, "fetch", json!({})));
    let Some(Value::Object(shown)) = result.structured else {
        panic!("{}", result.content)
    };
    let marker = r#"[redacted by result rule "ids"]"#;
    assert_eq!(shown.len(), KEYS);
    assert!(shown.contains_key(marker));
    for number in 2..=KEYS {
        let name = format!("{marker} ({number})");
        assert!(shown.contains_key(&name), "{name}");
    }
    let mut values: Vec<u64> = shown.values().filter_map(Value::as_u64).collect();
    values.sort_unstable();
    assert!(values.iter().copied().eq(0..KEYS as u64));
}

#[test]
fn a_key_already_named_like_a_numbered_marker_keeps_its_value_and_the_marker_moves_on() {
    // A key spelled as the second marker holds that name: the rewritten keys skip it.
    let held: Output = Arc::default();
    let controller = controller(IDS, &held);
    let marker = r#"[redacted by result rule "ids"]"#;
    *held.lock().unwrap() = with_structured(json!({
        "id1": "one", format!("{marker} (2)"): "kept", "id2": "two", "id3": "three"
    }));
    let result = completed(run(&controller, "fetch", json!({})));
    let shown = result.structured.unwrap();
    assert_eq!(shown[format!("{marker} (2)")], "kept", "{shown}");
    let mut moved: Vec<&str> = [
        marker.to_owned(),
        format!("{marker} (3)"),
        format!("{marker} (4)"),
    ]
    .iter()
    .map(|name| {
        shown[name]
            .as_str()
            .unwrap_or_else(|| panic!("{name} in {shown}"))
    })
    .collect();
    moved.sort_unstable();
    assert_eq!(moved, ["one", "three", "two"]);
}

#[test]
fn a_match_in_each_of_many_blocks_is_redacted_in_its_block() {
    // Each match's block was looked for from the first block (160,000 blocks: 3 s; a
    // tool's output holds 1 MiB, about 30,000 such blocks).
    const BLOCKS: usize = 25_000;
    let held: Output = Arc::default();
    let controller = controller(IDS, &held);
    // Each match inside its block, not the whole of it.
    let blocks = (0..BLOCKS).map(|n| text(&format!("a id{n} b"))).collect();
    *held.lock().unwrap() = ToolOutput::new(blocks);
    let result = completed(run(&controller, "fetch", json!({})));
    assert!(!result.is_error, "{}", result.content);
    let blocks = result.blocks.expect("blocks").content;
    assert_eq!(blocks.len(), BLOCKS);
    assert!(
        blocks
            .iter()
            .all(|block| block["text"] == r#"a [redacted by result rule "ids"] b"#),
        "{:?}",
        blocks
            .iter()
            .find(|block| block["text"] != r#"a [redacted by result rule "ids"] b"#)
    );
}

#[test]
fn many_cut_texts_after_many_values_overflow_the_session() {
    // Each text nesting links past the deepest reading went over every value listed before
    // it, from the result's other texts (1 MB: 1.2 s).
    let never_returned = json!({"iban": "GB82WEST12345698765432"});
    for cut_texts in [0, 4_000] {
        let held: Output = Arc::default();
        let controller = controller(&untrusted_policy("pay", "/iban", "value"), &held);
        // Fewer values than a result may hold: only a cut text overflows the session.
        let mut items: Vec<Value> = (0..400).map(|n| json!(format!("DE{n:020}"))).collect();
        let cut = format!("{}/", "](".repeat(70));
        items.extend(std::iter::repeat_n(json!(cut), cut_texts));
        items.push(json!(IBAN));
        *held.lock().unwrap() = with_structured(json!({ "items": items }));
        completed(run(&controller, "fetch", json!({})));
        // Overflowed, any value counts as seen in untrusted results, even one never returned.
        let expected = if cut_texts == 0 { "allow" } else { "ask" };
        assert_eq!(
            word(&run(&controller, "pay", never_returned.clone())),
            expected
        );
        assert_eq!(
            word(&run(&controller, "pay", json!({"iban": IBAN_COMPACT}))),
            "ask"
        );
    }
}

#[test]
fn many_texts_past_the_values_read_overflow_the_session_however_few_are_distinct() {
    // A result's texts together are read for 65,536 values: past that, reading stops and the
    // session overflows — texts of short values (each a value whole) or of long lines of them.
    let never_returned = json!({"iban": "GB82WEST12345698765432"});
    let long_line = "1000000, ".repeat(40);
    for (text, count, expected) in [
        ("same", 60_000, "allow"),
        ("same", 70_000, "ask"),
        (long_line.as_str(), 1_500, "allow"),
        (long_line.as_str(), 2_000, "ask"),
    ] {
        let held: Output = Arc::default();
        let controller = controller(&untrusted_policy("pay", "/iban", "value"), &held);
        let items = vec![json!(text); count];
        *held.lock().unwrap() = with_structured(json!({ "items": items }));
        completed(run(&controller, "fetch", json!({})));
        let decided = word(&run(&controller, "pay", never_returned.clone()));
        assert_eq!(decided, expected, "{count} texts of {} bytes", text.len());
    }
}

#[test]
fn a_match_starting_where_a_block_ends_is_split_across_blocks() {
    // The line between two blocks belongs to neither: a match starting on it and running into
    // the next block is no block's own, so redacting each block alone would miss it.
    let policy = r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
      "results": [{"id": "ids-on-a-line", "tool": "fetch", "pattern": "\\nid[0-9]+",
                   "action": "redact", "reason": "ids stay inside"}]}"#;
    let held: Output = Arc::default();
    let controller = controller(policy, &held);
    *held.lock().unwrap() = ToolOutput::new(vec![text("first"), text("id1 second")]);
    let result = completed(run(&controller, "fetch", json!({})));
    assert!(result.is_error, "{}", everything(&result));
    assert!(
        result.content.contains("ids-on-a-line"),
        "{}",
        result.content
    );
}
