//! The values a text carries, each in one canonical spelling: links and their hosts, e-mail
//! addresses, IBANs, long numbers, amounts of money, file paths and handles.
//!
//! Two spellings of one value that a model may copy from a result into a call must give one
//! canonical form, or a value read from a web page passes as one never seen. What is made alike:
//!
//! | kind | spellings made alike |
//! |---|---|
//! | link | scheme and host case (lower-cased, not case-folded: `straße` is not `strasse`); `%7e` and `~` (unreserved characters decoded), `%2f` and `%2F`; a default port; an empty path and `/`; `.` and `..` segments; `\` in the path; the fragment (dropped); trailing `.`, `,`, `)`, `"`, typographic quotes and CJK punctuation; a Markdown link `[text](link)`; JSON's `\/`; a link broken at a line end (both the broken and the joined link are recorded) where the next line goes on with what links carry, the link is left open (`/`, `=`, `?` …), its line is as long as mail wraps at (60 characters or more) or the rest stands alone on its line — after an indent or a reply's `>` too, never into the link's host; `=` soft line breaks of quoted-printable mail; a link inside a link (`?q=https%3A…`); a link without a scheme (`evil.example/pay`, read as `http://`; an IP address too: four decimal parts, `203.0.113.5`; before a path or a port also a spelling with a hex part or a part of more than three digits, `3405803781/pay`, `0xcb.0.113.5/pay`; any spelling after `//`; not a version, fraction or date, `1.2.3/stable`, `2024/05` — a person's request names an address only as a link's host after `//`) |
//! | host | case, a trailing dot; a backslash ends it (`https://evil.example\@good.example` is `evil.example`, as browsers read it); an IP address in every spelling the WHATWG URL parser reads (`3405803781`, `0xcb.0.113.5`, `0313.0.113.5`, `203.0.28933`, `203.0.113.005` and the IPv4-mapped `[::ffff:203.0.113.5]` are `203.0.113.5`; IPv6 in lower case, its longest run of zeros compressed); a host parsers refuse (`256.0.0.1`, `[::ffff:evil.example]`) is none, and its link no link |
//! | e-mail | case; `mailto:`; `%40` in a `mailto:` link; a label or script before it (`Reply-To:m@e`); lists split at `,` and `;`; an argument `Name <m@e>` is the address |
//! | IBAN | case; up to three tabs or characters that separate digit groups (spaces, `-`, no-break and thin spaces, any dash or minus sign: `crate::text::separates_digit_groups`) between groups (`DE89 – 3704`), and a line break among them (`\n`, `\r\n`, `\r`, NEL, U+2028, U+2029) with an indent or a reply's `>` after it (a line wrapped as mail wraps it: `0044 \r\n0532`, `0044-\n0532`, `0044\n> 0532`); glued to the end of a word (`IBANDE89…`), or to the next when as long as its country's IBANs (`…013000BIC:`); an argument `IBAN: DE89 … (Bank)` is the IBAN |
//! | long number | one `.` or character that separates digit groups between digit groups (6 digits or more) |
//! | path | repeated `/`, `.` segments |
//! | handle | `@` or `#` before it, case (a handle `@bob` is the text `bob`) |
//! | amount | read in hundredths (`EUR 1,450.00`, `1.450,00 €`, `1'450 CHF`, `$1450` are all `145000`; `₹1,50,000` is `15000000`); a currency symbol, code or name before or after, at most two spaces or a `:` between, and no number on its other side; `,` `.` `'` between groups of three, `.` or `,` before one or two decimals; `35,-` and `35,–` |
//! | any text | invisible characters (zero-width, bidi controls); with the `unicode` feature NFKC (fullwidth `ｅｘａｍｐｌｅ`) and full case folding; runs of white space |
//!
//! HTML character references and the escapes of JSON strings are not decoded here: a result's
//! and a request's texts are read a second time decoded (`crate::text::references`), an
//! argument as it is written.
//!
//! What is not made alike, and so is not matched: a value the model paraphrases, translates,
//! abbreviates or re-encodes (base64, punycode against Unicode host names, a number written out
//! in words), a link shortened by a redirector, an IP address written as a
//! number, numbers grouped by `,`, `/` or brackets (`(555) 123-4567`), and text split other than
//! at a line end. A number without a currency beside it is no amount (`pay 35`, a JSON number
//! in a result); an amount grouped by spaces (`1 450 €` is `450 €`), with three decimals or in
//! words (`fifty euros`) is not read, and every currency is read in hundredths, so `¥1000` is
//! `100000` and two currencies with the same digits are one value. Links nested in links
//! (`?q=https://…`, a Markdown target) are read 64 levels deep, and the nested readings of one
//! chunk read at most eight times the chunk (and 256 bytes); a text nesting them deeper or longer
//! is read as cut (`Reading::Cut`), which the recorder and the rules treat as failing closed
//! (the session overflows; an argument cannot be judged).

