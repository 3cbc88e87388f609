//! Card numbers and IBANs as a person reads them: groups of digits (or letters and digits) with
//! up to three separators between groups — spaces, `-` or any dash, no-break and thin spaces, and
//! for an IBAN tabs (`4111 1111 1111 1111`, `4111–1111–1111–1111`, `4111 - 1111 - 1111 - 1111`)
//! — found wherever they start, even glued to a word (`card4111…`, `acct_DE89…`; an IBAN not
//! after a letter or digit, see [`ibans`]), and checked by
//! their own check digits, so a number beside another (`2024-01-15 4111…`, `qty 2 4111…`) or a
//! second IBAN in a sentence is found too. What a card number or an IBAN looks like when issued
//! (a card's first group of four digits, an IBAN's country and length) keeps the rest of a
//! table or a sentence from being taken for one by chance (1 in 10 for Luhn, 1 in 97 for MOD 97).

use crate::provenance::extract::{iban_checks, iban_length};
use crate::text::separates_digit_groups;

/// The most characters between two groups.
const MOST_BETWEEN: usize = 3;

/// How many bytes of `text`, from `at`, stand between two groups: one to [`MOST_BETWEEN`]
/// characters that separate digit groups (and tabs, when `tabs`: between an IBAN's groups, not a
/// card's, where a tab is a table's columns) followed by a byte `continues` accepts; 0 where no
/// group follows.
fn between(text: &str, at: usize, tabs: bool, continues: impl Fn(u8) -> bool) -> usize {
    let mut length = 0;
    for c in text[at..].chars().take(MOST_BETWEEN) {
        if !(separates_digit_groups(c) || tabs && c == '\t') {
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
/// digits together, shaped as cards are written — one group, or a first group of four digits
/// and the others of three to six (`4111 1111 1111 1111`, `3782 822463 10005`) — not starting
/// with `0`, whose Luhn check holds. A run's groups are tried in every window, so a date or a
/// quantity before the number, or an expiry after it, hides nothing.
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
            match between(text, cursor, false, |byte| byte.is_ascii_digit()) {
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
                if digits >= 13
                    && card_shaped(window)
                    && bytes[window[0].0] != b'0'
                    && luhn_holds(window.iter().flat_map(|&(s, e)| &bytes[s..e]))
                {
                    out.push((groups[first].0, groups[last].1));
                }
            }
        }
        at = cursor;
    }
}

/// Whether digit groups (byte spans) are shaped as a card number is written: one group, or a
/// first group of four digits and the others of three to six.
fn card_shaped(window: &[(usize, usize)]) -> bool {
    match window {
        [_] => true,
        [(start, end), rest @ ..] => {
            end - start == 4
                && rest
                    .iter()
                    .all(|(start, end)| (3..=6).contains(&(end - start)))
        }
        [] => false,
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

/// The spans of `text` that are IBANs: a country's two letters and two digits not inside a word
/// of letters and digits (after `_` or any other sign is a start), then letters and digits in
/// groups, as many as that country's IBANs hold, whose check digits hold (ISO 13616). Every start
/// is tried, also inside an IBAN found (a word before a payee's IBAN that reads as the start of
/// another must not hide the payee's: the spans overlap, and are redacted together).
pub(super) fn ibans(text: &str, out: &mut Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    for at in 0..bytes.len().saturating_sub(3) {
        let starts = bytes[at].is_ascii_alphabetic()
            && bytes[at + 1].is_ascii_alphabetic()
            && bytes[at + 2].is_ascii_digit()
            && bytes[at + 3].is_ascii_digit()
            && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric());
        if let Some(end) = starts.then(|| iban_end(text, at)).flatten() {
            out.push((at, end));
        }
    }
}

/// Where the IBAN starting at `start` ends, if one does: as many letters and digits as its
/// country's IBANs hold, whose check digits hold.
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
        match between(text, cursor, true, |byte| byte.is_ascii_alphanumeric()) {
            0 => break,
            skipped => cursor += skipped,
        }
    }
    let wanted = iban_length([compact[0], compact[1]])?;
    let candidate = std::str::from_utf8(compact.get(..wanted)?).ok()?;
    (length >= wanted && iban_checks(candidate)).then(|| ends[wanted - 1])
}
