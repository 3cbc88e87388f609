//! Long numbers and IBANs, read from the digits a scan of the text finds.

use super::{Kind, Token};

/// Where the number scan stands: the first byte it has not read.
#[derive(Debug, Default)]
pub(super) struct NumberScan {
    at: usize,
}

impl NumberScan {
    /// The first byte not read yet: a digit before it starts nothing in this scan.
    pub(super) fn read_to(&self) -> usize {
        self.at
    }

    /// Reads the long number (6 digits or more; a `.` or a character that separates digit
    /// groups between groups dropped, see [`crate::text::separates_digit_groups`]) or IBAN
    /// (check digits holding) that the digit at `digit` may start or be the check digits of;
    /// called for digits in order. Read as bytes: every character either takes part in is ASCII
    /// but the separators between groups, and any other character (an accented letter) ends a
    /// word.
    ///
    /// A number starts at a digit that starts a word; an IBAN at a word's first letter, two
    /// before its first digit. No other digit of a word starts anything, so a digit that starts
    /// neither moves the scan past its word.
    pub(super) fn at_digit(&mut self, bytes: &[u8], digit: usize, out: &mut Vec<Token>) {
        if digit < self.at {
            return;
        }
        let mut word = digit;
        while word > 0 && bytes[word - 1].is_ascii_alphanumeric() {
            word -= 1;
        }
        if word == digit {
            self.at = number_at(bytes, digit, out);
            return;
        }
        // An IBAN starts two letters before its first digit, at a word's start or glued to the
        // end of one (`IBANDE89…`, `xGB29…`: an independent attack found those unread).
        let start = digit.saturating_sub(2);
        if word + 2 <= digit
            && start >= self.at
            && bytes[start].is_ascii_alphabetic()
            && bytes[start + 1].is_ascii_alphabetic()
            && let Some((iban, used)) = iban_at(&bytes[start..])
        {
            out.push(Token::new(Kind::Iban, iban));
            self.at = start + used;
            return;
        }
        let mut end = digit;
        while end < bytes.len() && bytes[end].is_ascii_alphanumeric() {
            end += 1;
        }
        self.at = end;
    }
}

/// The long number starting at the word-starting digit `at`, if it is one; where it ends.
fn number_at(bytes: &[u8], at: usize, out: &mut Vec<Token>) -> usize {
    // Counted first, the digits copied only for a long number: most numbers in prose are short.
    let mut digits = 0;
    let mut end = at;
    let mut cursor = at;
    while cursor < bytes.len() {
        let here = bytes[cursor];
        if here.is_ascii_digit() {
            digits += 1;
            cursor += 1;
            end = cursor;
        } else if let Some(skipped) = one_between_digits(&bytes[cursor..])
            && bytes.get(cursor + skipped).is_some_and(u8::is_ascii_digit)
        {
            cursor += skipped;
        } else {
            break;
        }
    }
    let word_end = bytes
        .get(end)
        .is_none_or(|next| !next.is_ascii_alphanumeric());
    if digits >= 6 && word_end {
        // Sized at once: a digit at a time, the string grew twice for a long number.
        let mut digits = String::with_capacity(end - at);
        digits.extend(
            bytes[at..end]
                .iter()
                .filter(|byte| byte.is_ascii_digit())
                .map(|&byte| char::from(byte)),
        );
        out.push(Token::new(Kind::Number, digits));
    }
    end.max(at + 1)
}

