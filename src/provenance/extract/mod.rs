//! The values a text carries, each in one canonical spelling: links and their hosts, e-mail
//! addresses, IBANs, long numbers, amounts of money, file paths and handles.
//!
//! Two spellings of one value that a model may copy from a result into a call must give one
//! canonical form, or a value read from a web page passes as one never seen. What is made alike:
//!
//! | kind | spellings made alike |
//! |---|---|
//! | link | scheme and host case (lower-cased, not case-folded: `straße` is not `strasse`); `%7e` and `~` (unreserved characters decoded), `%2f` and `%2F`; a default port; an empty path and `/`; `.` and `..` segments; `\` in the path; the fragment (dropped); trailing `.`, `,`, `)`, `"`, typographic quotes and CJK punctuation; a Markdown link `[text](link)`; JSON's `\/`; a link broken at a line end (both the broken and the joined link are recorded); `=` soft line breaks of quoted-printable mail; a link inside a link (`?q=https%3A…`); a link without a scheme (`evil.example/pay`, read as `http://`) |
//! | host | case, a trailing dot; a backslash ends it (`https://evil.example\@good.example` is `evil.example`, as browsers read it) |
//! | e-mail | case; `mailto:`; `%40` in a `mailto:` link; a label or script before it (`Reply-To:m@e`); lists split at `,` and `;`; an argument `Name <m@e>` is the address |
//! | IBAN | case; spaces, tabs or `-` between groups (only IBANs whose check digits hold); an argument `IBAN: DE89 … (Bank)` is the IBAN |
//! | long number | spaces, `-` and `.` between digit groups (6 digits or more) |
//! | path | repeated `/`, `.` segments |
//! | handle | `@` or `#` before it, case (a handle `@bob` is the text `bob`) |
//! | amount | read in hundredths (`EUR 1,450.00`, `1.450,00 €`, `1'450 CHF`, `$1450` are all `145000`; `₹1,50,000` is `15000000`); a currency symbol, code or name before or after, at most two spaces or a `:` between, and no number on its other side; `,` `.` `'` between groups of three, `.` or `,` before one or two decimals; `35,-` and `35,–` |
//! | any text | invisible characters (zero-width, bidi controls); with the `unicode` feature NFKC (fullwidth `ｅｘａｍｐｌｅ`) and full case folding; runs of white space |
//!
//! What is not made alike, and so is not matched: a value the model paraphrases, translates,
//! abbreviates or re-encodes (base64, HTML entities, punycode against Unicode host names, a
//! number written out in words), a link shortened by a redirector, an IP address written as a
//! number, numbers grouped by `,`, `/` or brackets (`(555) 123-4567`), and text split other than
//! at a line end. A number without a currency beside it is no amount (`pay 35`, a JSON number
//! in a result); an amount grouped by spaces (`1 450 €` is `450 €`), with three decimals or in
//! words (`fifty euros`) is not read, and every currency is read in hundredths, so `¥1000` is
//! `100000` and two currencies with the same digits are one value. Links nested in links
//! (`?q=https://…`, a Markdown target) are read 64 levels deep; a text nesting them deeper lists
//! a marker instead of the rest, which the recorder and the rules treat as failing closed (the
//! session overflows; an argument cannot be judged).

mod addresses;
mod amounts;
mod chunks;
mod currencies;
mod lines;
mod numbers;

use std::borrow::Cow;

