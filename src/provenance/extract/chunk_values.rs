//! The values of one chunk of text (a run between separators): a link and its host, an
//! address, a path or a handle, each in its canonical spelling, and the links nested inside it.

use super::addresses::{
    Link, canonical_path, canonical_url, is_bare_host, is_bare_ip, percent_decoded, push_email,
    rsplit_at_byte, scheme_separator, scheme_start, scheme_start_within, special_scheme_slashes,
    split_at_ascii, split_scheme, strip_prefix_ignore_case,
};
use super::chunks::{HOST_DOTS, Marks, trim_trailing};
use super::{Kind, Token, fold, mark_unread};

/// How deep a chunk's readings may nest (a link inside a link, a Markdown link's target, a
/// special scheme's slashes made `//`, one reading each): past it the rest is not read and
/// [`Kind::Unread`] is listed instead, so a result or an argument nesting links without end
/// neither overflows the stack nor hides a value (see [`super::Reading`]).
const MAX_NESTING: usize = 64;

/// How many bytes the readings nested in one chunk may read in all, beside [`MAX_NESTING`]:
/// eight times the chunk, and 256 bytes more (a short chunk nesting a link or two). Each nested
/// reading reads a copy of what it nests (decoded, its slashes made `//`) and lists the link it
/// is, so a chunk nesting links level after level to its end (`http://http://…`) listed 64
/// copies of itself: an 8 MB result held 1.0–1.5 GB while it was read (an independent attack).
/// Past the budget the rest is not read, as past the deepest level. A redirector's link inside a
/// tracker's inside a mail client's reads about three times its chunk; a chunk of five links
/// each nesting the rest of it (each read twice where its slashes are made `//`) about seven.
fn nesting_budget(chunk: &str) -> usize {
    8 * chunk.len() + 256
}

/// The tokens of one chunk: a link (and its host), an address, a path or a handle; the kind of
/// the main one found.
pub(super) fn chunk_tokens(chunk: &str, out: &mut Vec<Token>) -> Option<Kind> {
    chunk_tokens_within(chunk, out, 0, &mut nesting_budget(chunk))
}

