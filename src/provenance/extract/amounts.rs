//! Amounts of money, read as whole hundredths of their currency's unit (`EUR 1,450.00`,
//! `1.450 €`, `$35`, `35,50 EUR` are `145000`, `145000`, `3500`, `3550`): the form a payment
//! tool's `cents` argument takes, so "the amount the person gave" and "an amount only a mail
//! names" can be asked of a call.
//!
//! A number is an amount only with a currency beside it — a symbol (`€`, `$`, `£`, …) or a code
//! or name (`EUR`, `usd`, `euros`), before or after it, at most one space between — so dates,
//! counts and reference numbers are not amounts. Digit groups are read as people write them:
//! `,` `.` `'` or a space between groups of three, a `.` or `,` before one or two decimals;
//! `35,-` is 35. Every currency is read in hundredths (a yen amount too).

use super::{Kind, Token};

/// Currency symbols, each a whole character.
const SYMBOLS: [&str; 14] = [
    "€", "$", "£", "¥", "₹", "₩", "₽", "₺", "₪", "₫", "₴", "₦", "฿", "₿",
];

/// Currency codes and names, compared without case; each must stand as a word of its own.
const NAMES: [&str; 40] = [
    "eur", "usd", "gbp", "chf", "jpy", "cny", "inr", "aud", "cad", "nzd", "sek", "nok", "dkk",
    "pln", "czk", "huf", "ron", "bgn", "try", "zar", "brl", "mxn", "sgd", "hkd", "krw", "ils",
    "aed", "sar", "rub", "uah", "euro", "euros", "dollar", "dollars", "pound", "pounds", "franc",
    "francs", "yen", "kr",
];

/// The most digits an amount may have (well inside `u64` as hundredths).
const MAX_DIGITS: usize = 15;

/// Where the amount scan stands: the first byte it has not read.
#[derive(Debug, Default)]
pub(super) struct AmountScan {
    at: usize,
}

impl AmountScan {
    /// Reads the amount that the digit at `digit` may start; called for digits in order.
    pub(super) fn at_digit(&mut self, bytes: &[u8], digit: usize, out: &mut Vec<Token>) {
        if digit < self.at {
            return;
        }
        let Some(numeral) = Numeral::at(bytes, digit) else {
            // Inside a word (`AZ405`) or after a digit: nothing starts here.
            self.at = digit + 1;
            return;
        };
        // The longest reading with a currency beside it: `EUR 35.00 28 days` is 35.00.
        for kept in (0..=numeral.separators.len()).rev() {
            let candidate = numeral.prefix(kept);
            if (currency_before(bytes, candidate.start) || currency_after(bytes, candidate.end))
                && let Some(hundredths) = candidate.hundredths(bytes)
            {
                out.push(Token::new(Kind::Amount, hundredths.to_string()));
                self.at = candidate.end;
                return;
            }
        }
        // None: after a space, the next group may start an amount of its own (`Room 4 35 EUR`);
        // after `.` or `,` it is part of this numeral (`1.2345 EUR` is no amount).
        let spaced = numeral
            .separators
            .first()
            .is_some_and(|&(at, _)| !matches!(bytes[at], b'.' | b','));
        self.at = if spaced {
            numeral.prefix(0).end
        } else {
            numeral.end
        };
    }
}

/// The amount `text` is on its own, with or without a currency (`"35.50"`, `"€ 1.450"`,
/// `"35,50 EUR"`); `None` when it is not one amount.
pub(super) fn amount_of_text(text: &str) -> Option<Token> {
    let trimmed = text.trim();
    let bytes = trimmed.as_bytes();
    let start = bytes.iter().position(u8::is_ascii_digit)?;
    let numeral = Numeral::at(bytes, start)?;
    let before = trimmed[..start].trim_end();
    let after = trimmed[numeral.end..]
        .trim_start_matches([',', '.'])
        .trim_start_matches('-')
        .trim_start();
    let currency_only = |part: &str| part.is_empty() || is_currency(part);
    if !(currency_only(before) && currency_only(after)) {
        return None;
    }
    let hundredths = numeral.hundredths(bytes)?;
    Some(Token::new(Kind::Amount, hundredths.to_string()))
}

