//! Card numbers and IBANs as a person reads them: groups of digits (or letters and digits) with
//! up to three separators between groups — spaces, tabs, `-` or any dash, no-break and thin
//! spaces (`4111 1111 1111 1111`, `4111–1111–1111–1111`, `4111 - 1111 - 1111 - 1111`) — found
//! wherever they start, even glued to a word (`card4111…`, `acct_DE89…`), and checked by their
//! own check digits, so a number beside another (`2024-01-15 4111…`, `qty 2 4111…`) or a second
//! IBAN in a sentence is found too.

use crate::provenance::extract::iban_checks;

/// The most characters between two groups.
const MOST_BETWEEN: usize = 3;

/// Whether `c` may stand between two groups: a space, tab, no-break or thin space, `-`, or a
/// dash or minus sign.
fn separates_groups(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '-' | '\u{a0}' | '\u{2007}' | '\u{2009}' | '\u{202f}' | '\u{2010}'
            ..='\u{2015}' | '\u{2212}' | '\u{fe58}' | '\u{fe63}' | '\u{ff0d}'
    )
}

/// How many bytes of `text`, from `at`, stand between two groups: one to [`MOST_BETWEEN`]
/// separating characters followed by a byte `continues` accepts; 0 where no group follows.
fn between(text: &str, at: usize, continues: impl Fn(u8) -> bool) -> usize {
    let mut length = 0;
    for c in text[at..].chars().take(MOST_BETWEEN) {
        if !separates_groups(c) {
            break;
        }
        length += c.len_utf8();
    }
    let next = text.as_bytes().get(at + length).copied();
    if length > 0 && next.is_some_and(continues) {
        length
    } else {
        0
    }
}

/// The spans of `text` that are card numbers: whole groups of a run of digit groups, 13 to 19
/// digits together, whose Luhn check holds. A run's groups are tried in every window, so a date
/// or a quantity before the number, or an expiry after it, hides nothing.
pub(super) fn card_numbers(text: &str, out: &mut Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        groups.clear();
        let mut cursor = at;
        loop {
            let start = cursor;
            while cursor < bytes.len() && bytes[cursor].is_ascii_digit() {
                cursor += 1;
            }
            groups.push((start, cursor));
            match between(text, cursor, |byte| byte.is_ascii_digit()) {
                0 => break,
                length => cursor += length,
            }
        }
        for first in 0..groups.len() {
            let mut digits = 0;
            for last in first..groups.len() {
                digits += groups[last].1 - groups[last].0;
                if digits > 19 {
                    break;
                }
                let window = &groups[first..=last];
                if digits >= 13 && luhn_holds(window.iter().flat_map(|&(s, e)| &bytes[s..e])) {
                    out.push((groups[first].0, groups[last].1));
                }
            }
        }
        at = cursor;
    }
}

/// Whether the digits pass the Luhn check (ISO/IEC 7812).
fn luhn_holds<'a>(digits: impl DoubleEndedIterator<Item = &'a u8>) -> bool {
    let sum: u32 = digits
        .rev()
        .enumerate()
        .map(|(index, &byte)| {
            let digit = u32::from(byte - b'0');
            if index % 2 == 1 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                digit
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// The spans of `text` that are IBANs: two letters and two digits not inside a word of letters
/// and digits (after `_` or any other sign is a start), then letters and digits in groups, the
/// longest whose check digits hold (ISO 13616). The search goes on after each IBAN found, so a
/// second one right after it is found too.
pub(super) fn ibans(text: &str, out: &mut Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at + 4 <= bytes.len() {
        let starts = bytes[at].is_ascii_alphabetic()
            && bytes[at + 1].is_ascii_alphabetic()
            && bytes[at + 2].is_ascii_digit()
            && bytes[at + 3].is_ascii_digit()
            && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric());
        match starts.then(|| iban_end(text, at)).flatten() {
            Some(end) => {
                out.push((at, end));
                at = end;
            }
            None => at += 1,
        }
    }
}

/// Where the longest IBAN starting at `start` ends, if one does.
fn iban_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    // At most 34 characters (the longest IBAN), kept on the stack.
    let mut compact = [0_u8; 34];
    let mut ends = [0_usize; 34];
    let mut length = 0;
    let mut cursor = start;
    while length < compact.len() && cursor < bytes.len() {
        if bytes[cursor].is_ascii_alphanumeric() {
            compact[length] = bytes[cursor].to_ascii_uppercase();
            cursor += 1;
            ends[length] = cursor;
            length += 1;
            continue;
        }
        match between(text, cursor, |byte| byte.is_ascii_alphanumeric()) {
            0 => break,
            skipped => cursor += skipped,
        }
    }
    (15..=length).rev().find_map(|length| {
        let candidate = std::str::from_utf8(&compact[..length]).ok()?;
        iban_checks(candidate).then_some(ends[length - 1])
    })
}
