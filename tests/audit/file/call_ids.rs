//! Long call ids are bounded in audit events without becoming look-alikes: a cut id keeps a
//! prefix and the digest of the whole id; ids within the bound are recorded as they are.

use super::*;

/// The call id the audit log records for a call with this id.
fn audited_call_id(id: &str) -> String {
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = audited(&Arc::default(), sink.clone());
    let _ = controller.handle(ToolCall::new(id, "calculator", json!({"a": 1, "b": 2})));
    let events = sink.events();
    assert_eq!(events.len(), 3);
    assert!(
        events
            .iter()
            .all(|event| event.call_id == events[0].call_id)
    );
    events[0].call_id.clone()
}

#[test]
fn long_ids_differing_only_in_the_last_char_get_different_audit_ids() {
    let prefix = "c".repeat(10 * 1024 - 1);
    let a = audited_call_id(&format!("{prefix}a"));
    let b = audited_call_id(&format!("{prefix}b"));
    assert_ne!(a, b);
    for id in [&a, &b] {
        assert_eq!(id.chars().count(), 128, "{id}");
        assert!(id.starts_with(&"c".repeat(56)), "{id}");
        assert!(id[56..].starts_with("…sha256:"), "{id}");
    }
}

#[test]
fn long_ids_sharing_a_prefix_at_many_lengths_stay_distinct() {
    let mut seen = std::collections::HashSet::new();
    for length in [129, 130, 200, 1_000, 10_240, 100_000] {
        for last in ['a', 'b', '…', '"'] {
            let id = format!("{}{last}", "x".repeat(length - 1));
            assert!(seen.insert(audited_call_id(&id)), "{length} {last:?}");
        }
    }
}

#[test]
fn ids_within_the_bound_are_recorded_unchanged() {
    for id in [
        "call_1",
        "toolu_01A09q90qw90lq917835lq9",
        &"k".repeat(128),
        "a b-c_d.e:f/g",
    ] {
        assert_eq!(audited_call_id(id), id);
    }
}

#[test]
fn a_short_id_spelling_a_cut_form_does_not_pose_as_the_long_id() {
    let long = format!("{}z", "y".repeat(5_000));
    let cut = audited_call_id(&long);
    assert!(cut.contains('…'));
    let forged = audited_call_id(&cut);
    assert_ne!(forged, cut, "the forged mark is escaped");
    assert!(forged.contains("\\u{2026}"), "{forged}");
}

#[test]
fn ids_with_quotes_or_control_characters_are_escaped_and_stay_distinct() {
    let quoted = audited_call_id("a\"b");
    let newline = audited_call_id("a\nb");
    assert_eq!(quoted, "a\\\"b");
    assert_eq!(newline, "a\\nb");
    assert_ne!(
        audited_call_id("a\\nb"),
        newline,
        "a backslash and n is not a newline"
    );
}