/// The IBAN starting at `bytes` (country letters, check digits, then letters and digits,
/// optionally in groups: see [`between_groups`]) and how many bytes it used, if its check
/// digits hold (ISO 13616 MOD 97-10).
fn iban_at(bytes: &[u8]) -> Option<(String, usize)> {
    let head = bytes.get(..4)?;
    if !(head[0].is_ascii_alphabetic()
        && head[1].is_ascii_alphabetic()
        && head[2].is_ascii_digit()
        && head[3].is_ascii_digit())
    {
        return None;
    }
    // At most 34 characters (the longest IBAN), kept on the stack.
    let mut compact = [0_u8; 34];
    let mut ends = [0_usize; 34];
    let mut length = 0;
    let mut cursor = 0;
    while cursor < bytes.len() && length < compact.len() {
        let byte = bytes[cursor];
        if byte.is_ascii_alphanumeric() {
            compact[length] = byte.to_ascii_uppercase();
            cursor += 1;
            ends[length] = cursor;
            length += 1;
        } else {
            match between_groups(&bytes[cursor..]) {
                Some(skipped)
                    if bytes
                        .get(cursor + skipped)
                        .is_some_and(u8::is_ascii_alphanumeric) =>
                {
                    cursor += skipped;
                }
                _ => break,
            }
        }
    }
    // The longest prefix that is a whole IBAN: a word after it may have been taken in. One glued
    // to the word after it (`…013000BIC:`, an HTML table turned into text) is read when it is
    // as long as its country's IBANs are: its check digits alone would let one in 97 prefixes
    // of a longer word through.
    // A country whose IBANs' length is known is read at that length only, glued to a word after
    // it or not: the longest prefix whose check digits hold took words after an IBAN in (`DE89
    // … 00 215 EUR due` read as a 31-character IBAN, the real one unrecorded: a third attack).
    let country_length = iban_length([compact[0], compact[1]]);
    (15..=length).rev().find_map(|length| {
        let ends_a_word = bytes
            .get(ends[length - 1])
            .is_none_or(|next| !next.is_ascii_alphanumeric());
        let fits = match country_length {
            Some(wanted) => wanted == length,
            None => ends_a_word,
        };
        if !fits {
            return None;
        }
        let candidate = std::str::from_utf8(&compact[..length]).ok()?;
        iban_checks(candidate).then(|| (candidate.to_owned(), ends[length - 1]))
    })
}

/// How many bytes at the start of `bytes` stand between two groups of an IBAN: up to three tabs
/// or characters that separate digit groups (see [`crate::text::separates_digit_groups`]:
/// `DE89 – 3704` as `DE89 3704`), then perhaps a line break (`\n`, `\r\n`, `\r`, NEL, U+2028
/// or U+2029) and after it up to sixteen spaces, tabs or `>` and eight separators — an IBAN
/// wrapped as mail wraps it: a space before the break (format=flowed, RFC 3676), a dash, an
/// indented or reply-quoted continuation (independent attacks found those unread).
fn between_groups(bytes: &[u8]) -> Option<usize> {
    let mut length = separators(bytes, 3);
    let line_break = match &bytes[length..] {
        [b'\r', b'\n', ..] => 2,
        [b'\n' | b'\r', ..] => 1,
        // NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR.
        [0xC2, 0x85, ..] => 2,
        [0xE2, 0x80, 0xA8 | 0xA9, ..] => 3,
        _ => 0,
    };
    if line_break > 0 {
        length += line_break;
        // An indent, and the `>` a reply quotes each line with.
        let quoted = bytes[length..]
            .iter()
            .take(16)
            .take_while(|&&byte| matches!(byte, b'>' | b' ' | b'\t'))
            .count();
        length += quoted;
        length += separators(&bytes[length..], 8);
    }
    (length > 0).then_some(length)
}

/// How many bytes at the start of `bytes` are at most `most` tabs or characters that separate
/// digit groups.
fn separators(bytes: &[u8], most: usize) -> usize {
    let mut length = 0;
    for _ in 0..most {
        let one = match &bytes[length..] {
            [b'\t', ..] => Some(1),
            rest => one_between(rest),
        };
        match one {
            Some(one) => length += one,
            None => break,
        }
    }
    length
}

/// The bytes of one character starting `bytes` that separates digit groups (see
/// [`crate::text::separates_digit_groups`]); read as bytes, a character past ASCII decoded only
/// where one starts.
#[inline]
fn one_between(bytes: &[u8]) -> Option<usize> {
    let width = match *bytes.first()? {
        b' ' | b'-' => return Some(1),
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => return None,
    };
    let c = std::str::from_utf8(bytes.get(..width)?)
        .ok()?
        .chars()
        .next()?;
    crate::text::separates_digit_groups(c).then_some(width)
}

/// The bytes of what may stand between two digit groups of a long number starting `bytes`: one
/// `.` or character that separates digit groups (not a tab: columns of a table are other
/// numbers).
#[inline]
fn one_between_digits(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [b'.', ..] => Some(1),
        _ => one_between(bytes),
    }
}