/// A JSON number read as an amount in its currency's unit (`35.5` is `3550`); `None` for one
/// with more than two decimals, an exponent, a sign or too many digits.
pub(crate) fn amount_of_number(number: &serde_json::Number) -> Option<Token> {
    let text = number.to_string();
    let (units, decimals) = text.split_once('.').unwrap_or((&text, ""));
    let all_digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if units.is_empty() || !all_digits(units) || !all_digits(decimals) || decimals.len() > 2 {
        return None;
    }
    hundredths_of(units.as_bytes(), decimals.as_bytes())
        .map(|hundredths| Token::new(Kind::Amount, hundredths.to_string()))
}

/// A whole number of hundredths (a `cents` argument) as an amount; `None` when negative or not
/// whole.
pub(crate) fn amount_of_minor_units(number: &serde_json::Number) -> Option<Token> {
    let hundredths = number.as_u64().or_else(|| {
        let float = number.as_f64()?;
        // A whole float below 2^53 is exact.
        (float >= 0.0 && float.fract() == 0.0 && float < 9_007_199_254_740_992.0)
            .then_some(float as u64)
    })?;
    Some(Token::new(Kind::Amount, hundredths.to_string()))
}

/// Digits and the separators between their groups, starting at a digit that starts a word.
struct Numeral {
    start: usize,
    end: usize,
    /// Each separator's place and the number of digits after it.
    separators: Vec<(usize, usize)>,
}

impl Numeral {
    /// The numeral starting at `start`, if a numeral starts there: a digit that no digit or
    /// letter comes before, or a currency code (`EUR35`).
    fn at(bytes: &[u8], start: usize) -> Option<Self> {
        let previous = start.checked_sub(1).map(|at| bytes[at]);
        if let Some(previous) = previous
            && previous.is_ascii_alphanumeric()
        {
            let word = bytes[..start]
                .iter()
                .rposition(|byte| !byte.is_ascii_alphabetic())
                .map_or(0, |at| at + 1);
            let letters = std::str::from_utf8(&bytes[word..start]).ok()?;
            if previous.is_ascii_digit() || !is_currency(letters) {
                return None;
            }
        }
        let mut separators: Vec<(usize, usize)> = Vec::new();
        let mut cursor = start;
        let mut digits = 0;
        loop {
            let run = bytes[cursor..]
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .count();
            digits += run;
            if let Some(last) = separators.last_mut() {
                *last = (last.0, run);
            }
            cursor += run;
            let Some(width) = separator_width(&bytes[cursor..]) else {
                break;
            };
            if !bytes.get(cursor + width).is_some_and(u8::is_ascii_digit) {
                break;
            }
            separators.push((cursor, 0));
            cursor += width;
        }
        // A letter right after (`35kg`, `12th`) makes it no amount, a code (`35EUR`) does not.
        let rest = &bytes[cursor..];
        let word_end = rest
            .iter()
            .position(|byte| !byte.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        let glued = &rest[..word_end];
        if !glued.is_empty() && !std::str::from_utf8(glued).is_ok_and(is_currency) {
            return None;
        }
        (digits <= MAX_DIGITS).then_some(Self {
            start,
            end: cursor,
            separators,
        })
    }

    /// The numeral up to its `kept`-th separator.
    fn prefix(&self, kept: usize) -> Self {
        let end = self.separators.get(kept).map_or(self.end, |&(at, _)| at);
        Self {
            start: self.start,
            end,
            separators: self.separators[..kept].to_vec(),
        }
    }

    /// The numeral in hundredths, if its groups read as one amount.
    fn hundredths(&self, bytes: &[u8]) -> Option<u64> {
        let digits_between = |from: usize, to: usize| -> Vec<u8> {
            bytes[from..to]
                .iter()
                .copied()
                .filter(u8::is_ascii_digit)
                .collect()
        };
        let Some(&(last, after_last)) = self.separators.last() else {
            return hundredths_of(&bytes[self.start..self.end], b"");
        };
        let last_byte = bytes[last];
        let decimal = matches!(last_byte, b'.' | b',') && (1..=2).contains(&after_last);
        let grouping = if decimal {
            &self.separators[..self.separators.len() - 1]
        } else {
            &self.separators[..]
        };
        // Groups of three after a first group of one to three, one kind of separator, not the
        // decimal one.
        let first_group = grouping.first().map_or(0, |&(at, _)| at - self.start);
        let one_kind = grouping
            .windows(2)
            .all(|pair| bytes[pair[0].0] == bytes[pair[1].0]);
        if !grouping.is_empty()
            && (!(1..=3).contains(&first_group)
                || !one_kind
                || grouping.iter().any(|&(_, after)| after != 3)
                || (decimal && bytes[grouping[0].0] == last_byte))
        {
            return None;
        }
        if decimal {
            let units = digits_between(self.start, last);
            let decimals = digits_between(last, self.end);
            hundredths_of(&units, &decimals)
        } else {
            hundredths_of(&digits_between(self.start, self.end), b"")
        }
    }
}

/// `units` and up to two `decimals` (ASCII digits) in hundredths.
fn hundredths_of(units: &[u8], decimals: &[u8]) -> Option<u64> {
    let mut value: u64 = 0;
    for &digit in units {
        value = value
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
    }
    let mut cents = 0;
    for place in 0..2 {
        cents = cents * 10
            + decimals
                .get(place)
                .map_or(0, |digit| u64::from(digit - b'0'));
    }
    value.checked_mul(100)?.checked_add(cents)
}

/// The width of a group separator at the start of `bytes`: `,` `.` `'` a space, a no-break or
/// thin space.
fn separator_width(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [b',' | b'.' | b'\'' | b' ', ..] => Some(1),
        // U+00A0 no-break space.
        [0xC2, 0xA0, ..] => Some(2),
        // U+2009 thin space, U+202F narrow no-break space.
        [0xE2, 0x80, 0x89 | 0xAF, ..] => Some(3),
        _ => None,
    }
}

