//! Whether an argument read as one value (`value`, `host`) names one place: the value toolgate
//! reads must be where the call goes, or a rule judges one place and the call goes to another.

use super::addresses::{is_special_scheme, scheme_before};
use super::chunk_values::chunk_tokens;
use super::chunks::separates;
use super::{Kind, readable};

/// Whether `text`, read as one value, names one place, as a renderer or a mail client would take
/// it. Not so — and then not judged, the rule's action holding — for:
/// - a chunk holding more than one Markdown `](`: links chained, nested or glued, where the
///   reader and a renderer take different targets (`[x](https://evil.example)](https://good.example)`);
/// - one `](` not in a Markdown link (`https://evil.example/](https://good.example)` goes to
///   `evil.example`);
/// - a Markdown link whose target reads as no value (an entity, an escape, a relative path):
///   its text is no stand-in for where it goes;
/// - more than one address (`a@x,b@y`, `a@x b@y`, `mailto:a@x?cc=b@y`): the call goes to each;
/// - a link with white space or a control character inside or beside it: URL parsers (WHATWG's,
///   so browsers, Node and Rust's `url`; Python's `urllib`) remove every tab and line break
///   from a link, so `https://evil.exa\tmple/` goes to `evil.example` while the text reads
///   `evil.exa`, and `https://news.example\n.evil.example/` goes to `news.example.evil.example`
///   while it reads the person's `news.example` (an independent attack); a link among words is
///   no one place either.
pub(crate) fn names_one_place(text: &str) -> bool {
    // Most arguments (an IBAN, a link, an id) hold none of the bytes that make two places: one
    // pass decides them, before the reading (a provenance condition costs about twice a flow
    // rule, and this is on its path).
    let plain = |byte: &u8| {
        byte.is_ascii()
            && !matches!(byte, b']' | b'@' | b'%' | b'"' | b'<' | b'>' | b'`' | b'|')
            && !byte.is_ascii_whitespace()
            && !byte.is_ascii_control()
    };
    // A host read otherwise than parsers read it is decided first: its text may be plain. Its
    // text as read too (NFKC: `⑴` is `(1)`, where the reader stops and parsers do not).
    if hosts_read_otherwise(text)
        || !text.is_ascii() && hosts_read_otherwise(&readable(text, false))
    {
        return false;
    }
    if text.bytes().all(|byte| plain(&byte)) {
        return true;
    }
    let controlled = text.contains(|c: char| c.is_control() && !c.is_whitespace());
    let text = readable(text, false);
    let trimmed = text.trim();
    // Where the call goes: a Markdown link's target, else the text.
    let mut place = trimmed;
    match trimmed.matches("](").count() {
        0 => {}
        1 => {
            let link = trimmed.strip_prefix('!').unwrap_or(trimmed);
            let Some((_, target)) = link.split_once("](") else {
                return false;
            };
            let mut found = Vec::new();
            if !link.starts_with('[') || chunk_tokens(target, &mut found).is_none() {
                return false;
            }
            place = target;
        }
        _ => return false,
    }
    // A link broken by white space, a control character (removed from `place` when read) or
    // any character that ends a chunk (a quote, `>`, `|`, CJK punctuation), or whose host holds
    // a percent-escape (read up to it; parsers decode it and map full stops: `%E3%80%82`).
    let chunks = place
        .split(ends_a_chunk)
        .filter(|chunk| !chunk.is_empty())
        .count();
    if (chunks > 1 || controlled) && holds_a_link(place) {
        return false;
    }
    // `%40` in any case, counted without a lowered copy.
    let encoded = place
        .as_bytes()
        .windows(3)
        .filter(|three| three.eq_ignore_ascii_case(b"%40"))
        .count();
    // More than one address, in one chunk or apart (`a@x.example, b@y.example`, one a line: a
    // mail tool that splits at white space sends to each): read as text, the list was never
    // seen, though a `seen_in` rule would hold on the address planted in it.
    let at_signs = place.matches('@').count() + encoded;
    at_signs <= 1
}

/// Whether `c` ends a chunk where values are read: white space, a control character, a quote,
/// an angle bracket, `` ` ``, `|` or closing punctuation (see `chunks::separates`).
fn ends_a_chunk(c: char) -> bool {
    separates(c) || c.is_control()
}

