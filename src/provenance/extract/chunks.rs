//! Where a chunk of text begins and ends: white space, controls, quotes and brackets separate
//! values; a host's dots written as CJK or fullwidth full stops do not; and the punctuation a
//! sentence puts after a value is not part of it.

/// Whether `c` separates chunks: white space, controls, and quotes and angle brackets, which
/// never belong to a value.
#[inline]
pub(super) fn separates(c: char) -> bool {
    match u8::try_from(c) {
        Ok(byte) if byte.is_ascii() => SEPARATES[usize::from(byte)],
        _ => c.is_whitespace() || c.is_control() || is_closing_punctuation(c),
    }
}

/// [`separates`] of each ASCII byte: white space, controls, `"`, `<`, `>`, `` ` `` and `|`.
static SEPARATES: [bool; 128] = {
    let mut table = [false; 128];
    let mut byte = 0;
    while byte < 128 {
        let c = byte as u8;
        table[byte] = c.is_ascii_whitespace()
            || c.is_ascii_control()
            || matches!(c, b'"' | b'<' | b'>' | b'`' | b'|');
        byte += 1;
    }
    table
};

/// A byte's class for the scan: a digit, one without which a chunk holds no link, address,
/// path or handle (what `chunk_tokens` looks for first: a scheme's `:`, `@`, `#`, `/`, `\\`,
/// `~`, a dot), or neither (0).
pub(super) static BYTE_CLASS: [u8; 256] = {
    let mut table = [0; 256];
    let mut index = 0;
    let bytes = b":@#/\\~.";
    while index < bytes.len() {
        table[bytes[index] as usize] = CHUNK;
        index += 1;
    }
    let mut digit = b'0';
    while digit <= b'9' {
        table[digit as usize] = DIGIT;
        digit += 1;
    }
    table[0xE3] = FULL_STOP_LEAD;
    table[0xEF] = FULL_STOP_LEAD;
    table
};
/// Where the next byte of a class ([`BYTE_CLASS`] not 0) is, at `from` or after.
///
/// Most of a text is words: eight bytes at a time are passed over while each is an ASCII letter,
/// a space or NUL (none of which has a class, see [`is_plain`]), then the bytes of the first
/// eight that are not are looked up one by one.
#[inline]
pub(super) fn next_classified(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(eight) = bytes.get(at..at + 8) {
        let word = u64::from_ne_bytes(eight.try_into().unwrap_or([0xFF; 8]));
        if !is_plain(word)
            && let Some(found) = eight
                .iter()
                .position(|byte| BYTE_CLASS[usize::from(*byte)] != 0)
        {
            return Some(at + found);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter()
        .position(|byte| BYTE_CLASS[usize::from(*byte)] != 0)
        .map(|found| at + found)
}

/// Whether each of the eight bytes of `word` is an ASCII letter, a space or NUL.
#[inline]
fn is_plain(word: u64) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = ONES * 0x80;
    // Per byte, each sum stays below 0x100 while the byte is below 0x80, so no carry crosses
    // bytes (a byte from 0x80 is not plain whatever its neighbours read): a letter, folded to
    // lower case (`@` becomes `` ` ``), is within `a..=z`; a space or NUL, folded to a space, is
    // zero after `^ 0x20`, and only zero stays below 0x80 once 0x7F is added.
    let folded = word | (ONES * 0x20);
    let at_least_a = folded.wrapping_add(ONES * (0x80 - 0x61));
    let past_z = folded.wrapping_add(ONES * (0x80 - 0x7B));
    let letters = at_least_a & !past_z;
    let not_space = (folded ^ (ONES * 0x20)).wrapping_add(ONES * 0x7F);
    (letters | !not_space) & !word & HIGHS == HIGHS
}

/// Which of the bytes a chunk's readings look for the chunk holds, found in one pass: the later
/// readings each skip their own search when their byte is absent.
#[derive(Debug, Clone, Copy)]
pub(super) struct Marks(u8);

impl Marks {
    /// `:`.
    pub(super) const COLON: u8 = 1;
    /// `@`, `#`, `/`, `\\` or `~`.
    pub(super) const SIGN: u8 = 2;
    /// `.`.
    pub(super) const DOT: u8 = 4;
    /// `]`.
    pub(super) const CLOSE_BRACKET: u8 = 8;
    /// `%`.
    pub(super) const PERCENT: u8 = 16;
    /// A byte of a character past ASCII.
    pub(super) const NOT_ASCII: u8 = 32;

    pub(super) fn of(bytes: &[u8]) -> Self {
        Self(
            bytes
                .iter()
                .fold(0, |marks, &byte| marks | MARKS[usize::from(byte)]),
        )
    }

    /// Whether any of `marks` was found.
    pub(super) fn any(self, marks: u8) -> bool {
        self.0 & marks != 0
    }
}

/// Each byte's [`Marks`].
static MARKS: [u8; 256] = {
    let mut table = [0; 256];
    table[b':' as usize] = Marks::COLON;
    let signs = b"@#/\\~";
    let mut index = 0;
    while index < signs.len() {
        table[signs[index] as usize] = Marks::SIGN;
        index += 1;
    }
    table[b'.' as usize] = Marks::DOT;
    table[b']' as usize] = Marks::CLOSE_BRACKET;
    table[b'%' as usize] = Marks::PERCENT;
    let mut byte = 0x80;
    while byte < 0x100 {
        table[byte] = Marks::NOT_ASCII;
        byte += 1;
    }
    table
};

pub(super) const CHUNK: u8 = 1;
pub(super) const DIGIT: u8 = 2;
/// The first byte of U+3002 (ideographic full stop) or of U+FF0E / U+FF61 (fullwidth, halfwidth).
pub(super) const FULL_STOP_LEAD: u8 = 3;

/// Whether the bytes at `at` are a host's dot spelled as an ideographic, fullwidth or halfwidth
/// full stop (see [`HOST_DOTS`]) between two ASCII letters or digits, as [`separates_at`] reads
/// one: it starts a chunk as `.` does.
pub(super) fn host_full_stop_at(bytes: &[u8], at: usize) -> bool {
    let full_stop = matches!(
        bytes.get(at..at + 3),
        Some([0xE3, 0x80, 0x82] | [0xEF, 0xBC, 0x8E] | [0xEF, 0xBD, 0xA1])
    );
    full_stop
        && at > 0
        && bytes[at - 1].is_ascii_alphanumeric()
        && bytes.get(at + 3).is_some_and(u8::is_ascii_alphanumeric)
}

/// The full stops browsers read as a host's dots (WHATWG URL, after IDNA mapping): the
/// ideographic, fullwidth and halfwidth ones.
pub(super) const HOST_DOTS: [char; 3] = ['\u{3002}', '\u{FF0E}', '\u{FF61}'];

/// Whether the character at byte `at` of `text` separates chunks: as [`separates`] says, but a
/// full stop of [`HOST_DOTS`] between two ASCII letters or digits is a host's dot
/// (`evil。example`), not the end of a sentence.
#[inline]
pub(super) fn separates_at(text: &str, at: usize, c: char) -> bool {
    if c.is_ascii() || !HOST_DOTS.contains(&c) {
        return separates(c);
    }
    let before = text[..at].chars().next_back();
    let after = text[at + c.len_utf8()..].chars().next();
    !(before.is_some_and(|b| b.is_ascii_alphanumeric())
        && after.is_some_and(|a| a.is_ascii_alphanumeric()))
}

/// Whether the byte at `at` is a `.` that alone would not make its chunk worth reading: no
/// letter or digit follows it (the end of a sentence, `e.g.`), and it ends no `www`. A chunk
/// holding anything else `chunk_tokens` looks for holds a byte that starts a read itself — but
/// for a host's dots spelled as other full stops, which only non-ASCII text holds.
pub(super) fn ends_a_sentence(bytes: &[u8], at: usize) -> bool {
    bytes[at] == b'.'
        && !bytes.get(at + 1).is_some_and(u8::is_ascii_alphanumeric)
        && !(at >= 3 && bytes[at - 3..at].eq_ignore_ascii_case(b"www"))
}

/// Whether the byte at `at` is a `:` ending its chunk (white space or the text's end after it):
/// a label's (`Paragraph 12:`, `Note:`), which alone makes no chunk worth reading — a scheme or a
/// port needs something after it, and the chunk's other bytes that `chunk_tokens` looks for
/// start a read themselves (in ASCII text).
pub(super) fn ends_a_label(bytes: &[u8], at: usize) -> bool {
    bytes[at] == b':' && bytes.get(at + 1).is_none_or(u8::is_ascii_whitespace)
}

/// Where the chunk holding byte `inside` starts: after the last separator before it, and not
/// before `floor`.
pub(super) fn chunk_start(text: &str, floor: usize, inside: usize) -> usize {
    // Fast path: ASCII bytes judged as bytes, back to the first other character.
    let bytes = text.as_bytes();
    let mut start = inside;
    while start > floor && bytes[start - 1].is_ascii() {
        if SEPARATES[usize::from(bytes[start - 1])] {
            return start;
        }
        start -= 1;
    }
    chunk_start_by_chars(text, floor, start)
}

/// Where the chunk holding byte `inside` ends: at the first separator after it.
pub(super) fn chunk_end(text: &str, inside: usize) -> usize {
    // Fast path: ASCII bytes judged as bytes, until the first other character.
    let bytes = text.as_bytes();
    let mut at = inside;
    while at < bytes.len() && bytes[at].is_ascii() {
        if SEPARATES[usize::from(bytes[at])] {
            return at;
        }
        at += 1;
    }
    chunk_end_by_chars(text, at)
}

/// [`chunk_start`] read character by character: past the fast path's ASCII, and its reference.
fn chunk_start_by_chars(text: &str, floor: usize, inside: usize) -> usize {
    let mut start = inside;
    for (offset, c) in text[floor..inside].char_indices().rev() {
        if separates_at(text, floor + offset, c) {
            break;
        }
        start = floor + offset;
    }
    start
}

/// [`chunk_end`] read character by character: past the fast path's ASCII, and its reference.
fn chunk_end_by_chars(text: &str, inside: usize) -> usize {
    text[inside..]
        .char_indices()
        .find(|&(offset, c)| separates_at(text, inside + offset, c))
        .map_or(text.len(), |(offset, _)| inside + offset)
}

/// The chunk after byte `from` (a separator or the end), as its start and end.
pub(super) fn next_chunk(text: &str, from: usize) -> Option<(usize, usize)> {
    let start = from + text[from..].char_indices().find(|&(_, c)| !separates(c))?.0;
    Some((start, chunk_end(text, start)))
}

/// Whether `next` can be the rest of a link broken at a line end: no sentence punctuation
/// before its end, and a character links carry and words do not.
pub(super) fn looks_like_link_rest(next: &str) -> bool {
    next.chars()
        .any(|c| matches!(c, '/' | '=' | '&' | '?' | '%' | '#' | '_'))
        && next.chars().all(|c| c.is_ascii_graphic())
}

/// Trailing punctuation a sentence puts after a value; a closing bracket only when the value
/// opens none.
pub(super) fn trim_trailing(mut value: &str) -> &str {
    // The brackets counted once (not at every character stripped: a run of `)` would cost
    // quadratic time), then kept in step as characters go.
    // Counted only when a closing bracket ends the value: most values end in a letter.
    let count = |value: &str| {
        value.chars().fold([0_i64; 3], |mut balance, c| {
            match c {
                '(' => balance[0] += 1,
                ')' => balance[0] -= 1,
                '[' => balance[1] += 1,
                ']' => balance[1] -= 1,
                '{' => balance[2] += 1,
                '}' => balance[2] -= 1,
                _ => {}
            }
            balance
        })
    };
    let mut counted: Option<[i64; 3]> = None;
    loop {
        let Some(last) = value.chars().last() else {
            return value;
        };
        if last.is_ascii_alphanumeric() || last == '/' {
            return value;
        }
        let mut balance = |at: usize| counted.get_or_insert_with(|| count(value))[at] < 0;
        let strip = match last {
            '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '*' | '_' | '|' => true,
            ')' => balance(0),
            ']' => balance(1),
            '}' => balance(2),
            c => is_closing_punctuation(c),
        };
        if !strip {
            return value;
        }
        if let Some(balance) = &mut counted {
            match last {
                ')' => balance[0] += 1,
                ']' => balance[1] += 1,
                '}' => balance[2] += 1,
                _ => {}
            }
        }
        value = &value[..value.len() - last.len_utf8()];
    }
}

/// Quotation marks and sentence punctuation outside ASCII, which end a value as `"` and `.` do
/// (typographic quotes, guillemets, CJK brackets and full stops).
fn is_closing_punctuation(c: char) -> bool {
    matches!(
        c,
        '\u{2018}'..='\u{201F}'
            | '\u{00AB}'
            | '\u{00BB}'
            | '\u{2039}'
            | '\u{203A}'
            | '\u{3001}'..='\u{3003}'
            | '\u{3008}'..='\u{3011}'
            | '\u{3014}'..='\u{301B}'
            | '\u{FF01}'
            | '\u{FF0C}'
            | '\u{FF1A}'
            | '\u{FF1B}'
            | '\u{FF1F}'
            | '\u{2026}'
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Text of ASCII words and of every kind of character the bounds treat apart: separators in
    /// and outside ASCII, the host dots, closing punctuation, letters of other scripts.
    fn mixed_text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "a", "Z", "9", ".", ":", "@", "/", " ", "\t", "\n", "\"", "<", "|", "\u{0}", "é", "日",
            "\u{3002}", "\u{FF0E}", "\u{FF61}", "\u{201D}", "\u{3001}", "\u{A0}", "\u{2028}",
            "\u{85}", "\u{200B}",
        ]);
        prop::collection::vec(pieces, 0..40).prop_map(|pieces| pieces.concat())
    }

    /// Bytes of every kind the word-at-a-time search tells apart: letters of both cases and the
    /// bytes beside their ranges (`@`, `[`, `` ` ``, `{`), space, NUL, the classed bytes, and
    /// bytes from 0x80 (lead and continuation bytes, 0xE3 and 0xEF).
    fn bytes_of_every_kind() -> impl Strategy<Value = Vec<u8>> {
        let chosen = prop::sample::select(vec![
            b'a', b'z', b'A', b'Z', b'm', b'@', b'[', b'`', b'{', b' ', 0, b'\n', b',', b'!', b'#',
            b'.', b'/', b'0', b'9', b':', b'\\', b'~', 0x7F, 0x80, 0xA0, 0xE3, 0xEF, 0xFF, 0x1F,
            0x21, 0x5C, 0x5F, 0x60, 0x7B, 0xC1, 0xE1,
        ]);
        let byte = prop_oneof![chosen, any::<u8>()];
        prop::collection::vec(byte, 0..48)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5_000))]
        #[test]
        fn the_word_at_a_time_search_finds_the_byte_the_byte_search_finds(
            bytes in bytes_of_every_kind(),
            from_pick in any::<prop::sample::Index>(),
        ) {
            let from = from_pick.index(bytes.len() + 1);
            let byte_by_byte = bytes[from..]
                .iter()
                .position(|byte| BYTE_CLASS[usize::from(*byte)] != 0)
                .map(|found| from + found);
            prop_assert_eq!(next_classified(&bytes, from), byte_by_byte);
        }
    }

    /// What [`is_plain`] must say of one byte: an ASCII letter, a space or NUL.
    fn plain_byte(byte: u8) -> bool {
        byte.is_ascii_alphabetic() || byte == b' ' || byte == 0
    }

    #[test]
    fn eight_bytes_are_plain_exactly_when_each_is_a_letter_a_space_or_nul() {
        // Every byte value, then every pair of byte values, in every lane, among each plain
        // filler: a rule looser than the one byte's lets a classed byte be passed over; a
        // stricter one reads every word byte by byte. Words of one byte repeated too.
        let fillers = [b'a', b'z', b'A', b'Z', b'm', b' ', 0];
        for byte in 0..=u8::MAX {
            assert_eq!(
                is_plain(u64::from_ne_bytes([byte; 8])),
                plain_byte(byte),
                "{byte:#x}"
            );
            for filler in fillers {
                for lane in 0..8 {
                    let mut word = [filler; 8];
                    word[lane] = byte;
                    assert_eq!(
                        is_plain(u64::from_ne_bytes(word)),
                        plain_byte(byte),
                        "{byte:#x} in lane {lane} among {filler:#x}"
                    );
                }
            }
        }
        for first in 0..=u8::MAX {
            for second in 0..=u8::MAX {
                for (one, other) in [(0, 1), (3, 4), (6, 7), (0, 7), (2, 5)] {
                    let mut word = [b' '; 8];
                    word[one] = first;
                    word[other] = second;
                    assert_eq!(
                        is_plain(u64::from_ne_bytes(word)),
                        plain_byte(first) && plain_byte(second),
                        "{first:#x} in lane {one}, {second:#x} in lane {other}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_word_at_a_time_search_stops_at_each_classed_byte_wherever_it_stands() {
        // Every byte value at every position of a run of letters long enough for three words.
        for byte in 0..=u8::MAX {
            for at in 0..24 {
                let mut bytes = b"abcdefghijklmnopqrstuvwxyzABCD".to_vec();
                bytes[at] = byte;
                let expected = (BYTE_CLASS[usize::from(byte)] != 0).then_some(at);
                assert_eq!(next_classified(&bytes, 0), expected, "{byte:#x} at {at}");
            }
        }
    }

    #[test]
    fn a_chunk_is_marked_with_the_marks_of_each_byte_it_holds_and_no_other() {
        let mark_of = |byte: u8| match byte {
            b':' => Marks::COLON,
            b'@' | b'#' | b'/' | b'\\' | b'~' => Marks::SIGN,
            b'.' => Marks::DOT,
            b']' => Marks::CLOSE_BRACKET,
            b'%' => Marks::PERCENT,
            0x80.. => Marks::NOT_ASCII,
            _ => 0,
        };
        for byte in 0..=u8::MAX {
            for mark in [1, 2, 4, 8, 16, 32] {
                let bytes = [b'a', byte, b'z'];
                assert_eq!(
                    Marks::of(&bytes).any(mark),
                    mark_of(byte) == mark,
                    "{byte:#x}, mark {mark}"
                );
            }
        }
        // The marks of several bytes are each one's.
        let marks = Marks::of(b"a:b]c");
        assert!(marks.any(Marks::COLON) && marks.any(Marks::CLOSE_BRACKET));
        assert!(!marks.any(Marks::DOT | Marks::SIGN | Marks::PERCENT | Marks::NOT_ASCII));
        assert!(!Marks::of(b"").any(u8::MAX));
    }

    proptest! {
        #[test]
        fn the_byte_reading_of_chunk_bounds_agrees_with_the_character_reading(
            text in mixed_text(),
            floor_pick in any::<prop::sample::Index>(),
        ) {
            let boundaries: Vec<usize> = (0..=text.len())
                .filter(|&at| text.is_char_boundary(at))
                .collect();
            for &inside in &boundaries {
                if inside < text.len() {
                    prop_assert_eq!(chunk_end(&text, inside), chunk_end_by_chars(&text, inside));
                }
                let below: Vec<usize> = boundaries.iter().copied().filter(|&at| at <= inside).collect();
                let floor = below[floor_pick.index(below.len())];
                prop_assert_eq!(
                    chunk_start(&text, floor, inside),
                    chunk_start_by_chars(&text, floor, inside)
                );
            }
        }
    }
}