/// A JSON number as the text its values are read from: a whole number written as a float
/// (`12345678.0`, `1.2345678e7`) as the whole number it is. As written, `12345678.0` read as the
/// long number `123456780` (one `.` between digit groups is dropped), so it met a result's
/// `123456780` and missed its `12345678` (an independent attack).
pub(crate) fn number_text(number: &serde_json::Number) -> String {
    // Below 2^53 every whole float is exactly the integer it prints as.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match number.as_f64() {
        Some(float) if number.is_f64() && float.fract() == 0.0 && float.abs() < EXACT => {
            #[allow(clippy::cast_possible_truncation)]
            let whole = float as i64;
            whole.to_string()
        }
        _ => number.to_string(),
    }
}

/// How many characters the IBANs of a country hold (the IBAN registry's, and the countries
/// whose banks issue IBANs outside it); `None` for a country that issues none.
pub(crate) fn iban_length(country: [u8; 2]) -> Option<usize> {
    let length = match &country {
        b"NO" => 15,
        b"BE" => 16,
        b"DK" | b"FI" | b"FK" | b"FO" | b"GL" | b"NL" | b"SD" => 18,
        b"MK" | b"SI" => 19,
        b"AT" | b"BA" | b"EE" | b"KZ" | b"LT" | b"LU" | b"MN" | b"XK" => 20,
        b"CH" | b"HR" | b"LI" | b"LV" => 21,
        b"BG" | b"BH" | b"CR" | b"DE" | b"GB" | b"GE" | b"IE" | b"ME" | b"RS" | b"VA" => 22,
        b"AE" | b"GI" | b"IL" | b"IQ" | b"OM" | b"SO" | b"TL" => 23,
        b"AD" | b"CZ" | b"ES" | b"MD" | b"PK" | b"RO" | b"SA" | b"SE" | b"SK" | b"TN" | b"VG" => 24,
        b"AO" | b"CV" | b"GW" | b"LY" | b"MZ" | b"PT" | b"ST" => 25,
        b"DZ" | b"IR" | b"IS" | b"TR" => 26,
        b"BI" | b"CF" | b"CG" | b"CM" | b"DJ" | b"FR" | b"GA" | b"GQ" | b"GR" | b"IT" | b"KM"
        | b"MC" | b"MG" | b"MR" | b"SM" | b"TD" => 27,
        b"AL" | b"AZ" | b"BF" | b"BJ" | b"BY" | b"CI" | b"CY" | b"DO" | b"GT" | b"HN" | b"HU"
        | b"LB" | b"MA" | b"ML" | b"NE" | b"NI" | b"PL" | b"SN" | b"SV" | b"TG" => 28,
        b"BR" | b"EG" | b"PS" | b"QA" | b"UA" => 29,
        b"JO" | b"KW" | b"MU" | b"YE" => 30,
        b"MT" | b"SC" => 31,
        b"LC" => 32,
        b"RU" => 33,
        _ => return None,
    };
    Some(length)
}