use addresses::{
    Link, canonical_path, canonical_url, is_bare_host, percent_decoded, push_email, rsplit_at_byte,
    scheme_separator, scheme_start, scheme_start_within, special_scheme_slashes, split_at_ascii,
    split_scheme, strip_prefix_ignore_case,
};
use amounts::AmountScan;
pub(crate) use amounts::{amount_of, amount_of_minor_units, amount_of_number};
use chunks::{
    BYTE_CLASS, DIGIT, FULL_STOP_LEAD, HOST_DOTS, Marks, chunk_end, chunk_start, ends_a_label,
    ends_a_sentence, host_full_stop_at, looks_like_link_rest, next_chunk, next_classified,
    trim_trailing,
};
pub(crate) use currencies::mentions_money;
pub(crate) use lines::lines;
use numbers::NumberScan;
pub(crate) use numbers::iban_checks;

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
    /// Not a value: "a text nested its values deeper than they are read" ([`MAX_NESTING`]).
    /// Never recorded: a result holding it overflows its session, a person's request loses what
    /// was not read (naming less), and an argument holding it cannot be judged (the rule's action).
    Unread,
}

impl Kind {
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

/// Every value `text` carries, each once: links (and their hosts), e-mail addresses, IBANs,
/// long numbers, paths and handles.
pub(crate) fn tokens(text: &str, out: &mut Vec<Token>) {
    // A line ending in `=` is read both as it is and as a quoted-printable soft break.
    if has_soft_breaks(text) {
        scan(&readable(text, true), out);
    }
    scan(&readable(text, false), out);
}

fn scan(text: &str, out: &mut Vec<Token>) {
    scan_skipping(text, out, true);
}

/// [`scan`], skipping the chunks of full stops that end sentences and of colons that end labels,
/// and the digits both number scans have read past, when `skip` (the tests read
/// every chunk and visit every digit, to hold the skips to reading the same values).
fn scan_skipping(text: &str, out: &mut Vec<Token>, skip: bool) {
    // JSON written with escaped slashes (`https:\/\/evil.example\/pay`) read as written.
    if text.contains("\\/") {
        let unescaped = text.replace("\\/", "/");
        return scan_skipping(&unescaped, out, skip);
    }
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
    // The search for the next byte of a class is its own tight loop: most bytes are letters.
    while let Some(at) = next_classified(bytes, next) {
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

/// Reads the chunk holding byte `inside` (not starting before `floor`); where it ends.
fn chunk_at(text: &str, floor: usize, inside: usize, out: &mut Vec<Token>) -> usize {
    let start = chunk_start(text, floor, inside);
    let end = chunk_end(text, inside);
    let chunk = &text[start..end];
    // A link that ends a line and a line that starts with more of one: also the joined link.
    if chunk_tokens(chunk, out) == Some(Kind::Url)
        && let Some((next_start, next_end)) = next_chunk(text, end)
    {
        let between = &text[end..next_start];
        let next = &text[next_start..next_end];
        if (between == "\n" || between == "\r\n") && looks_like_link_rest(next) {
            let joined = format!("{chunk}{next}");
            chunk_tokens(&joined, out);
        }
    }
    // Past the character at `inside` at least (a full stop of `HOST_DOTS` is three bytes).
    let after = inside + text[inside..].chars().next().map_or(1, char::len_utf8);
    end.max(after)
}

/// The whole of `text` as one value: the canonical form of the one link, address, IBAN,
/// number, path or handle it is, else the text itself (folded, white space collapsed). `None`
/// for empty text. (Results record only values of at most [`MAX_WHOLE_VALUE_CHARS`] whole; a
/// longer argument is still read, and was never seen.)
pub(crate) fn whole(text: &str) -> Option<Token> {
    let text = readable(text, false);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    if trimmed.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
        return Some(whole_word(trimmed));
    }
    whole_in_general(trimmed)
}

/// [`whole`] of one ASCII word of letters and digits, without a scan: what the scan finds in
/// one (an IBAN from its first letter, or a long number of its digits alone) decided directly.
fn whole_word(word: &str) -> Token {
    let bytes = word.as_bytes();
    if bytes.len() >= 6 && bytes.iter().all(u8::is_ascii_digit) {
        return Token::new(Kind::Number, word.to_owned());
    }
    if (15..=34).contains(&bytes.len())
        && bytes[0].is_ascii_alphabetic()
        && bytes[1].is_ascii_alphabetic()
        && bytes[2].is_ascii_digit()
        && bytes[3].is_ascii_digit()
    {
        let upper = word.to_ascii_uppercase();
        if iban_checks(&upper) {
            return Token::new(Kind::Iban, upper);
        }
    }
    Token::new(Kind::Text, word.to_ascii_lowercase())
}

/// [`whole`] of trimmed text that is not one plain word.
fn whole_in_general(trimmed: &str) -> Option<Token> {
    if !trimmed.contains(char::is_whitespace) {
        let mut found = Vec::new();
        if let Some(kind) = chunk_tokens(trimmed, &mut found)
            && let Some(token) = found.into_iter().find(|token| token.kind == kind)
        {
            return Some(token);
        }
    }
    // Text around one address or one IBAN (`Mallory <m@e>`, `IBAN: DE89 …`) is that value.
    let mut inside = Vec::new();
    scan(trimmed, &mut inside);
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
            .filter(|c| !matches!(c, ' ' | '-' | '.' | '+' | '(' | ')'))
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

/// The host of `text` read as a link, or as a bare host name.
pub(crate) fn host_of(text: &str) -> Option<Token> {
    let text = readable(text, false);
    let trimmed = text.trim();
    let mut found = Vec::new();
    match chunk_tokens(trimmed, &mut found) {
        Some(Kind::Url) => found.into_iter().find(|token| token.kind == Kind::Host),
        _ => {
            let host = trimmed.trim_end_matches('.');
            let is_host = !host.is_empty()
                && host.contains('.')
                && host
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.'));
            is_host.then(|| Token::new(Kind::Host, host.to_lowercase()))
        }
    }
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

/// How deep a chunk's readings may nest (a link inside a link, a Markdown link's target, a
/// special scheme's slashes made `//`, one reading each): past it the rest is not read and
/// [`Kind::Unread`] is listed instead, so a result or an argument nesting links without end
/// neither overflows the stack nor hides a value (see [`Kind::Unread`]).
const MAX_NESTING: usize = 64;

/// The tokens of one chunk: a link (and its host), an address, a path or a handle; the kind of
/// the main one found.
fn chunk_tokens(chunk: &str, out: &mut Vec<Token>) -> Option<Kind> {
    chunk_tokens_within(chunk, out, 0)
}

/// [`chunk_tokens`] of a chunk read inside `depth` others.
fn chunk_tokens_within(chunk: &str, out: &mut Vec<Token>, depth: usize) -> Option<Kind> {
    if depth > MAX_NESTING {
        if out.last().is_none_or(|token| token.kind != Kind::Unread) {
            out.push(Token::new(Kind::Unread, String::new()));
        }
        return None;
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
        return chunk_tokens_within(&chunk.replace(HOST_DOTS, "."), out, deeper);
    }
    if !may_hold_one {
        return None;
    }
    // `https:/host`, `https:host`, `https:\\host`: browsers read a special scheme's slashes and
    // backslashes, however many, as `//`.
    if marks.any(Marks::COLON)
        && let Some(fixed) = special_scheme_slashes(chunk)
    {
        return chunk_tokens_within(&fixed, out, deeper);
    }
    // A Markdown link, `[text](target)`: its text and its target are values apart.
    if marks.any(Marks::CLOSE_BRACKET)
        && let Some(at) = bytes.windows(2).position(|pair| pair == b"](")
    {
        let first = chunk_tokens_within(chunk[..at].trim_start_matches('['), out, deeper);
        let second = chunk_tokens_within(&chunk[at + 2..], out, deeper);
        return second.or(first);
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
                chunk_tokens_within(&query[inner..], out, deeper);
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
                    chunk_tokens_within(&decoded[inner..], out, deeper);
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
    if !host.as_bytes().contains(&b'@')
        && is_bare_host(host)
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

#[cfg(test)]
mod amount_tests;
#[cfg(test)]
mod fast_reading_tests;
#[cfg(test)]
mod tests;