/// Whether a chunk of `text` reads as a link.
fn holds_a_link(text: &str) -> bool {
    text.split(ends_a_chunk).any(|chunk| {
        let mut found = Vec::new();
        chunk_tokens(chunk, &mut found) == Some(Kind::Url)
    })
}

/// Whether a link in `text` (`scheme:` then slashes or backslashes, however many) has a host
/// that URL parsers read otherwise than the reader: one holding a character that is no host's
/// (the reader stops at it, parsers read on: `news.example€.evil.example` goes to a name under
/// `evil.example`; `news.example%E3%80%82evil.example` — parsers decode the escape, and the
/// full stop it is joins the hosts), or a backslash in its authority (a browser reads it as
/// `/`, Python's `urllib` as part of the authority: `news.example\@evil.example`).
fn hosts_read_otherwise(text: &str) -> bool {
    // Most arguments (an IBAN, an id, a name) hold no `:`: one byte search decides them.
    if !text.as_bytes().contains(&b':') {
        return false;
    }
    text.match_indices(':').any(|(colon, _)| {
        let scheme_ok = text[..colon]
            .bytes()
            .next_back()
            .is_some_and(|byte| byte.is_ascii_alphanumeric());
        let rest = text[colon + 1..].trim_start_matches(['/', '\\']);
        let slashed = rest.len() < text.len() - colon - 1;
        // A special scheme needs no slashes (`https:news.example` is `https://news.example` to
        // parsers and to the reader: a fourth attack).
        let special = || is_special_scheme(scheme_before(text, colon));
        // Read only after a scheme's slashes: each authority ends at the next slash, so the
        // authorities read never overlap (the whole text is read about once).
        scheme_ok
            && (slashed || special())
            && rest
                .split(['/', '?', '#'])
                .next()
                .is_some_and(|authority| authority.contains('\\') || !is_read_as_written(authority))
    })
}

