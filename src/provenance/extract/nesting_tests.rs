//! How deep nested links are read: far enough for any link a page writes, never without end.

use super::{Kind, tokens};

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