mod addresses;
mod amounts;
mod chunk_at;
mod chunk_values;
mod chunks;
mod currencies;
mod escaped_quotes;
mod ip_hosts;
mod lines;
mod numbers;
mod one_place;

use std::borrow::Cow;

use amounts::AmountScan;
pub(crate) use amounts::{amount_of, amount_of_minor_units, amount_of_number};
use chunk_at::chunk_at;
use chunk_values::chunk_tokens;
use chunks::{
    BYTE_CLASS, DIGIT, FULL_STOP_LEAD, ends_a_label, ends_a_sentence, host_full_stop_at,
    next_classified, trim_trailing,
};
pub(crate) use currencies::mentions_money;
pub(crate) use ip_hosts::{an_ip_not_linked, linked_hosts};
pub(crate) use lines::lines;
use numbers::NumberScan;
pub(crate) use numbers::{iban_checks, iban_length, number_text};
pub(crate) use one_place::names_one_place;

/// What kind of value a token is: part of its digest, so an IBAN and the same characters as
/// text never meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    Url,
    Host,
    Email,
    Iban,
    Number,
    Path,
    Text,
    Amount,
    /// Not a value: "the person named some value of this kind" (its canonical form is the kind's
    /// tag), recorded beside a request's values.
    AnyOf,
    /// Not a value: where the chunk reader stopped, links nesting deeper or longer than they are
    /// read (64 levels, eight times their chunk: see `chunk_values::MAX_NESTING` and
    /// `nesting_budget`). It never leaves this module: [`tokens`] turns
    /// it into [`Reading::Cut`], and the other readings keep only the kinds they return.
    Unread,
}

impl Kind {
    /// The kinds of value a text can name (not the markers).
    pub(crate) const NAMEABLE: [Self; 8] = [
        Self::Url,
        Self::Host,
        Self::Email,
        Self::Iban,
        Self::Number,
        Self::Path,
        Self::Text,
        Self::Amount,
    ];

    pub(crate) fn tag(self) -> &'static str {
        match self {
            Self::Url => "url",
            Self::Host => "host",
            Self::Email => "email",
            Self::Iban => "iban",
            Self::Number => "number",
            Self::Path => "path",
            Self::Text => "text",
            Self::Amount => "amount",
            Self::AnyOf => "any-of",
            Self::Unread => "unread",
        }
    }
}

/// One value in its canonical spelling.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) canonical: String,
}

impl Token {
    fn new(kind: Kind, canonical: impl Into<String>) -> Self {
        Self {
            kind,
            canonical: canonical.into(),
        }
    }
}

/// The longest text whose whole spelling is recorded as one value (a name, an id, a line).
pub(crate) const MAX_WHOLE_VALUE_CHARS: usize = 200;

/// The most values a text (and a result, all its texts together) is read for: past it the
/// reading is cut ([`Reading::Cut`]), failing closed as past the deepest nesting. A result records
/// at most 2,048 distinct values, and one holding more overflows its session anyway; this bounds
/// what reading it holds first — a value for each line of `x\n` repeated held 35 times the text
/// (8 MB: 283 MB; an independent attack).
pub(crate) const MAX_VALUES_READ: usize = 65_536;

/// Whether `text` holds what may be a quoted-printable soft line break (`=` ending a line).
fn has_soft_breaks(text: &str) -> bool {
    text.contains("=\n") || text.contains("=\r\n")
}

