//! A text as its reader decodes it: HTML character references (`&#64;`, `&#x2e;`, `&period;`,
//! `&nbsp;`) and the backslash escapes of JSON, JavaScript and Python strings (`\n`, `\u00a0`,
//! `\x40`, `\u{1F600}`). A web page a tool fetched, or a JSON document a tool returned as text,
//! shows the model `eve@evil.example` where its bytes say `eve&#64;evil&#46;example` — the value
//! the model copies into a call is the decoded one.
//!
//! Decoded left to right, as a browser and a JSON parser do: `&amp;#46;` is `&#46;`, and `\\n`
//! is a backslash and an `n` — and then again, up to [`MOST_ROUNDS`] times ([`decodings`]), as a
//! reader reads through a JSON document carried as a string of another.
//!
//! - Escapes: JSON's (`\n`, `\"`, `\u0040` and surrogate pairs), `\x40`, `\u{40}` (leading
//!   zeros too, up to 16 digits), Python's `\U00000040` and octal `\100`.
//! - Numeric references, as HTML reads them: the `;` may be left out; `0`, surrogates and values
//!   past U+10FFFF are U+FFFD; 128–159 are the Windows-1252 characters browsers show (`&#150;`
//!   is `–`).
//! - Named references: those of [`NAMED`] — every ASCII punctuation mark, spaces, dashes, quotes,
//!   invisible characters and currency signs, named as HTML names them (case-sensitive). The `;`
//!   is required but for HTML's legacy names among them ([`LEGACY`]: `&amp`, `&nbsp`, `&shy`).
//!   HTML's other names (accented letters, arrows, mathematics) are not decoded.
//!
//! A decoded text is never longer than the text: every reference and escape is at least as long
//! as what it stands for (a property test holds it).

/// Whether `text` holds a byte a reference or an escape starts with (`&` or `\`): most texts hold
/// neither, and are then not decoded (see [`starts`]).
pub(crate) fn may_hold_references(text: &str) -> bool {
    starts(text).references
}

/// What a text holds that a further reading of it starts from: a reference or an escape (`&`,
/// `\`), or a quote (a JSON string, see `provenance::json_text`). Looked for 64 bytes at a time,
/// with no branch inside, so the compiler compares them all at once (two searches of the
/// standard library's, one for each byte, cost 4% of recording a 10 KB page's values); most
/// texts hold none of them, and one pass for both costs less than two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Starts {
    pub(crate) references: bool,
    pub(crate) quotes: bool,
}

/// [`Starts`] of `text`.
pub(crate) fn starts(text: &str) -> Starts {
    const REFERENCE: u8 = 1;
    const QUOTE: u8 = 2;
    let marks = |bytes: &[u8]| {
        bytes.iter().fold(0_u8, |found, &byte| {
            found | u8::from(byte == b'&') | u8::from(byte == b'\\') | (u8::from(byte == b'"') << 1)
        })
    };
    let mut found = 0;
    let mut blocks = text.as_bytes().chunks_exact(64);
    for block in blocks.by_ref() {
        found |= marks(block);
        if found == REFERENCE | QUOTE {
            break;
        }
    }
    found |= marks(blocks.remainder());
    Starts {
        references: found & REFERENCE != 0,
        quotes: found & QUOTE != 0,
    }
}

/// How many times a text is decoded at most: a JSON document carried as a string of another
/// (its escapes doubled), carried in a third, four deep.
pub(crate) const MOST_ROUNDS: usize = 4;

/// The spellings decoding `text` again and again gives, in order, each differing from the one
/// before, [`MOST_ROUNDS`] at most: a reader of a document carried in another reads through both.
pub(crate) fn decodings(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    while out.len() < MOST_ROUNDS {
        let Some(next) = decoded(out.last().map_or(text, String::as_str)) else {
            break;
        };
        out.push(next);
    }
    out
}

