//! A text's lines, as [`str::lines`] reads them, found sixteen bytes at a time: a result's lines are
//! each read whole when short, and the library's search for each line's end cost more than
//! reading the rest of a 10 KB page's values.

/// The lines of `text`, as [`str::lines`] yields them: split at each `\n`, a `\r` before it
/// dropped (a `\r` elsewhere kept), no empty last line after a final `\n`.
pub(crate) fn lines(text: &str) -> Lines<'_> {
    Lines { rest: Some(text) }
}

/// The iterator of [`lines`].
#[derive(Debug, Clone)]
pub(crate) struct Lines<'a> {
    rest: Option<&'a str>,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        if rest.is_empty() {
            self.rest = None;
            return None;
        }
        match newline(rest.as_bytes()) {
            // `\n` is a whole character: both sides are text.
            Some(at) => {
                self.rest = Some(&rest[at + 1..]);
                let line = &rest[..at];
                Some(line.strip_suffix('\r').unwrap_or(line))
            }
            // A `\r` ends a line only before `\n`.
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// Where the first `\n` of `bytes` is: sixteen bytes at a time, then the rest one by one.
fn newline(bytes: &[u8]) -> Option<usize> {
    let (sixteens, rest) = bytes.as_chunks::<16>();
    let found = sixteens.iter().position(|sixteen| {
        let [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p] = *sixteen;
        holds_newline(u64::from_ne_bytes([a, b, c, d, e, f, g, h]))
            | holds_newline(u64::from_ne_bytes([i, j, k, l, m, n, o, p]))
    });
    let (from, within) = match found {
        Some(index) => (16 * index, &sixteens[index][..]),
        None => (16 * sixteens.len(), rest),
    };
    within
        .iter()
        .position(|&byte| byte == b'\n')
        .map(|at| from + at)
}

/// Whether one of the eight bytes of `word` is `\n`. A byte of `word ^ "\n\n…"` is zero exactly
/// where `\n` is; the test may also flag a byte after a zero one (a borrow), but never flags a
/// word without one, and never misses one.
fn holds_newline(word: u64) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = ONES * 0x80;
    let zeros = word ^ (ONES * u64::from(b'\n'));
    zeros.wrapping_sub(ONES) & !zeros & HIGHS != 0
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn lines_are_the_librarys_lines(
            text in prop::collection::vec(
                prop::sample::select(vec!["\n", "\r", "\r\n", "a", "é", "\u{0B}", "\t", "abcdefghij", "\n\n", "\u{10A}"]),
                0..40,
            ).prop_map(|pieces| pieces.concat()),
        ) {
            prop_assert_eq!(lines(&text).collect::<Vec<_>>(), text.lines().collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_first_newline_is_found_wherever_it_stands_among_any_bytes() {
        // `\n` at each place of two sixteens and a rest, among every other byte value (a borrow
        // from a zero byte flags the byte after it: 0x0B is `\n ^ 0x01`).
        for other in (0..=u8::MAX).filter(|&byte| byte != b'\n') {
            let mut bytes = vec![other; 40];
            assert_eq!(newline(&bytes), None, "{other:#x}");
            for at in 0..40 {
                bytes = vec![other; 40];
                bytes[at] = b'\n';
                assert_eq!(newline(&bytes), Some(at), "{other:#x} at {at}");
                if at + 1 < 40 {
                    bytes[at + 1] = b'\n';
                    assert_eq!(newline(&bytes), Some(at), "two from {at}");
                }
            }
        }
    }
}