/// `text` as it is read for values: invisible characters removed, quoted-printable soft line
/// breaks joined when `join_soft_breaks`, and — with the `unicode` feature — NFKC, so fullwidth
/// letters are letters.
fn readable(text: &str, join_soft_breaks: bool) -> Cow<'_, str> {
    let join = join_soft_breaks && has_soft_breaks(text);
    if text.is_ascii() && !join {
        return Cow::Borrowed(text);
    }
    let text = if join {
        text.replace("=\r\n", "").replace("=\n", "")
    } else {
        text.to_owned()
    };
    #[cfg(feature = "unicode")]
    let text: String = {
        use unicode_normalization::UnicodeNormalization as _;
        let visible: String = text
            .chars()
            .filter(|c| !crate::text::is_invisible(*c) || c.is_whitespace())
            .collect();
        visible.nfkc().collect()
    };
    #[cfg(not(feature = "unicode"))]
    let text: String = text
        .chars()
        .filter(|c| !crate::text::is_invisible(*c) || c.is_whitespace())
        .collect();
    Cow::Owned(text)
}

/// How far [`tokens`] read a text: whole, or cut where links nested deeper or longer than they
/// are read (64 levels, eight times their chunk). What reads a cut text must not take it for all the text holds: a result then
/// overflows its session, an argument cannot be judged, a request names only what was read.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    Whole,
    Cut,
}

impl Reading {
    pub(crate) fn is_cut(self) -> bool {
        self == Self::Cut
    }
}

/// Every value `text` carries, each once: links (and their hosts), e-mail addresses, IBANs,
/// long numbers, paths and handles; and whether the text was read whole.
pub(crate) fn tokens(text: &str, out: &mut Vec<Token>) -> Reading {
    let from = out.len();
    // A line ending in `=` is read both as it is and as a quoted-printable soft break.
    if has_soft_breaks(text) {
        scan(&readable(text, true), out);
    }
    scan(&readable(text, false), out);
    // The chunk reader marks where it stopped; the mark is no value, and leaves no list. Only
    // this text's values are looked at: the list may hold a whole result's values before them,
    // and a result of many cut strings would go over those again for each.
    let mut kept = from;
    for at in from..out.len() {
        if out[at].kind != Kind::Unread {
            out.swap(kept, at);
            kept += 1;
        }
    }
    let cut = kept < out.len();
    out.truncate(kept);
    if cut { Reading::Cut } else { Reading::Whole }
}

fn scan(text: &str, out: &mut Vec<Token>) {
    scan_skipping(text, out, true);
}

/// [`scan`], skipping the chunks of full stops that end sentences and of colons that end labels,
/// and the digits both number scans have read past, when `skip` (the tests read
/// every chunk and visit every digit, to hold the skips to reading the same values).
fn scan_skipping(text: &str, out: &mut Vec<Token>, skip: bool) {
    // JSON written with escaped slashes (`https:\/\/evil.example\/pay`) is read as written: the
    // text is read again without them where the scan meets one (every `\` is a byte it visits),
    // and what it read before is dropped — no search of its own over every text.
    let from = out.len();
    let again = |out: &mut Vec<Token>| {
        out.truncate(from);
        scan_skipping(&without_escaped_slashes(text), out, skip);
    };
    // One pass over the bytes, a table lookup each: only chunks holding a byte a link,
    // address, path or handle needs are read (most chunks are words), and only digits start a
    // number or an IBAN's check digits.
    let bytes = text.as_bytes();
    // In ASCII text no full stop of `HOST_DOTS` can make a chunk hold a host.
    let ascii = skip && text.is_ascii();
    let mut numbers = NumberScan::default();
    let mut amounts = AmountScan::default();
    let mut chunks_from = 0;
    let mut next = 0;
    let most = out.len().saturating_add(MAX_VALUES_READ);
    // The search for the next byte of a class is its own tight loop: most bytes are letters.
    while let Some(at) = next_classified(bytes, next) {
        if bytes[at] == b'\\' && bytes.get(at + 1) == Some(&b'/') {
            return again(out);
        }
        if out.len() >= most {
            // Cut here unless an escaped slash after it has the text read again.
            if text[at..].contains("\\/") {
                return again(out);
            }
            mark_unread(out);
            return;
        }
        next = at + 1;
        let class = BYTE_CLASS[usize::from(bytes[at])];
        // Other characters of the blocks a host's full stop belongs to start nothing.
        if class == FULL_STOP_LEAD && !host_full_stop_at(bytes, at) {
            continue;
        }
        if class == DIGIT {
            numbers.at_digit(bytes, at, out);
            amounts.at_digit(bytes, at, out);
            // The digits after it that both scans have read past start nothing in either (the
            // tests visit them, to hold the skip to visiting).
            if skip {
                let read_past = numbers.read_to().min(amounts.read_to());
                while next < read_past && bytes[next].is_ascii_digit() {
                    next += 1;
                }
            }
        } else if at >= chunks_from
            && !(ascii && (ends_a_sentence(bytes, at) || ends_a_label(bytes, at)))
        {
            chunks_from = chunk_at(text, chunks_from, at, out);
        }
    }
}

