use proptest::prelude::*;

use super::*;

fn decodes(text: &str) -> String {
    decoded(text).unwrap_or_else(|| text.to_owned())
}

#[test]
fn html_references_are_decoded_as_a_browser_shows_them() {
    for (text, shown) in [
        ("eve&#64;evil&#46;example", "eve@evil.example"),
        ("eve&#x40;evil&#X2E;example", "eve@evil.example"),
        ("eve&commat;evil&period;example", "eve@evil.example"),
        ("https&colon;&sol;&sol;evil.example", "https://evil.example"),
        ("a=1&amp;b=2", "a=1&b=2"),
        ("a=1&ampb=2", "a=1&b=2"),
        ("DE89&nbsp;3704&nbsp;0044", "DE89\u{a0}3704\u{a0}0044"),
        ("4111&nbsp4111", "4111\u{a0}4111"),
        ("&lt;https://evil.example/&gt;", "<https://evil.example/>"),
        // The `;` of a numeric reference may be left out; leading zeros are digits.
        ("evil&#46example", "evil.example"),
        ("evil&#0000046;example", "evil.example"),
        // 128–159 are Windows-1252's, as browsers show them.
        ("4111&#150;1111", "4111–1111"),
        ("&#128;5", "€5"),
        // Values no character has are U+FFFD.
        (
            "a&#0;b&#xD800;c&#99999999999;d",
            "a\u{fffd}b\u{fffd}c\u{fffd}d",
        ),
        ("line&NewLine;next&Tab;col", "line\nnext\tcol"),
        ("a&zwj;b&shy;c", "a\u{200d}b\u{ad}c"),
        // HTML's legacy names need no `;`; some names stand for two characters.
        ("a&shyb&curren5", "a\u{ad}b¤5"),
        (
            "a&ThickSpace;b&NegativeVeryThinSpace;c&ApplyFunction;d",
            "a\u{205f}\u{200a}b\u{200b}c\u{2061}d",
        ),
    ] {
        assert_eq!(decodes(text), shown, "{text:?}");
    }
}

#[test]
fn escapes_are_decoded_as_a_json_javascript_or_python_reader_reads_them() {
    for (text, read) in [
        (
            r"pay https://evil.example/pay\nThanks",
            "pay https://evil.example/pay\nThanks",
        ),
        (r"m\u00fcller@corp.example", "müller@corp.example"),
        (r"DE89\u00a03704", "DE89\u{a0}3704"),
        (r"eve\x40evil.example", "eve@evil.example"),
        (r"\ud83d\ude00 \u{1F600}", "😀 😀"),
        (r#"\"quoted\" \/path\\x"#, r#""quoted" /path\x"#),
        // A lone surrogate is U+FFFD.
        (r"a\ud83db", "a\u{fffd}b"),
        // An escaped backslash ends there: what follows is text.
        (r"C:\\new", r"C:\new"),
        // Python's eight hex digits and octal; JavaScript's code point with leading zeros.
        (r"eve\U00000040evil", "eve@evil"),
        (r"eve\100evil \0 \1x", "eve@evil \u{0} \u{1}x"),
        (r"eve\u{0000040}evil \u{0}", "eve@evil \u{0}"),
        (r"\u{110000}", "\u{fffd}"),
        (r"\u{100000041}", "\u{fffd}"),
        // Every one-character escape; a `\U` escape anywhere; sixteen digits in braces.
        (r"a\rb\tc\bd\fe\'f", "a\rb\tc\u{8}d\u{c}e'f"),
        (r"\U0001F600 a\U0001F600", "😀 a😀"),
        (r"\u{0000000000000040}", "@"),
    ] {
        assert_eq!(decodes(text), read, "{text:?}");
    }
}

#[test]
fn what_no_reader_decodes_is_left_as_written() {
    for text in [
        "plain text",
        "AT&T and R&D",
        "&unknownname; &#; &#x; &#xG; & ;",
        r"\q \u12 \x4 \u{} \u{12345678901234567} \U0040 trailing\",
        "&ltimes",
    ] {
        let expected = if text == "&ltimes" { "<imes" } else { text };
        assert_eq!(decodes(text), expected, "{text:?}");
    }
    assert_eq!(decoded("AT&T"), None);
    assert_eq!(decoded("no reference"), None);
}

#[test]
fn each_decoding_decodes_once_and_a_text_is_decoded_again_up_to_four_times() {
    assert_eq!(decodes("&amp;#64;"), "&#64;");
    assert_eq!(decodes(r"\\u0040"), r"\u0040");
    assert_eq!(decodes(r"\u0026#64;"), "&#64;");
    assert_eq!(decodings("&amp;#64;"), ["&#64;", "@"]);
    assert_eq!(decodings("plain"), Vec::<String>::new());
    // Five levels of JSON escaping: four are read through.
    let mut text = "@".to_owned();
    for _ in 0..5 {
        text = serde_json::to_string(&text)
            .unwrap()
            .replace('@', "\\u0040");
    }
    let rounds = decodings(&text);
    assert_eq!(rounds.len(), MOST_ROUNDS);
    assert!(!rounds.last().unwrap().contains('@'));
    assert!(decodings(&rounds[0]).last().unwrap().contains('@'));
}

#[test]
fn the_named_references_are_sorted_and_none_is_longer_than_the_longest() {
    assert!(NAMED.windows(2).all(|pair| pair[0].0 < pair[1].0));
    assert_eq!(
        NAMED.iter().map(|(name, _)| name.len()).max(),
        Some(LONGEST_NAME)
    );
    // Every name is decoded to its character.
    for (name, c) in NAMED {
        assert_eq!(decodes(&format!("a&{name};b")), format!("a{c}b"), "{name}");
    }
}

proptest! {
    /// No decoded text is longer than the text, and every text decodes without a panic.
    #[test]
    fn a_decoded_text_is_never_longer(text in r"([&#;\\ux{}xX0-9a-fA-FDdnmpsbtlg]|&#[0-9]{1,12};?|&#x[0-9a-fA-F]{1,9};?|\\u[0-9a-fA-F]{4}|&[a-zA-Z]{1,20};?|.){0,64}") {
        if let Some(out) = decoded(&text) {
            prop_assert!(out.len() <= text.len(), "{text:?} -> {out:?}");
        }
    }
}

proptest! {
    /// The pre-check finds `&` or `\` wherever it stands: in a block of 64 bytes or in the rest.
    #[test]
    fn the_pre_check_finds_every_byte_a_reference_starts_with(
        text in r"[a-z é]{0,150}[&\\]?[a-z é]{0,100}",
    ) {
        prop_assert_eq!(
            may_hold_references(&text),
            text.contains('&') || text.contains('\\')
        );
    }
}

proptest! {
    /// One pass finds both a reference's first byte and a quote, wherever each stands: in the
    /// same block of 64 bytes or another, before or after the other, in the rest.
    #[test]
    fn the_starts_are_each_found_in_one_pass(
        text in r#"[a-z é]{0,150}[&\\"]?[a-z é]{0,100}[&\\"]?[a-z é]{0,60}"#,
    ) {
        prop_assert_eq!(
            starts(&text),
            Starts {
                references: text.contains('&') || text.contains('\\'),
                quotes: text.contains('"'),
            }
        );
    }
}