pub(crate) fn iban_checks(iban: &str) -> bool {
    let bytes = iban.as_bytes();
    if bytes.len() < 4 {
        return false;
    }
    let rearranged = bytes[4..].iter().chain(&bytes[..4]);
    // Fast path: the remainder is taken once per 7 characters, not once per character. Below
    // 97 · 100⁷ + 100⁷ < 2⁶⁴ after any 7 steps of `· 100 + 35` from a remainder under 97.
    let mut remainder: u64 = 0;
    for (at, &byte) in rearranged.enumerate() {
        remainder = match byte {
            b'0'..=b'9' => remainder * 10 + u64::from(byte - b'0'),
            b'A'..=b'Z' => remainder * 100 + u64::from(byte - b'A' + 10),
            b'a'..=b'z' => remainder * 100 + u64::from(byte - b'a' + 10),
            _ => return false,
        };
        if at % 7 == 6 {
            remainder %= 97;
        }
    }
    remainder % 97 == 1
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, tokens};

    fn read(text: &str, kind: Kind) -> Vec<String> {
        let mut out = Vec::new();
        let _ = tokens(text, &mut out);
        out.into_iter()
            .filter(|token| token.kind == kind)
            .map(|token| token.canonical)
            .collect()
    }

    #[test]
    fn groups_joined_by_any_dash_or_a_no_break_space_are_one_iban_or_number() {
        let iban = "DE89370400440532013000";
        for text in [
            "pay DE89\u{2013}3704\u{2013}0044\u{2013}0532\u{2013}0130\u{2013}00 now",
            "pay DE89 - 3704 - 0044 - 0532 - 0130 - 00 now",
            "pay DE89\u{2212}3704\u{2212}0044\u{2212}0532\u{2212}0130\u{2212}00 now",
            "pay DE89\u{a0}3704\u{a0}0044\u{a0}0532\u{a0}0130\u{a0}00 now",
            "pay DE89\u{2009}3704\u{ff0d}0044\u{202f}0532\u{fe63}0130\u{2007}00 now",
        ] {
            assert_eq!(read(text, Kind::Iban), [iban], "{text}");
        }
        assert_eq!(
            read("ref 1234\u{2013}5678\u{2013}90", Kind::Number),
            ["1234567890"]
        );
        // Wrapped as mail wraps it: a space or a dash before the line break, an indent after.
        for text in [
            "pay DE89 3704 0044 \r\n0532 0130 00 now",
            "pay DE89 3704 0044 \n0532 0130 00 now",
            "pay DE89 3704 0044\n    0532 0130 00 now",
            "pay DE89-3704-0044-\n0532-0130-00 now",
            "pay DE89 3704 0044\r\n\t0532 0130 00 now",
        ] {
            assert_eq!(read(text, Kind::Iban), [iban], "{text:?}");
        }
        // Other line breaks, a reply's quoting, a long indent, and glued to the next word.
        for text in [
            "> Pay to DE89 3704 0044\n> 0532 0130 00",
            ">> Pay to DE89 3704 0044\r\n>> 0532 0130 00",
            "IBAN: DE89 3704 0044\n            0532 0130 00",
            "pay DE89 3704 0044\u{2028}0532 0130 00",
            "pay DE89 3704 0044\u{85}0532 0130 00",
            "pay DE89 3704 0044\r0532 0130 00",
            "IBAN: DE89370400440532013000BIC: COBADEFF",
            "IBAN: DE89 3704 0044 0532 0130 00BIC: COBADEFF",
        ] {
            assert_eq!(read(text, Kind::Iban), [iban], "{text:?}");
        }
        // Words after it that a longer prefix's check digits would take in.
        assert_eq!(
            read("IBAN: DE89 3704 0044 0532 0130 00 215 EUR due", Kind::Iban),
            [iban]
        );
        // Glued to the end of a word.
        for text in [
            "Konto: IBANDE89370400440532013000 bis Freitag",
            "Konto:IBANDE89 3704 0044 0532 0130 00",
            "xDE89370400440532013000",
        ] {
            assert_eq!(read(text, Kind::Iban), [iban], "{text:?}");
        }
        // The scan goes on past an IBAN glued to a word: a number after it is read too.
        assert_eq!(
            read("Konto: IBANDE89370400440532013000 ref 123456", Kind::Number),
            ["123456"]
        );
        // Two line breaks are a paragraph's end, not a wrapped line.
        assert!(read("DE89 3704 0044\n\n0532 0130 00", Kind::Iban).is_empty());
        // Four separators are no group's: the IBAN is not read across them.
        assert!(read("DE89 -  3704 0044 0532 0130 00", Kind::Iban).is_empty());
        // A tab between numbers is a table's columns, not one number.
        assert_eq!(read("123\t456789", Kind::Number), ["456789"]);
    }
}

#[cfg(test)]
mod number_text_tests {
    use super::number_text;

    #[test]
    fn a_whole_number_written_as_a_float_reads_as_the_whole_number() {
        let text = |json: &str| number_text(&serde_json::from_str(json).unwrap());
        for json in ["12345678", "12345678.0", "1.2345678e7", "12345678e0"] {
            assert_eq!(text(json), "12345678", "{json}");
        }
        assert_eq!(text("-5.0"), "-5");
        assert_eq!(text("1234.5"), "1234.5");
        assert_eq!(text("18446744073709551615"), "18446744073709551615");
        // Past 2^53 a float is no exact integer: written as serde_json writes it.
        assert_eq!(text("1e300"), "1e+300");
    }
}