/// Whether `word` is a currency code or name.
fn is_currency(word: &str) -> bool {
    SYMBOLS.contains(&word) || NAMES.iter().any(|name| name.eq_ignore_ascii_case(word))
}

/// Whether a currency ends right before `start` (at most one space between).
fn currency_before(bytes: &[u8], start: usize) -> bool {
    let mut end = start;
    if let Some(width) = space_before(&bytes[..end]) {
        end -= width;
    }
    let head = &bytes[..end];
    if SYMBOLS
        .iter()
        .any(|symbol| head.ends_with(symbol.as_bytes()))
    {
        return true;
    }
    let word = head
        .iter()
        .rposition(|byte| !byte.is_ascii_alphabetic())
        .map_or(0, |at| at + 1);
    word < end && std::str::from_utf8(&head[word..]).is_ok_and(is_currency)
}

/// Whether a currency starts at `end` (after `,-`, and at most one space).
fn currency_after(bytes: &[u8], end: usize) -> bool {
    let mut start = end;
    if matches!(bytes.get(start..start + 2), Some(b",-" | b".-")) {
        start += 2;
    }
    if let Some(width) = space_after(&bytes[start..]) {
        start += width;
    }
    let tail = &bytes[start..];
    if SYMBOLS
        .iter()
        .any(|symbol| tail.starts_with(symbol.as_bytes()))
    {
        return true;
    }
    let word = tail
        .iter()
        .position(|byte| !byte.is_ascii_alphabetic())
        .unwrap_or(tail.len());
    word > 0 && std::str::from_utf8(&tail[..word]).is_ok_and(is_currency)
}

/// The width of one space ending `bytes`.
fn space_before(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [.., b' '] => Some(1),
        [.., 0xC2, 0xA0] => Some(2),
        [.., 0xE2, 0x80, 0x89 | 0xAF] => Some(3),
        _ => None,
    }
}

/// The width of one space starting `bytes`.
fn space_after(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [b' ', ..] => Some(1),
        [0xC2, 0xA0, ..] => Some(2),
        [0xE2, 0x80, 0x89 | 0xAF, ..] => Some(3),
        _ => None,
    }
}
