//! Long numbers and IBANs, found by a byte scan of the text.

use super::{Kind, Token};

/// Long numbers (6 digits or more; spaces, `-` and `.` between digit groups dropped) and
/// IBANs whose check digits hold, anywhere in `text`. Read as bytes: every character either
/// takes part in is ASCII, and any other character (an accented letter, a dash) ends a word.
pub(super) fn numbers_and_ibans(text: &str, out: &mut Vec<Token>) {
    let bytes = text.as_bytes();
    if !bytes.iter().any(u8::is_ascii_digit) {
        return;
    }
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let word_start = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        if word_start
            && byte.is_ascii_alphabetic()
            && let Some((iban, used)) = iban_at(&bytes[at..])
        {
            out.push(Token::new(Kind::Iban, iban));
            at += used;
            continue;
        }
        if byte.is_ascii_digit() && word_start {
            let mut digits = String::new();
            let mut end = at;
            let mut cursor = at;
            while cursor < bytes.len() {
                let here = bytes[cursor];
                if here.is_ascii_digit() {
                    digits.push(char::from(here));
                    cursor += 1;
                    end = cursor;
                } else if matches!(here, b' ' | b'-' | b'.')
                    && bytes.get(cursor + 1).is_some_and(u8::is_ascii_digit)
                {
                    cursor += 1;
                } else {
                    break;
                }
            }
            let word_end = bytes
                .get(end)
                .is_none_or(|next| !next.is_ascii_alphanumeric());
            if digits.len() >= 6 && word_end {
                out.push(Token::new(Kind::Number, digits));
            }
            at = end.max(at + 1);
            continue;
        }
        at += 1;
    }
}

/// The IBAN starting at `bytes` (country letters, check digits, then letters and digits,
/// optionally in groups separated by single spaces) and how many bytes it used, if its check
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
    let mut compact = String::new();
    let mut ends = Vec::new();
    let mut cursor = 0;
    while cursor < bytes.len() && compact.len() < 34 {
        let byte = bytes[cursor];
        if byte.is_ascii_alphanumeric() {
            compact.push(char::from(byte.to_ascii_uppercase()));
            cursor += 1;
            ends.push(cursor);
        } else if matches!(byte, b' ' | b'-' | b'\t' | b'\n')
            && bytes.get(cursor + 1).is_some_and(u8::is_ascii_alphanumeric)
        {
            cursor += 1;
        } else {
            break;
        }
    }
    // The longest prefix that is a whole IBAN: a word after it may have been taken in.
    (15..=compact.len()).rev().find_map(|length| {
        let candidate = &compact[..length];
        let ends_a_word = bytes
            .get(ends[length - 1])
            .is_none_or(|next| !next.is_ascii_alphanumeric());
        (ends_a_word && iban_checks(candidate)).then(|| (candidate.to_owned(), ends[length - 1]))
    })
}

pub(crate) fn iban_checks(iban: &str) -> bool {
    let rearranged = iban[4..].chars().chain(iban[..4].chars());
    let mut remainder: u32 = 0;
    for c in rearranged {
        let value = match c.to_digit(36) {
            Some(value) => value,
            None => return false,
        };
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}
