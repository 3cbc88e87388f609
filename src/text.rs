//! Text compared as a person reads it: characters that show nothing, and — with the `unicode`
//! feature — compatibility forms (fullwidth, ligatures, decomposed accents) and case.
//!
//! Two spellings a person cannot tell apart should meet one rule and one counter. What each form
//! covers:
//!
//! | spelling | `"ａｌｉｃｅ@ｅｘａｍｐｌｅ.com"` | `"ali\u{200B}ce@example.com"` | `"Alice@Example.com"` | `"e\u{301}"` / `"é"` |
//! |---|---|---|---|---|
//! | as sent | apart | apart | apart | apart |
//! | [`normalized`] (NFKC, invisible removed, case folded) | same | same | same | same |

#[cfg(feature = "unicode")]
use std::borrow::Cow;

pub(crate) mod references;

/// `text` folded for comparison ignoring case, the one fold toolgate uses everywhere: upper-cased,
/// then lower-cased, which maps every letter with case variants to one form (`ς`, `σ` and `Σ`;
/// `ſ`, `s` and `S`; `ß` and `ss`; the Kelvin sign and `k`; `ı` and `i`) as full case folding does
/// for the letters models write.
pub(crate) fn fold_case(text: &str) -> String {
    text.to_uppercase().to_lowercase()
}

/// `text` — a name or id someone else wrote — quoted for a person to read: cut to `max_chars`
/// characters (saying so with `…`), quotes and backslashes escaped, controls as Rust writes them
/// (`\n`), and every character outside ASCII spelled `\u{…}` — the characters that show
/// nothing, look blank or reorder the text around them (bidi controls, right-to-left letters)
/// are too many to list, and ids are ASCII in practice.
pub(crate) fn quoted_for_person(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars().take(max_chars) {
        if !c.is_ascii() {
            out.extend(c.escape_unicode());
        } else if c == '\'' {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    out.push('"');
    if text.chars().nth(max_chars).is_some() {
        out.push('…');
    }
    out
}

/// Whether `c` may stand between two groups of digits of one number as people write it (a card
/// number, an IBAN, an account number): a space, `-`, a no-break, figure, thin or narrow no-break
/// space, or a dash or minus sign of any kind (U+2010–U+2015, U+2212, U+FE58, U+FE63, U+FF0D).
/// Result rules and provenance read the same groups.
pub(crate) fn separates_digit_groups(c: char) -> bool {
    matches!(
        c,
        ' ' | '-' | '\u{a0}' | '\u{2007}' | '\u{2009}' | '\u{202f}' | '\u{2010}'
            ..='\u{2015}' | '\u{2212}' | '\u{fe58}' | '\u{fe63}' | '\u{ff0d}'
    )
}

/// Whether `c` shows nothing where it stands: a control character, a Unicode
/// `Default_Ignorable_Code_Point` (zero-width spaces and joiners, bidi controls, variation
/// selectors, the soft hyphen, tag characters, …) or a format character (`Cf`: interlinear
/// annotation marks, Arabic number signs, Egyptian hieroglyph format controls, …).
pub(crate) fn is_invisible(c: char) -> bool {
    c.is_control() || is_hidden(c)
}

/// A default-ignorable or format character: removed from text before it is compared.
fn is_hidden(c: char) -> bool {
    is_default_ignorable(c) || is_format(c)
}

/// General category `Cf` (Unicode 15.1's `UnicodeData.txt`); most are default-ignorable too.
fn is_format(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

/// `Default_Ignorable_Code_Point`, from Unicode's `DerivedCoreProperties.txt` (stable since
/// Unicode 6; the bidi controls U+061C, U+200E/F, U+202A–E and U+2066–9 are among them).
fn is_default_ignorable(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// `text` as it is compared when normalization is asked for: invisible characters removed, then
/// NFKC, then case folded as case-insensitive comparison folds it everywhere in toolgate
/// (upper-cased, then lower-cased), then NFKC again (folding can undo a composition). Borrowed
/// when nothing changes (ASCII without capitals, the common case).
#[cfg(feature = "unicode")]
pub(crate) fn normalized(text: &str) -> Cow<'_, str> {
    use unicode_normalization::UnicodeNormalization as _;
    if text
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
    {
        return Cow::Borrowed(text);
    }
    let visible: String = text.chars().filter(|c| !is_hidden(*c)).collect();
    let compatible: String = visible.nfkc().collect();
    let folded = fold_case(&compatible);
    Cow::Owned(folded.nfkc().filter(|c| !is_hidden(*c)).collect())
}

/// `value` with every string value in it [`normalized`]. Object keys are left as sent: two keys
/// that normalize alike would merge into one, and an object with an extra key could then equal
/// a rule's object without it.
#[cfg(feature = "unicode")]
pub(crate) fn normalized_value(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(normalized(text).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(normalized_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), normalized_value(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_name_spells_out_what_shows_nothing_and_is_cut() {
        assert_eq!(quoted_for_person("mail-1", 64), r#""mail-1""#);
        assert_eq!(quoted_for_person("it's", 64), r#""it's""#);
        assert_eq!(
            quoted_for_person("a\u{202e}b\u{200b}c\u{3164}\"\\\n", 64),
            r#""a\u{202e}b\u{200b}c\u{3164}\"\\\n""#
        );
        // Blank-looking and right-to-left characters: spelled out too.
        assert_eq!(
            quoted_for_person("\u{2800}\u{fffc}\u{5d0}é", 64),
            r#""\u{2800}\u{fffc}\u{5d0}\u{e9}""#
        );
        assert_eq!(quoted_for_person("abcdef", 3), "\"abc\"…");
        assert_eq!(quoted_for_person("abc", 3), "\"abc\"");
    }

    #[test]
    fn invisible_characters_are_the_controls_default_ignorables_and_format_characters() {
        for c in [
            '\u{0}',
            '\u{7f}',
            '\u{ad}',
            '\u{200b}',
            '\u{200d}',
            '\u{200e}',
            '\u{202e}',
            '\u{2066}',
            '\u{2069}',
            '\u{feff}',
            '\u{fe0f}',
            '\u{e0041}',
            '\u{061c}',
            '\u{fff9}',
            '\u{fffb}',
            '\u{0600}',
            '\u{06dd}',
            '\u{13430}',
            '\u{110bd}',
        ] {
            assert!(is_invisible(c), "U+{:04X}", u32::from(c));
        }
        for c in [
            'a',
            'é',
            'ａ',
            ' ',
            '_',
            '\u{2070}',
            '\u{1d17b}',
            '\u{fffc}',
            '\u{0606}',
        ] {
            assert!(!is_invisible(c), "U+{:04X}", u32::from(c));
        }
    }

    #[cfg(feature = "unicode")]
    #[test]
    fn one_address_in_every_spelling_normalizes_to_one_text() {
        let plain = "alice@example.com";
        for spelling in [
            "alice@example.com",
            "Alice@Example.COM",
            "ａｌｉｃｅ@ｅｘａｍｐｌｅ.ｃｏｍ",
            "ali\u{200b}ce@exa\u{200d}mple.com",
            "\u{feff}alice@example.com\u{2060}",
            "ＡＬＩＣＥ＠example.com",
        ] {
            assert_eq!(normalized(spelling), plain, "{spelling:?}");
        }
        assert_eq!(normalized("e\u{301}"), normalized("é"));
        assert_eq!(normalized("ÉCOLE"), "école");
        assert_eq!(normalized("ﬁle"), "file");
        assert_ne!(normalized("alice@example.org"), plain);
        assert!(matches!(normalized(plain), Cow::Borrowed(_)));
    }
}
