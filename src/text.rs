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

/// Whether `c` shows nothing where it stands: a control character or a Unicode
/// `Default_Ignorable_Code_Point` (zero-width spaces and joiners, bidi controls, variation
/// selectors, the soft hyphen, tag characters, …).
pub(crate) fn is_invisible(c: char) -> bool {
    c.is_control() || is_default_ignorable(c)
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
    let visible: String = text.chars().filter(|c| !is_default_ignorable(*c)).collect();
    let compatible: String = visible.nfkc().collect();
    let folded = compatible.to_uppercase().to_lowercase();
    Cow::Owned(
        folded
            .nfkc()
            .filter(|c| !is_default_ignorable(*c))
            .collect(),
    )
}

/// `value` with every string in it (object keys too) [`normalized`].
#[cfg(feature = "unicode")]
pub(crate) fn normalized_value(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(normalized(text).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(normalized_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (normalized(key).into_owned(), normalized_value(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_are_the_default_ignorables_and_controls() {
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
            '\u{fff9}',
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
