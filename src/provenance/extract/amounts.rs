//! Amounts of money, read as whole hundredths of their currency's unit (`EUR 1,450.00`,
//! `1.450 €`, `$35`, `35,50 EUR` are `145000`, `145000`, `3500`, `3550`): the form a payment
//! tool's `cents` argument takes, so "the amount the person gave" and "an amount only a mail
//! names" can be asked of a call.
//!
//! A number is an amount only with a currency beside it (see [`super::currencies`]), and not
//! one with a number on its other side too — so dates, counts and reference numbers are not
//! amounts, and `invoice 4711 EUR 89.90` names neither. Digit groups are read as people write them:
//! `,` `.` or `'` between groups of three (`,` also in the Indian `1,50,000`), a `.` or `,`
//! before one or two decimals; `35,-` is 35. A numeral that reads no other way is no amount,
//! not a part of one (`USD 1.0845`). Every currency is read in hundredths (a yen amount too).

use super::currencies::{currency_after, currency_before, is_currency, symbol_or_space_at};
use super::{Kind, Token};

/// The most digits an amount may have (well inside `u64` as hundredths).
const MAX_DIGITS: usize = 15;

/// The most separators a numeral is read with: 15 digits in groups of three and decimals.
const MAX_SEPARATORS: usize = 6;

/// Where the amount scan stands: the first byte it has not read.
#[derive(Debug, Default)]
pub(super) struct AmountScan {
    at: usize,
}

impl AmountScan {
    /// The first byte not read yet: a digit before it starts nothing in this scan.
    pub(super) fn read_to(&self) -> usize {
        self.at
    }

    /// Reads the amount that the digit at `digit` may start; called for digits in order.
    #[inline]
    pub(super) fn at_digit(&mut self, bytes: &[u8], digit: usize, out: &mut Vec<Token>) {
        if digit >= self.at {
            self.read_at(bytes, digit, out);
        }
    }

    // Kept out of the scan's loop over every byte, which it would slow by a third.
    #[inline(never)]
    fn read_at(&mut self, bytes: &[u8], digit: usize, out: &mut Vec<Token>) {
        if !Numeral::may_start(bytes, digit) {
            // Inside a word (`AZ405`) or after a digit: nothing starts here.
            self.at = digit + 1;
            return;
        }
        // Most numbers have no currency beside them: found from where the numeral ends, before
        // it is read.
        let end = Numeral::end_from(bytes, digit);
        self.at = end;
        // A currency with a number on its other side too (`invoice 4711 EUR 89.90`, `35 EUR 12
        // months`) is neither's: which one it belongs to is a guess, and a wrong guess would
        // name an amount nobody gave.
        let before = currency_before(bytes, digit).filter(|&at| !number_ends_at(bytes, at));
        let after = if before.is_some() {
            None
        } else {
            currency_after(bytes, end).filter(|&at| !number_starts_at(bytes, at))
        };
        if before.is_none() && after.is_none() {
            return;
        }
        let Some(numeral) = Numeral::at(bytes, digit) else {
            self.at = digit + 1;
            return;
        };
        self.at = numeral.end;
        // Read whole or not at all: `USD 1.0845` is no amount, not 1 USD.
        if numeral.end == end
            && let Some(hundredths) = numeral.hundredths(bytes)
        {
            out.push(Token::new(Kind::Amount, hundredths.to_string()));
        }
    }
}

/// Whether a digit ends right before `at` (at most two spaces between).
fn number_ends_at(bytes: &[u8], at: usize) -> bool {
    bytes[..at]
        .iter()
        .rev()
        .take(3)
        .find(|&&byte| byte != b' ')
        .is_some_and(u8::is_ascii_digit)
}

/// Whether a digit starts right at `at` (at most two spaces between).
fn number_starts_at(bytes: &[u8], at: usize) -> bool {
    bytes[at..]
        .iter()
        .take(3)
        .find(|&&byte| byte != b' ')
        .is_some_and(u8::is_ascii_digit)
}

/// The amount `text` is as a whole (`35.50`, `EUR 1,450`, `35,- €`), in hundredths, read as
/// every text is (invisible characters dropped, NFKC with the `unicode` feature); `None` when it
/// is not one amount.
pub(crate) fn amount_of(text: &str) -> Option<Token> {
    amount_of_text(&super::readable(text, false))
}

/// The amount `text` is on its own, with or without a currency (`"35.50"`, `"€ 1.450"`,
/// `"35,50 EUR"`); `None` when it is not one amount.
fn amount_of_text(text: &str) -> Option<Token> {
    let trimmed = text.trim();
    let bytes = trimmed.as_bytes();
    let start = bytes.iter().position(u8::is_ascii_digit)?;
    let numeral = Numeral::at(bytes, start)?;
    let before = trimmed[..start].trim_end().trim_end_matches(':');
    let after = trimmed[numeral.end..]
        .trim_start_matches([',', '.'])
        .trim_start_matches(['-', '–'])
        .trim_start();
    let currency_only = |part: &str| part.is_empty() || is_currency(part.as_bytes());
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
    /// Each separator's place and the number of digits after it; the first `count` are read.
    separators: [(usize, usize); MAX_SEPARATORS],
    count: usize,
}

impl Numeral {
    /// Whether a numeral may start at the digit `start`: no digit or letter comes before it,
    /// or a currency code does (`EUR35`).
    fn may_start(bytes: &[u8], start: usize) -> bool {
        let Some(&previous) = start.checked_sub(1).and_then(|at| bytes.get(at)) else {
            return true;
        };
        if !previous.is_ascii_alphanumeric() {
            return true;
        }
        let word = bytes[..start]
            .iter()
            .rposition(|byte| !byte.is_ascii_alphabetic())
            .map_or(0, |at| at + 1);
        !previous.is_ascii_digit() && is_currency(&bytes[word..start])
    }