/// `text` with every run of backslashes before a `/` removed, in one pass: what replacing `\/`
/// by `/` until none is left makes of it (one backslash a replacement, which a run of thousands
/// made thousands of copies of the text deep, and overflowed the stack).
fn without_escaped_slashes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut kept = String::with_capacity(text.len());
    let mut from = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        let run = at
            + bytes[at..]
                .iter()
                .take_while(|&&byte| byte == b'\\')
                .count();
        if bytes.get(run) == Some(&b'/') {
            // Backslashes are whole characters: both sides of the run are text.
            kept.push_str(&text[from..at]);
            from = run;
        }
        at = run;
    }
    kept.push_str(&text[from..]);
    kept
}

/// The whole of `text` as one value: the canonical form of the one link, address, IBAN,
/// number, path or handle it is, else the text itself (folded, white space collapsed). `None`
/// for empty text. (Results record only values of at most [`MAX_WHOLE_VALUE_CHARS`] whole; a
/// longer argument is still read, and was never seen.)
pub(crate) fn whole(text: &str) -> Option<Token> {
    whole_reading(text).0
}

/// [`whole`], and how far `text` was read: where it nests links deeper or longer than they are
/// read, or holds more values than are read, the value found may not be the one it is (a
/// Markdown link whose text used up the reading before its target), so an argument read cut
/// cannot be judged.
pub(crate) fn whole_reading(text: &str) -> (Option<Token>, Reading) {
    let text = readable(text, false);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return (None, Reading::Whole);
    }
    if trimmed.bytes().all(|byte| byte.is_ascii_alphanumeric())
        && let Some(token) = whole_word(trimmed)
    {
        return (Some(token), Reading::Whole);
    }
    whole_in_general(trimmed)
}

/// Marks where a reading stopped, once however many places stop it: [`tokens`] and the
/// one-value readings turn the mark into [`Reading::Cut`].
fn mark_unread(out: &mut Vec<Token>) {
    if out.last().is_none_or(|token| token.kind != Kind::Unread) {
        out.push(Token::new(Kind::Unread, String::new()));
    }
}

/// Whether a reading listed the mark of where it stopped.
fn holds_mark(tokens: &[Token]) -> bool {
    tokens.iter().any(|token| token.kind == Kind::Unread)
}

/// Whether a word holds two letters and a digit past its start: an IBAN may be glued to its
/// first letters (`IBANDE89…`), which [`whole_word`] does not read.
fn may_glue_an_iban(word: &str) -> bool {
    word.as_bytes().windows(3).skip(1).any(|three| {
        three[0].is_ascii_alphabetic()
            && three[1].is_ascii_alphabetic()
            && three[2].is_ascii_digit()
    })
}

/// [`whole`] of one ASCII word of letters and digits, without a scan: what the scan finds in
/// one (an IBAN from its first letter, or a long number of its digits alone) decided directly;
/// `None` for a word an IBAN may be glued into, read in general.
fn whole_word(word: &str) -> Option<Token> {
    let bytes = word.as_bytes();
    if bytes.len() >= 6 && bytes.iter().all(u8::is_ascii_digit) {
        return Some(Token::new(Kind::Number, word.to_owned()));
    }
    let starts_an_iban = bytes.len() >= 15
        && bytes[0].is_ascii_alphabetic()
        && bytes[1].is_ascii_alphabetic()
        && bytes[2].is_ascii_digit()
        && bytes[3].is_ascii_digit();
    let country_fits = starts_an_iban
        && iban_length([bytes[0].to_ascii_uppercase(), bytes[1].to_ascii_uppercase()])
            .is_none_or(|wanted| wanted == bytes.len());
    if country_fits && bytes.len() <= 34 {
        let upper = word.to_ascii_uppercase();
        if iban_checks(&upper) {
            return Some(Token::new(Kind::Iban, upper));
        }
    }
    // An IBAN glued to the word after it (`…013000BIC`) is read in general, as is one glued
    // to the end of a word.
    if starts_an_iban || may_glue_an_iban(word) {
        return None;
    }
    Some(Token::new(Kind::Text, word.to_ascii_lowercase()))
}

