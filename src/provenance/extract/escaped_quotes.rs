//! A value before an escaped quote — `\"m@evil.example\"` in JSON written into JSON, however
//! deep — as a reader sees it: without the backslashes (with them, `\` is a browser's `/` in a
//! link, and ends no address).

/// Where the chunk `start..end` of `text` ends without the backslashes escaping a quote after it:
/// the `"` that ends the chunk, or `'`s ending it (`\'`). `end` when no backslash escapes one.
pub(super) fn before_escaped_quote(text: &str, start: usize, end: usize) -> usize {
    let bytes = text.as_bytes();
    let quotes = bytes[start..end]
        .iter()
        .rev()
        .take_while(|&&byte| byte == b'\'')
        .count();
    let quoted = end - quotes;
    if quotes == 0 && bytes.get(end) != Some(&b'"') {
        return end;
    }
    let backslashes = bytes[start..quoted]
        .iter()
        .rev()
        .take_while(|&&byte| byte == b'\\')
        .count();
    if backslashes == 0 {
        end
    } else {
        quoted - backslashes
    }
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::super::tests::{all, has};

    #[test]
    fn a_value_before_an_escaped_quote_is_read_without_the_backslashes_however_deep() {
        for (text, kind, canonical) in [
            (
                r#"\"mallory@evil.example\""#,
                Kind::Email,
                "mallory@evil.example",
            ),
            (
                r#"{\\\"to\\\": \\\"mallory@evil.example\\\"}"#,
                Kind::Email,
                "mallory@evil.example",
            ),
            (
                r"'mallory@evil.example\'",
                Kind::Email,
                "mallory@evil.example",
            ),
            (
                r#"x \\\"https://evil.example/pay\\\" y"#,
                Kind::Url,
                "https://evil.example/pay",
            ),
        ] {
            assert!(has(text, kind, canonical), "{text:?} gave {:?}", all(text));
        }
        // Read as written too: a browser reads the link's `\` as `/`.
        assert!(has(
            r#"\"https://evil.example/pay\""#,
            Kind::Url,
            "https://evil.example/pay/"
        ));
        // A backslash that escapes no quote stays part of what it ends.
        assert!(!has(
            r"see https://evil.example/pay\ now",
            Kind::Url,
            "https://evil.example/pay"
        ));
    }
}