    /// Where the numeral starting at `start` ends, as [`Numeral::at`] reads it (digits, and
    /// separators with a digit after them, at most [`MAX_SEPARATORS`]; at most
    /// [`MAX_DIGITS`] + 1 digits are looked at).
    fn end_from(bytes: &[u8], start: usize) -> usize {
        let (mut cursor, mut digits, mut separators) = (start, 0, 0);
        while cursor < bytes.len() && digits <= MAX_DIGITS {
            let byte = bytes[cursor];
            if byte.is_ascii_digit() {
                digits += 1;
            } else if separator_width(&bytes[cursor..]).is_some()
                && separators < MAX_SEPARATORS
                && bytes.get(cursor + 1).is_some_and(u8::is_ascii_digit)
            {
                separators += 1;
            } else {
                break;
            }
            cursor += 1;
        }
        cursor
    }

    /// The numeral starting at `start`, if a numeral starts there (see [`Numeral::may_start`]).
    fn at(bytes: &[u8], start: usize) -> Option<Self> {
        if !Self::may_start(bytes, start) {
            return None;
        }
        let mut numeral = Self {
            start,
            end: start,
            separators: [(0, 0); MAX_SEPARATORS],
            count: 0,
        };
        let mut cursor = start;
        let mut digits = 0;
        loop {
            // Counted no further than an amount may go: a run of a million digits is read once.
            let run = bytes[cursor..]
                .iter()
                .take(MAX_DIGITS + 1 - digits)
                .take_while(|byte| byte.is_ascii_digit())
                .count();
            digits += run;
            if digits > MAX_DIGITS {
                return None;
            }
            if numeral.count > 0 {
                numeral.separators[numeral.count - 1].1 = run;
            }
            cursor += run;
            let Some(width) = separator_width(&bytes[cursor..]) else {
                break;
            };
            let digit_after = bytes.get(cursor + width).is_some_and(u8::is_ascii_digit);
            if !digit_after || numeral.count == MAX_SEPARATORS {
                break;
            }
            numeral.separators[numeral.count] = (cursor, 0);
            numeral.count += 1;
            cursor += width;
        }
        numeral.end = cursor;
        // A letter right after (`35kg`, `12th`) makes it no amount, a code (`35EUR`) does not;
        // nor does a character outside ASCII other than a currency or a space (`1½`, which
        // NFKC makes `11⁄2`). Read no further than the longest code, so a page of `EUR1EUR1…`
        // is read once.
        let rest = &bytes[cursor..];
        let glued = rest
            .iter()
            .take(8)
            .take_while(|byte| byte.is_ascii_alphanumeric())
            .count();
        if glued == 8 || (glued > 0 && !is_currency(&rest[..glued])) {
            return None;
        }
        if glued == 0
            && rest.first().is_some_and(|byte| !byte.is_ascii())
            && !symbol_or_space_at(rest)
        {
            return None;
        }
        Some(numeral)
    }

    /// The numeral in hundredths, if its groups read as one amount.
    fn hundredths(&self, bytes: &[u8]) -> Option<u64> {
        let end = self.end;
        let separators = &self.separators[..self.count];
        let digits_between = |from: usize, to: usize| -> ([u8; MAX_DIGITS], usize) {
            let mut digits = [0; MAX_DIGITS];
            let mut length = 0;
            for &byte in &bytes[from..to] {
                if byte.is_ascii_digit() && length < MAX_DIGITS {
                    digits[length] = byte;
                    length += 1;
                }
            }
            (digits, length)
        };
        let Some(&(last, after_last)) = separators.last() else {
            return hundredths_of(&bytes[self.start..end], b"");
        };
        let last_byte = bytes[last];
        let decimal = matches!(last_byte, b'.' | b',') && (1..=2).contains(&after_last);
        let grouping = if decimal {
            &separators[..separators.len() - 1]
        } else {
            separators
        };
        // Groups of three after a first group of one to three not starting with 0 (`0.325` is
        // three decimals, not read) — or the Indian lakh and crore, `1,50,000` —, one kind of
        // separator, not the decimal one.
        if let Some(&(first, _)) = grouping.first() {
            let first_group = first - self.start;
            let kind = bytes[first];
            let one_kind = grouping.iter().all(|&(at, _)| bytes[at] == kind);
            let thousands =
                (1..=3).contains(&first_group) && grouping.iter().all(|&(_, after)| after == 3);
            let indian = kind == b','
                && (1..=2).contains(&first_group)
                && grouping.split_last().is_some_and(|(&(_, last), rest)| {
                    last == 3 && rest.iter().all(|&(_, after)| after == 2)
                });
            if bytes[self.start] == b'0'
                || !one_kind
                || !(thousands || indian)
                || (decimal && kind == last_byte)
            {
                return None;
            }
        }
        let (units, length) = digits_between(self.start, if decimal { last } else { end });
        let (decimals, decimals_length) = if decimal {
            digits_between(last, end)
        } else {
            ([0; MAX_DIGITS], 0)
        };
        hundredths_of(&units[..length], &decimals[..decimals_length])
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

/// The width of a group separator at the start of `bytes`: `,` `.` `'`. Not a space of any
/// kind (with the `unicode` feature a no-break space reads as a space): `the 2 150 EUR
/// invoices` are 150 EUR each, and a person's `1 450 €` is read as `450 €` — the stricter
/// reading, as the person's amount then is asked rather than an attacker's `2,150` taken for it.
fn separator_width(bytes: &[u8]) -> Option<usize> {
    matches!(bytes.first(), Some(b',' | b'.' | b'\'')).then_some(1)
}
