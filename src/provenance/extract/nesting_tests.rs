//! How deep nested links are read: far enough for any link a page writes, never without end.

use proptest::prelude::*;

use super::tests::read;
use super::{Kind, Reading, Token, host_of, tokens, whole, without_escaped_slashes};

#[test]
fn values_nested_past_the_deepest_reading_cut_the_reading_not_read_without_end() {
    // Each piece nests the next one reading deeper; 8,000 levels overflowed the stack before.
    for piece in [
        "https://a.example/",
        "https://a.example/?q=",
        "[a](https://a.example/",
        "https:/a.example,",
        "mailto:m@a.example?body=https://a.example/?q=",
    ] {
        // Five levels are read whole (each of these nests the whole rest of its chunk).
        let (reading, shallow) = read(&piece.repeat(5));
        assert_eq!(reading, Reading::Whole, "{piece}: {shallow:?}");
        let (reading, deep) = read(&piece.repeat(8_000));
        assert_eq!(reading, Reading::Cut, "{piece}");
        // The mark where the reader stopped is no value, in any reading.
        assert!(
            deep.iter().all(|(kind, _)| *kind != Kind::Unread),
            "{piece}"
        );
        let text = piece.repeat(8_000);
        for token in [whole(&text), host_of(&text).0].into_iter().flatten() {
            assert_ne!(token.kind, Kind::Unread, "{piece}");
        }
        // A person's request nesting past the deepest reading names what was read, and no mark.
        let request = format!("pay https://named.example/x {}", piece.repeat(200));
        let named = crate::provenance::values_of_person(&request);
        assert!(
            named.iter().all(|token| token.kind != Kind::Unread),
            "{piece}"
        );
        assert!(
            named.iter().any(
                |token| token.kind == Kind::Url && token.canonical == "https://named.example/x"
            ),
            "{piece}"
        );
        // What is within reach is still read — but where each level's slashes are made `//`
        // before its link is read, and the 65th level is reached first.
        assert!(
            piece == "https:/a.example,"
                || deep
                    .iter()
                    .any(|(kind, _)| matches!(kind, Kind::Url | Kind::Email)),
            "{piece}"
        );
    }
}

proptest! {
    /// One pass removes what replacing `\/` by `/` until none is left removes.
    #[test]
    fn escaped_slashes_are_removed_in_one_pass_as_by_replacing_until_none_is_left(
        text in prop::collection::vec(
            prop::sample::select(vec!["\\", "\\\\", "/", "a", "é", "\\/", " "]),
            0..40,
        ).prop_map(|pieces| pieces.concat()),
    ) {
        let mut replaced = text.clone();
        while replaced.contains("\\/") {
            replaced = replaced.replace("\\/", "/");
        }
        prop_assert_eq!(without_escaped_slashes(&text), replaced);
    }
}

#[test]
fn a_run_of_backslashes_before_a_slash_is_read_in_one_pass() {
    // 9,000 backslashes and a slash (9 KB) overflowed a 2 MiB stack, a copy of the text a level.
    let text = format!("{}/ https:\\/\\/evil.example\\/pay", "\\".repeat(200_000));
    let (reading, values) = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || read(&text))
        .expect("spawns")
        .join()
        .expect("no overflow");
    assert_eq!(reading, Reading::Whole);
    assert!(
        values.contains(&(Kind::Url, "https://evil.example/pay".to_owned())),
        "{values:?}"
    );
}

#[test]
fn a_cut_reading_leaves_the_values_listed_before_it_and_keeps_its_own_in_order() {
    // A result's texts share one list: the mark is taken out of this text's values only (going
    // over the whole list for each cut text made a result of many quadratic).
    let before = vec![
        Token::new(Kind::Text, "before".to_owned()),
        Token::new(Kind::Unread, String::new()),
        Token::new(Kind::Url, "https://x.example/".to_owned()),
    ];
    let text = format!(
        "https://kept.example/a {}/ mail@kept.example 12345678",
        "](".repeat(70)
    );
    let mut out = before.clone();
    assert_eq!(tokens(&text, &mut out), Reading::Cut);
    assert_eq!(out[..3], before[..]);
    let mut alone = Vec::new();
    assert_eq!(tokens(&text, &mut alone), Reading::Cut);
    assert_eq!(out[3..], alone[..]);
    assert!(alone.iter().all(|token| token.kind != Kind::Unread));
    let kinds: Vec<Kind> = alone.iter().map(|token| token.kind).collect();
    assert_eq!(
        kinds,
        [Kind::Url, Kind::Host, Kind::Email, Kind::Number],
        "{alone:?}"
    );
}

#[test]
fn what_the_readings_nested_in_a_chunk_list_is_bounded_by_the_chunk() {
    // Each nested level read a copy of the rest of its chunk and listed it: a chunk nesting links
    // to its end listed 64 copies of itself (an 8 MB result held 1.0–1.5 GB). Read within eight
    // times the chunk, it lists at most nine (the chunk's own reading, then the nested ones').
    for piece in [
        "http://",
        "a://",
        "https:/a.example,",
        "[a](https://a.example/",
        "https://a.example/?q=",
    ] {
        let text = piece.repeat(10_000);
        let (reading, values) = read(&text);
        assert_eq!(reading, Reading::Cut, "{piece}");
        let listed: usize = values.iter().map(|(_, value)| value.len()).sum();
        assert!(
            listed <= 9 * text.len() + 256,
            "{piece}: {listed} bytes listed for {}",
            text.len()
        );
    }
}

#[test]
fn a_text_of_more_values_than_are_read_is_cut_and_lists_no_more() {
    // A value a line or a word (`x\n` repeated) held 35 times the text while it was read.
    let most = super::MAX_VALUES_READ;
    let numbers =
        |count: usize| -> String { (0..count).map(|n| format!("{}, ", 1_000_000 + n)).collect() };
    let (reading, values) = read(&numbers(most + 1_000));
    assert_eq!(reading, Reading::Cut);
    assert_eq!(values.len(), most);
    let (reading, values) = read(&numbers(most));
    assert_eq!(reading, Reading::Whole);
    assert_eq!(values.len(), most);
}