/// [`whole_reading`] of trimmed text that is not one plain word.
fn whole_in_general(trimmed: &str) -> (Option<Token>, Reading) {
    if !trimmed.contains(char::is_whitespace) {
        let mut found = Vec::new();
        let kind = chunk_tokens(trimmed, &mut found);
        if holds_mark(&found) {
            return (None, Reading::Cut);
        }
        if let Some(kind) = kind
            && let Some(token) = found.into_iter().find(|token| token.kind == kind)
        {
            return (Some(token), Reading::Whole);
        }
    }
    // Text around one address or one IBAN (`Mallory <m@e>`, `IBAN: DE89 …`) is that value.
    let mut inside = Vec::new();
    scan(trimmed, &mut inside);
    if holds_mark(&inside) {
        return (None, Reading::Cut);
    }
    (whole_around(trimmed, inside), Reading::Whole)
}

/// [`whole`] of a text that is no one chunk's value, from the values `inside` it.
fn whole_around(trimmed: &str, inside: Vec<Token>) -> Option<Token> {
    let kinds = |kind| inside.iter().filter(|token| token.kind == kind).count();
    if kinds(Kind::Email) == 1 && kinds(Kind::Url) == 0 && kinds(Kind::Iban) == 0 {
        return inside.into_iter().find(|token| token.kind == Kind::Email);
    }
    if kinds(Kind::Iban) == 1 && kinds(Kind::Email) == 0 {
        return inside.into_iter().find(|token| token.kind == Kind::Iban);
    }
    // The scan above read the numbers and IBANs too.
    let mut found: Vec<Token> = inside
        .into_iter()
        .filter(|token| matches!(token.kind, Kind::Number | Kind::Iban))
        .collect();
    if let [only] = found.as_slice() {
        let digits_only: String = trimmed
            .chars()
            .filter(|c| {
                !matches!(
                    c,
                    ' ' | '-' | '.' | '+' | '(' | ')' | '\u{a0}' | '\u{2010}'
                        ..='\u{2015}' | '\u{2212}'
                )
            })
            .collect();
        let same = match only.kind {
            Kind::Iban => digits_only.eq_ignore_ascii_case(&only.canonical),
            _ => digits_only == only.canonical,
        };
        if same {
            return found.pop();
        }
    }
    Some(Token::new(Kind::Text, folded_text(trimmed)))
}

/// The host of `text` read as a link (a Markdown link's target's), or as a bare host name;
/// and how far `text` was read (as for [`whole_reading`]).
pub(crate) fn host_of(text: &str) -> (Option<Token>, Reading) {
    let text = readable(text, false);
    let trimmed = text.trim();
    let mut found = Vec::new();
    let kind = chunk_tokens(trimmed, &mut found);
    if holds_mark(&found) {
        return (None, Reading::Cut);
    }
    let host = match kind {
        Some(Kind::Url) => found.into_iter().find(|token| token.kind == Kind::Host),
        _ => {
            let host = trimmed.trim_end_matches('.');
            let is_host = !host.is_empty()
                && host.contains('.')
                && host
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.'));
            let host = host.to_lowercase();
            // A bare IPv4 address however written (`0xcb.0.113.5`) is the address it is.
            match ip_hosts::ip_host(&host) {
                _ if !is_host => None,
                ip_hosts::IpHost::AsWritten => Some(Token::new(Kind::Host, host)),
                ip_hosts::IpHost::Respelled(address) => Some(Token::new(Kind::Host, address)),
                ip_hosts::IpHost::Refused => None,
            }
        }
    };
    (host, Reading::Whole)
}

/// Text compared as a person reads it: folded, runs of white space as one space.
fn folded_text(text: &str) -> String {
    fold(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn fold(text: &str) -> String {
    if text
        .bytes()
        .all(|b| !b.is_ascii_uppercase() && b.is_ascii())
    {
        return text.to_owned();
    }
    crate::text::fold_case(text)
}

#[cfg(test)]
mod amount_tests;
#[cfg(test)]
mod fast_reading_tests;
#[cfg(test)]
mod join_tests;
#[cfg(test)]
mod nesting_tests;
#[cfg(test)]
mod tests;