/// `text` with its character references and escapes decoded once, if it holds any.
pub(crate) fn decoded(text: &str) -> Option<String> {
    if !may_hold_references(text) {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    let mut any = false;
    while at < bytes.len() {
        let found: Option<(Decoded, usize)> = match bytes[at] {
            b'&' => reference_at(text, at),
            b'\\' => escape_at(text, at),
            _ => None,
        };
        match found {
            Some((decoded, end)) => {
                out.push_str(&text[copied..at]);
                decoded.push_to(&mut out);
                copied = end;
                at = end;
                any = true;
            }
            // `&` and `\` are ASCII: the next byte starts a character.
            None => at += 1,
        }
    }
    out.push_str(&text[copied..]);
    any.then_some(out)
}

/// The character the reference starting at `at` (an `&`) stands for, and where it ends.
fn reference_at(text: &str, at: usize) -> Option<(Decoded, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at + 1) == Some(&b'#') {
        let hex = matches!(bytes.get(at + 2), Some(b'x' | b'X'));
        let digits_from = at + 2 + usize::from(hex);
        let radix = if hex { 16 } else { 10 };
        let digits = bytes[digits_from..]
            .iter()
            .take_while(|byte| char::from(**byte).is_digit(radix))
            .count();
        if digits == 0 {
            return None;
        }
        let value = bytes[digits_from..digits_from + digits]
            .iter()
            .fold(0_u32, |value, byte| {
                let digit = char::from(*byte).to_digit(radix).unwrap_or(0);
                // Past U+10FFFF a value only stays past it.
                value
                    .saturating_mul(radix)
                    .saturating_add(digit)
                    .min(0x11_0000)
            });
        let end = digits_from + digits;
        let end = end + usize::from(bytes.get(end) == Some(&b';'));
        return Some((Decoded::Char(numeric(value)), end));
    }
    let name_length = bytes[at + 1..]
        .iter()
        .take(LONGEST_NAME + 1)
        .take_while(|byte| byte.is_ascii_alphanumeric())
        .count();
    let name = &text[at + 1..at + 1 + name_length];
    let end = at + 1 + name_length;
    if bytes.get(end) == Some(&b';')
        && let Ok(found) = NAMED.binary_search_by(|(known, _)| known.cmp(&name))
    {
        return Some((Decoded::Text(NAMED[found].1), end + 1));
    }
    // The few names HTML reads without their `;`, each at its own length (`&ampx` is `&x`).
    LEGACY
        .iter()
        .find(|(legacy, _)| name.starts_with(legacy))
        .map(|(legacy, c)| (Decoded::Text(c), at + 1 + legacy.len()))
}

