//! The chunk of text holding a byte the scan stopped at, read for its values: as written,
//! before an escaped quote, and — a link that ends a line — joined with the next line where
//! mail or a page broke it.

use super::chunk_values::chunk_tokens;
use super::chunks::{chunk_end, chunk_start, looks_like_link_rest, next_chunk};
use super::escaped_quotes::before_escaped_quote;
use super::{Kind, Token};

/// Reads the chunk holding byte `inside` (not starting before `floor`); where it ends.
pub(super) fn chunk_at(text: &str, floor: usize, inside: usize, out: &mut Vec<Token>) -> usize {
    let start = chunk_start(text, floor, inside);
    let end = chunk_end(text, inside);
    let chunk = &text[start..end];
    // A value before an escaped quote (`\"m@evil.example\"` in JSON written into JSON, however
    // deep): read also without the backslashes, as a reader sees it (with them, `\` is a
    // browser's `/` in a link, and ends no address).
    let unescaped = before_escaped_quote(text, start, end);
    if unescaped < end && unescaped > start {
        chunk_tokens(&text[start..unescaped], out);
    }
    // A link that ends a line and a line that starts with more of one: also the joined link.
    if chunk_tokens(chunk, out) == Some(Kind::Url)
        && let Some((next_start, next_end)) = next_chunk(text, end)
        && wraps_a_line(&text[end..next_start])
    {
        let next = &text[next_start..next_end];
        // The rest of a link: a chunk carrying what links carry, or any chunk of link characters
        // after a link left open (`…/invoice/`, `…?id=`) or standing alone on its line (a link
        // broken inside a word): an independent attack found those three unjoined. Never one
        // that would change the host: `https://example.com.` and a line `In …` are no
        // `example.com.in` (a second attack: a host anyone can register, named by nobody).
        let left_open = chunk.ends_with(['/', '=', '?', '&', '_', '#', '%']);
        let alone = text[next_end..]
            .chars()
            .next()
            .is_none_or(|c| matches!(c, '\n' | '\r'));
        // A line as long as mail wraps at (76 or 78 characters, less a word) ends where the
        // mail client broke it, not where the link does: `…/invoice/8f3a` then `9c2e1d by Friday`.
        // (Sixty bytes looked at, not the line: a page of one line and many links would read
        // it again for each.)
        let hard_wrapped = end >= 60 && !text.as_bytes()[end - 60..end].contains(&b'\n');
        let rest = looks_like_link_rest(next)
            || (left_open || alone || hard_wrapped) && next.chars().all(|c| c.is_ascii_graphic());
        let host_stays = past_the_host(chunk) || next.starts_with(['/', '?', '#']);
        if rest && host_stays {
            // Kept only where it names no host the chunk did not: a link nested in it
            // (`?u=https://bank.example.` then `To …`) would take the next line into its host
            // (a third attack: `bank.example.to`).
            let joined = format!("{chunk}{next}");
            let (mut as_joined, mut as_written) = (Vec::new(), Vec::new());
            chunk_tokens(&joined, &mut as_joined);
            chunk_tokens(chunk, &mut as_written);
            let host = |token: &&Token| token.kind == Kind::Host;
            if as_joined.iter().filter(host).all(|joined| {
                as_written
                    .iter()
                    .filter(host)
                    .any(|written| written == joined)
            }) {
                out.append(&mut as_joined);
            }
        }
    }
    // Past the character at `inside` at least (a full stop of `HOST_DOTS` is three bytes).
    let after = inside + text[inside..].chars().next().map_or(1, char::len_utf8);
    end.max(after)
}

/// Whether `between` (what separates two chunks) is a line's end as mail wraps lines: spaces
/// (format=flowed's soft break), a line break, then an indent or a reply's `>` marks.
fn wraps_a_line(between: &str) -> bool {
    let rest = between.trim_start_matches([' ', '\t']);
    let after = rest
        .strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'));
    after.is_some_and(|after| {
        after.len() <= 16 && after.chars().all(|c| matches!(c, ' ' | '\t' | '>'))
    })
}

/// Whether `link` (`scheme://…`) goes on past its host: a `/`, `?` or `#` after its authority.
/// Joining more to a link that does not would read a host nobody wrote.
fn past_the_host(link: &str) -> bool {
    link.find("://")
        .is_some_and(|at| link[at + 3..].contains(['/', '?', '#']))
}