/// [`chunk_tokens`] of a chunk read inside `depth` others, the readings nested in the outermost
/// having `left` bytes to read.
fn chunk_tokens_within(
    chunk: &str,
    out: &mut Vec<Token>,
    depth: usize,
    left: &mut usize,
) -> Option<Kind> {
    if depth > 0 {
        if depth > MAX_NESTING || chunk.len() > *left {
            mark_unread(out);
            return None;
        }
        *left -= chunk.len();
    }
    let deeper = depth + 1;
    // Most chunks are words: none of the characters a link, address, path or handle needs.
    let bytes = chunk.as_bytes();
    let marks = Marks::of(bytes);
    let may_hold_one = marks.any(Marks::COLON | Marks::SIGN)
        // A dot inside (`evil.example`), not one ending a sentence.
        || marks.any(Marks::DOT) && bytes
            .windows(2)
            .any(|pair| pair[0] == b'.' && pair[1].is_ascii_alphanumeric())
        || bytes.len() >= 4 && bytes[..4].eq_ignore_ascii_case(b"www.")
        || bytes.len() >= 5 && bytes[1..5].eq_ignore_ascii_case(b"www.");
    // A host's dots spelled as CJK or fullwidth full stops are dots (see `HOST_DOTS`): read as
    // dots before the chunk is judged to hold nothing (`evil。example` has no ASCII dot).
    if marks.any(Marks::NOT_ASCII) && chunk.contains(HOST_DOTS) {
        return chunk_tokens_within(&chunk.replace(HOST_DOTS, "."), out, deeper, left);
    }
    if !may_hold_one {
        return None;
    }
    // `https:/host`, `https:host`, `https:\\host`: browsers read a special scheme's slashes and
    // backslashes, however many, as `//`.
    if marks.any(Marks::COLON)
        && let Some(fixed) = special_scheme_slashes(chunk)
    {
        return chunk_tokens_within(&fixed, out, deeper, left);
    }
    // A Markdown link, `[text](target)`: its text and its target are values apart. The target
    // is read first: it is where the link goes, the first value of its kind (the one `whole`
    // and `host_of` take; read after the text, `[good.example](https://evil.example/)` was
    // judged by `good.example`), and the text cannot use up the reading before it.
    if marks.any(Marks::CLOSE_BRACKET)
        && let Some(at) = bytes.windows(2).position(|pair| pair == b"](")
    {
        let target = chunk_tokens_within(&chunk[at + 2..], out, deeper, left);
        let text = chunk_tokens_within(chunk[..at].trim_start_matches('['), out, deeper, left);
        return target.or(text);
    }
    let chunk = chunk.trim_start_matches(['(', '[', '{', '\'', '*', '_', '|']);
    let chunk = trim_trailing(chunk);
    if chunk.is_empty() {
        return None;
    }
    if let Some(at) = scheme_start(chunk) {
        let link = &chunk[at..];
        if let Some(address) = strip_prefix_ignore_case(link, "mailto:") {
            let (to, query) = address.split_once('?').unwrap_or((address, ""));
            let found = push_email(&percent_decoded(to, |_| true), out);
            // A link in the mail's subject or body (`?body=https://…`).
            let query = percent_decoded(query, |_| true);
            if let Some(inner) = scheme_start_within(&query) {
                chunk_tokens_within(&query[inner..], out, deeper, left);
            }
            return found.then_some(Kind::Email);
        }
        if let Some(found) = canonical_url(link) {
            push_link(out, found);
            // A link inside this one (a redirector's `?q=https://…`, escaped or not).
            let rest = split_scheme(link).map_or("", |(_, rest)| rest);
            let nested = scheme_separator(rest).is_some()
                || marks.any(Marks::PERCENT)
                    && rest
                        .as_bytes()
                        .windows(9)
                        .any(|nine| nine.eq_ignore_ascii_case(b"%3a%2f%2f"));
            if nested {
                let decoded = percent_decoded(rest, |_| true);
                if let Some(inner) = scheme_start_within(&decoded) {
                    chunk_tokens_within(&decoded[inner..], out, deeper, left);
                }
            }
            return Some(Kind::Url);
        }
        return None;
    }
    if strip_prefix_ignore_case(chunk, "www.").is_some()
        && let Some(found) = canonical_url(&format!("http://{chunk}"))
    {
        push_link(out, found);
        return Some(Kind::Url);
    }
    if let Some(name) = chunk.strip_prefix(['@', '#']) {
        let name = name.trim_end_matches(['.', ',']);
        if !name.is_empty()
            && !name.contains('@')
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            out.push(Token::new(Kind::Text, fold(name)));
            return Some(Kind::Text);
        }
    }
    // A link without a scheme (`evil.example/pay`, `evil.example:8443/pay`,
    // `evil.example?pay=1`, `//evil.example/pay`): a chat client shows it as one. Read before
    // an address, so `evil.example/pay?to=a@b.example` is the link it is.
    let bare = chunk.strip_prefix("//").unwrap_or(chunk);
    let authority = split_at_ascii(bare, |byte| matches!(byte, b'/' | b'?' | b'#'))
        .next()
        .unwrap_or("");
    let host = rsplit_at_byte(authority, b':')
        .filter(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(host, _)| host);
    // An IP address too (`203.0.113.5`, `203.0.113.5/pay`, `//0xcb.0.113.5/pay`): a page
    // planting one named no host otherwise (an independent attack).
    let after_slashes = bare.len() < chunk.len();
    // Followed by a path or a port (a `?` or `#` alone is no link's, and the scan that skips
    // what holds none never reads `37043704?www:`).
    let followed = bare
        .get(host.len()..)
        .is_some_and(|after| after.starts_with(['/', ':']));
    let ip = || is_bare_ip(host, after_slashes, followed);
    if !host.as_bytes().contains(&b'@')
        && (is_bare_host(host) || ip())
        && let Some(found) = canonical_url(&format!("http://{bare}"))
    {
        push_link(out, found);
        return Some(Kind::Url);
    }
    if chunk.as_bytes().contains(&b'@') {
        // A list of addresses (`a@x.example,b@y.example`): each.
        let mut found = false;
        for part in split_at_ascii(chunk, |byte| matches!(byte, b',' | b';')) {
            found |= push_email(part, out);
        }
        if found {
            return Some(Kind::Email);
        }
    }
    if let Some(path) = canonical_path(chunk) {
        out.push(Token::new(Kind::Path, path));
        return Some(Kind::Path);
    }
    None
}

/// How far back a link's host is looked for among the values listed before it: a page's
/// paragraphs each name a few values beside a link to the same site.
const RECENT_VALUES: usize = 16;

/// Pushes a link and its host, the host unless one of the [`RECENT_VALUES`] values before is that
/// host: a page's links share a few hosts, and each value pushed is keyed before it is told
/// apart from the others (a host listed again is not even copied).
fn push_link(out: &mut Vec<Token>, link: Link) {
    let host = link.host();
    let again = out
        .iter()
        .rev()
        .take(RECENT_VALUES)
        .any(|token| token.kind == Kind::Host && token.canonical == host);
    let host = (!again).then(|| host.to_owned());
    out.push(Token::new(Kind::Url, link.url));
    if let Some(host) = host {
        out.push(Token::new(Kind::Host, host));
    }
}