/// The character a numeric reference's value stands for, as HTML reads it.
fn numeric(value: u32) -> char {
    if (0x80..=0x9F).contains(&value) {
        return WINDOWS_1252[(value - 0x80) as usize];
    }
    if value == 0 {
        return char::REPLACEMENT_CHARACTER;
    }
    char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The character the escape starting at `at` (a `\`) stands for, and where it ends.
fn escape_at(text: &str, at: usize) -> Option<(Decoded, usize)> {
    let bytes = text.as_bytes();
    let simple = match bytes.get(at + 1)? {
        b'n' => Some('\n'),
        b'r' => Some('\r'),
        b't' => Some('\t'),
        b'b' => Some('\u{8}'),
        b'f' => Some('\u{c}'),
        b'"' => Some('"'),
        b'\'' => Some('\''),
        b'\\' => Some('\\'),
        b'/' => Some('/'),
        _ => None,
    };
    if let Some(c) = simple {
        return Some((Decoded::Char(c), at + 2));
    }
    let (value, end) = match bytes[at + 1] {
        b'x' => (hex_value(bytes.get(at + 2..at + 4)?)?, at + 4),
        // Python's eight digits.
        b'U' => (hex_value(bytes.get(at + 2..at + 10)?)?, at + 10),
        // JavaScript's code point: leading zeros are digits too.
        b'u' if bytes.get(at + 2) == Some(&b'{') => {
            let digits = bytes[at + 3..]
                .iter()
                .take(MOST_BRACED_DIGITS + 1)
                .take_while(|byte| byte.is_ascii_hexdigit())
                .count();
            if digits == 0
                || digits > MOST_BRACED_DIGITS
                || bytes.get(at + 3 + digits) != Some(&b'}')
            {
                return None;
            }
            let significant = bytes[at + 3..at + 3 + digits]
                .iter()
                .skip_while(|&&byte| byte == b'0')
                .copied()
                .collect::<Vec<u8>>();
            let value = if significant.is_empty() {
                0
            } else {
                hex_value(&significant).unwrap_or(u32::MAX)
            };
            (value, at + 4 + digits)
        }
        b'u' => {
            let unit = hex_value(bytes.get(at + 2..at + 6)?)?;
            // A high surrogate and the low one after it are one character.
            if (0xD800..0xDC00).contains(&unit)
                && bytes.get(at + 6..at + 8) == Some(b"\\u")
                && let Some(low) = bytes.get(at + 8..at + 12).and_then(hex_value)
                && (0xDC00..0xE000).contains(&low)
            {
                let value = 0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                (value, at + 12)
            } else {
                (unit, at + 6)
            }
        }
        // Python's and C's octal: one to three digits, up to `\377`.
        b'0'..=b'7' => {
            let digits = bytes[at + 1..]
                .iter()
                .take(3)
                .take_while(|byte| matches!(byte, b'0'..=b'7'))
                .count();
            let value = bytes[at + 1..at + 1 + digits]
                .iter()
                .fold(0_u32, |value, byte| value * 8 + u32::from(byte - b'0'));
            (value, at + 1 + digits)
        }
        _ => return None,
    };
    Some((Decoded::Char(numeric_escape(value)), end))
}

/// The most digits of a `\u{…}` escape, leading zeros included (more is no escape: the text
/// stays as written).
const MOST_BRACED_DIGITS: usize = 16;

/// What a reference or an escape stands for: one character, or a named reference's text.
#[derive(Clone, Copy)]
enum Decoded {
    Char(char),
    Text(&'static str),
}

impl Decoded {
    fn push_to(self, out: &mut String) {
        match self {
            Self::Char(c) => out.push(c),
            Self::Text(text) => out.push_str(text),
        }
    }
}

/// The character an escape's value stands for: itself, or U+FFFD for a lone surrogate or a
/// value past U+10FFFF.
fn numeric_escape(value: u32) -> char {
    char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The value of hex digits (all of them must be), at most eight.
fn hex_value(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    digits.iter().try_fold(0_u32, |value, byte| {
        let digit = char::from(*byte).to_digit(16)?;
        Some(value << 4 | digit)
    })
}

/// What browsers show for the numeric references 128–159 (Windows-1252; its five unused bytes
/// are the C1 controls they name).
const WINDOWS_1252: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8D}', 'Ž', '\u{8F}',
    '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9D}', 'ž', 'Ÿ',
];

/// The names HTML reads without their `;` that are decoded here so: those of [`NAMED`] HTML
/// keeps for pages written before the `;` was required (its "legacy" names), longest first, so
/// `&curren` is not read as `&cur…`.
const LEGACY: [(&str, &str); 14] = [
    ("curren", "¤"),
    ("pound", "£"),
    ("QUOT", "\""),
    ("cent", "¢"),
    ("nbsp", "\u{a0}"),
    ("quot", "\""),
    ("AMP", "&"),
    ("amp", "&"),
    ("shy", "\u{ad}"),
    ("yen", "¥"),
    ("GT", ">"),
    ("LT", "<"),
    ("gt", ">"),
    ("lt", "<"),
];

/// The longest name of [`NAMED`].
const LONGEST_NAME: usize = 21;

/// The named references decoded, sorted by name (bytes): HTML's name for each ASCII punctuation
/// mark and white space character, and for the spaces, dashes, quotes, invisible characters and
/// currency signs a value may be spelled with.
pub(crate) const NAMED: [(&str, &str); 106] = [
    ("AMP", "&"),
    ("ApplyFunction", "\u{2061}"),
    ("CloseCurlyDoubleQuote", "”"),
    ("CloseCurlyQuote", "’"),
    ("DiacriticalGrave", "`"),
    ("GT", ">"),
    ("Hat", "^"),
    ("InvisibleComma", "\u{2063}"),
    ("InvisibleSeparator", "\u{2063}"),
    ("InvisibleTimes", "\u{2062}"),
    ("LT", "<"),
    ("MediumSpace", "\u{205f}"),
    ("NegativeMediumSpace", "\u{200b}"),
    ("NegativeThickSpace", "\u{200b}"),
    ("NegativeThinSpace", "\u{200b}"),
    ("NegativeVeryThinSpace", "\u{200b}"),
    ("NewLine", "\n"),
    ("NoBreak", "\u{2060}"),
    ("NonBreakingSpace", "\u{a0}"),
    ("OpenCurlyDoubleQuote", "“"),
    ("OpenCurlyQuote", "‘"),
    ("QUOT", "\""),
    ("Tab", "\t"),
    ("ThickSpace", "\u{205f}\u{200a}"),
    ("ThinSpace", "\u{2009}"),
    ("UnderBar", "_"),
    ("VerticalLine", "|"),
    ("VeryThinSpace", "\u{200a}"),
    ("ZeroWidthSpace", "\u{200b}"),
    ("af", "\u{2061}"),
    ("amp", "&"),
    ("apos", "'"),
    ("ast", "*"),
    ("bdquo", "„"),
    ("bsol", "\\"),
    ("cent", "¢"),
    ("colon", ":"),
    ("comma", ","),
    ("commat", "@"),
    ("curren", "¤"),
    ("dash", "‐"),
    ("dollar", "$"),
    ("emsp", "\u{2003}"),
    ("emsp13", "\u{2004}"),
    ("emsp14", "\u{2005}"),
    ("ensp", "\u{2002}"),
    ("equals", "="),
    ("euro", "€"),
    ("excl", "!"),
    ("grave", "`"),
    ("gt", ">"),
    ("hairsp", "\u{200a}"),
    ("horbar", "―"),
    ("hyphen", "‐"),
    ("ic", "\u{2063}"),
    ("it", "\u{2062}"),
    ("laquo", "«"),
    ("lbrace", "{"),
    ("lbrack", "["),
    ("lcub", "{"),
    ("ldquo", "“"),
    ("ldquor", "„"),
    ("lowbar", "_"),
    ("lpar", "("),
    ("lrm", "\u{200e}"),
    ("lsaquo", "‹"),
    ("lsqb", "["),
    ("lsquo", "‘"),
    ("lsquor", "‚"),
    ("lt", "<"),
    ("mdash", "—"),
    ("midast", "*"),
    ("minus", "−"),
    ("nbsp", "\u{a0}"),
    ("ndash", "–"),
    ("num", "#"),
    ("numsp", "\u{2007}"),
    ("percnt", "%"),
    ("period", "."),
    ("plus", "+"),
    ("pound", "£"),
    ("puncsp", "\u{2008}"),
    ("quest", "?"),
    ("quot", "\""),
    ("raquo", "»"),
    ("rbrace", "}"),
    ("rbrack", "]"),
    ("rcub", "}"),
    ("rdquo", "”"),
    ("rdquor", "”"),
    ("rlm", "\u{200f}"),
    ("rpar", ")"),
    ("rsaquo", "›"),
    ("rsqb", "]"),
    ("rsquo", "’"),
    ("rsquor", "’"),
    ("sbquo", "‚"),
    ("semi", ";"),
    ("shy", "\u{ad}"),
    ("sol", "/"),
    ("thinsp", "\u{2009}"),
    ("verbar", "|"),
    ("vert", "|"),
    ("yen", "¥"),
    ("zwj", "\u{200d}"),
    ("zwnj", "\u{200c}"),
];

#[cfg(test)]
#[path = "references_tests.rs"]
mod tests;
