//! How deep nested links are read: far enough for any link a page writes, never without end.

use proptest::prelude::*;

use super::{Kind, tokens, without_escaped_slashes};

fn all(text: &str) -> Vec<(Kind, String)> {
    let mut out = Vec::new();
    tokens(text, &mut out);
    out.into_iter()
        .map(|token| (token.kind, token.canonical))
        .collect()
}

#[test]
fn values_nested_past_the_deepest_reading_are_marked_unread_not_read_without_end() {
    // Each piece nests the next one reading deeper; 8,000 levels overflowed the stack before.
    for piece in [
        "https://a.example/",
        "https://a.example/?q=",
        "[a](https://a.example/",
        "https:/a.example,",
        "mailto:m@a.example?body=https://a.example/?q=",
    ] {
        let shallow = all(&piece.repeat(20));
        assert!(
            !shallow.iter().any(|(kind, _)| *kind == Kind::Unread),
            "{piece}: {shallow:?}"
        );
        let deep = all(&piece.repeat(8_000));
        let unread = deep
            .iter()
            .filter(|(kind, _)| *kind == Kind::Unread)
            .count();
        assert_eq!(unread, 1, "{piece}");
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
    let read = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || all(&text))
        .expect("spawns")
        .join()
        .expect("no overflow");
    assert!(
        read.contains(&(Kind::Url, "https://evil.example/pay".to_owned())),
        "{read:?}"
    );
}