/// Whether the host of `authority` (after its last `@`, before a port) holds only what the
/// reader reads as a host: letters and digits of any script, `-`, `.`, `_`, the full stops of
/// other scripts, an IPv6 address's brackets and colons, and invisible characters (dropped by
/// both). A whole chunk's end (white space, a quote) is left to the chunk test.
fn is_read_as_written(authority: &str) -> bool {
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let stops = |c: char| ends_a_chunk(c);
    let host = host.split(stops).next().unwrap_or(host);
    host.chars().all(|c| {
        // IDNA's deviation characters (`ß`, `ẞ`, `ς`, the zero-width joiners) are read one way
        // by some parsers and another by others (`STRAẞE` is `strasse` to a browser, `straße`
        // to the reader: a fourth attack).
        let deviates = matches!(c, 'ß' | 'ẞ' | 'ς' | '\u{200C}' | '\u{200D}');
        !deviates
            && (c.is_alphanumeric()
                || matches!(c, '-' | '.' | '_' | '[' | ']' | ':')
                || super::chunks::HOST_DOTS.contains(&c)
                || crate::text::is_invisible(c) && !c.is_control())
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Reading, host_of, whole, whole_reading};
    use super::*;

    #[test]
    fn chained_glued_or_textless_links_and_address_lists_name_no_one_place() {
        for text in [
            "https://evil.example/](https://good.example)",
            "https://evil.example#](https://good.example)",
            "evil.example/](good.example)",
            "<https://evil.example/](https://good.example)>",
            "[x](https://evil.example)](https://good.example)",
            "[x](https://evil.example)\\](https://good.example)",
            "[x](https://evil.example/](https://good.example))",
            "[[x](https://evil.example)](https://good.example)",
            "[x](https://evil.example)[y](https://good.example)",
            "[x](mailto:evil@evil.example)](mailto:good@good.example)",
            "[x](https://evil.example) and ](https://good.example)",
            "https://evil.example/ ](https://good.example)",
            "[https://good.example](<//evil.example>)",
            "[https://good.example](https&#58;//evil.example)",
            "[https://good.example](https\\://evil.example)",
            "[good@good.example](mailto:evil&#64;evil.example)",
            "[https://good.example](/pay)",
            "good@good.example,evil@evil.example",
            "good@good.example;evil@evil.example",
            "mailto:good@good.example?cc=evil@evil.example",
            "mailto:good@good.example?cc=evil%40evil.example",
            "mailto:good@good.example?cc=evil%40EVIL.example",
            "mailto:good@good.example?bcc=evil%4aevil.example%40x",
            // URL parsers remove tabs and line breaks: each goes where it does not read.
            "https://evil.exa\tmple/collect",
            "https://evil.exa\nmple/collect",
            "https://news.example\n.evil.example/c?d=1",
            "https://evil\r\n.example/",
            "https://evil.exa\u{b}mple/",
            "https://evil.exa mple/",
            "https://evil.example/coll\u{7}ect",
            "evil.exa\tmple/pay",
            "see https://evil.example now",
            "[docs](https://evil.exa\tmple/)",
            "good@good.example, evil@evil.example",
            "good@good.example\r\nBcc: evil@evil.example",
            "Good <good@good.example>; Evil <evil@evil.example>",
            // A chunk's end inside a link: parsers read the authority to its last `@`.
            "https://news.example\"@evil.example/c",
            "https://news.example>@evil.example/c",
            "https://news.example\u{201d}@evil.example/c",
            "https://news.example\u{300d}@evil.example/c",
            "https://news.example|@evil.example/c",
            // A percent-escape in a host: parsers decode it, and map the full stop it is.
            "https://news.example%E3%80%82evil.example/c",
            "https://news.example%C2%AD.evil.example/c",
            "https:\\\\news.example%EF%BC%8Eevil.example/c",
            // A fourth attack: no slashes, a character NFKC makes no host's, a deviation.
            "https:news.example%E3%80%82evil.example/c",
            "ws:news.example\u{20ac}.evil.example/c",
            "https://STRA\u{1e9e}E.example/c",
            "https://stra\u{df}e.example/c",
        ] {
            assert!(!names_one_place(text), "{text}");
        }
        // NFKC (the `unicode` feature) makes `⑴` `(1)`, where the reader stops; without it the
        // reader reads it into the host, as parsers read the host on.
        #[cfg(feature = "unicode")]
        assert!(!names_one_place(
            "https://news.example\u{2474}.evil.example/c"
        ));
        for text in [
            "https://good.example/page?q=1",
            "[Docs](https://docs.example/start)",
            "![logo](https://cdn.example/logo.png)",
            "[boss@good.example](mailto:evil@evil.example)",
            "mailto:alice@good.example",
            "alice@good.example",
            "Alice Example <alice@good.example>",
            "https://r.example/?q=https://t.example/",
            "DE89 3704 0044 0532 0130 00",
            "DE89\t3704\t0044\t0532\t0130\t00",
            "plain words",
            "[Read the docs](https://docs.example/start)",
            " https://good.example/page \r\n",
            "J. R. R. Tolkien",
            "<https://good.example/page>",
            "\"https://good.example/page\"",
            "https://good.example/search?q=%E3%80%82",
            "https://good.example@evil.example/c",
        ] {
            assert!(names_one_place(text), "{text}");
        }
    }

    #[test]
    fn a_markdown_links_value_and_host_are_its_targets_not_its_texts() {
        let value = |text: &str| whole(text).map(|token| token.canonical);
        assert_eq!(
            value("[alice@good.example](mailto:mallory@evil.example)").as_deref(),
            Some("mallory@evil.example")
        );
        assert_eq!(
            value("[https://good.example/](https://evil.example/x)").as_deref(),
            Some("https://evil.example/x")
        );
        let (host, reading) = host_of("[good.example](https://evil.example/x)");
        assert_eq!(reading, Reading::Whole);
        assert_eq!(
            host.map(|token| token.canonical).as_deref(),
            Some("evil.example")
        );
        // A text spending the nesting budget: the reading is cut, and names no value.
        let spent = format!("[{}](mallory@evil.example)", "a://".repeat(24));
        assert_eq!(whole_reading(&spent), (None, Reading::Cut));
        assert_eq!(host_of(&spent), (None, Reading::Cut));
    }
}
