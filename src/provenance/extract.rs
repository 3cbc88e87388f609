//! The values a text carries, each in one canonical spelling: links and their hosts, e-mail
//! addresses, IBANs, long numbers, file paths and handles.
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
//! | any text | invisible characters (zero-width, bidi controls); with the `unicode` feature NFKC (fullwidth `ｅｘａｍｐｌｅ`) and full case folding; runs of white space |
//!
//! What is not made alike, and so is not matched: a value the model paraphrases, translates,
//! abbreviates or re-encodes (base64, HTML entities, punycode against Unicode host names, a
//! number written out in words), a link shortened by a redirector, an IP address written as a
//! number, numbers grouped by `,`, `/` or brackets (`(555) 123-4567`), and text split other than
//! at a line end.

use std::borrow::Cow;

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
    // JSON written with escaped slashes (`https:\/\/evil.example\/pay`) read as written.
    if text.contains("\\/") {
        let unescaped = text.replace("\\/", "/");
        return scan(&unescaped, out);
    }
    let chunks: Vec<(usize, &str)> = chunks(text);
    for (index, &(start, chunk)) in chunks.iter().enumerate() {
        let found = chunk_tokens(chunk, out);
        // A link that ends a line and a line that starts with more of one: also the joined link.
        if found == Some(Kind::Url)
            && let Some(&(next_start, next)) = chunks.get(index + 1)
        {
            let between = &text[start + chunk.len()..next_start];
            if (between == "\n" || between == "\r\n") && looks_like_link_rest(next) {
                let joined = format!("{chunk}{next}");
                chunk_tokens(&joined, out);
            }
        }
    }
    numbers_and_ibans(text, out);
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
    let mut found = Vec::new();
    numbers_and_ibans(trimmed, &mut found);
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

/// The white-space separated chunks of `text`, with their byte offsets; quotes and angle
/// brackets, which never belong to a value, separate too.
fn chunks(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 6);
    let mut start = None;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        // ASCII a byte at a time; any other character decoded.
        let (separates, width) = if byte.is_ascii() {
            let separates = byte.is_ascii_whitespace()
                || byte.is_ascii_control()
                || matches!(byte, b'"' | b'<' | b'>' | b'`' | b'|');
            (separates, 1)
        } else {
            let c = text[at..].chars().next().unwrap_or(' ');
            (
                c.is_whitespace() || c.is_control() || is_closing_punctuation(c),
                c.len_utf8(),
            )
        };
        match (separates, start) {
            (true, Some(from)) => {
                out.push((from, &text[from..at]));
                start = None;
            }
            (false, None) => start = Some(at),
            _ => {}
        }
        at += width;
    }
    if let Some(from) = start {
        out.push((from, &text[from..]));
    }
    out
}

/// Whether `next` can be the rest of a link broken at a line end: no sentence punctuation
/// before its end, and a character links carry and words do not.
fn looks_like_link_rest(next: &str) -> bool {
    next.chars()
        .any(|c| matches!(c, '/' | '=' | '&' | '?' | '%' | '#' | '_'))
        && next.chars().all(|c| c.is_ascii_graphic())
}

/// Trailing punctuation a sentence puts after a value; a closing bracket only when the value
/// opens none.
fn trim_trailing(mut value: &str) -> &str {
    // The brackets counted once (not at every character stripped: a run of `)` would cost
    // quadratic time), then kept in step as characters go.
    let count = |open: char, close: char| {
        value.chars().fold(0_i64, |balance, c| {
            balance + i64::from(c == open) - i64::from(c == close)
        })
    };
    let mut balance = [count('(', ')'), count('[', ']'), count('{', '}')];
    loop {
        let Some(last) = value.chars().last() else {
            return value;
        };
        let strip = match last {
            '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '*' | '_' | '|' => true,
            ')' => balance[0] < 0,
            ']' => balance[1] < 0,
            '}' => balance[2] < 0,
            c => is_closing_punctuation(c),
        };
        if !strip {
            return value;
        }
        match last {
            ')' => balance[0] += 1,
            ']' => balance[1] += 1,
            '}' => balance[2] += 1,
            _ => {}
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

/// The tokens of one chunk: a link (and its host), an address, a path or a handle; the kind of
/// the main one found.
fn chunk_tokens(chunk: &str, out: &mut Vec<Token>) -> Option<Kind> {
    // Most chunks are words: none of the characters a link, address, path or handle needs.
    let bytes = chunk.as_bytes();
    let may_hold_one = bytes
        .iter()
        .any(|byte| matches!(byte, b':' | b'@' | b'#' | b'/' | b'\\' | b'~'))
        // A dot inside (`evil.example`), not one ending a sentence.
        || bytes
            .windows(2)
            .any(|pair| pair[0] == b'.' && pair[1].is_ascii_alphanumeric())
        || bytes.len() >= 4 && bytes[..4].eq_ignore_ascii_case(b"www.")
        || bytes.len() >= 5 && bytes[1..5].eq_ignore_ascii_case(b"www.");
    if !may_hold_one {
        return None;
    }
    // A Markdown link, `[text](target)`: its text and its target are values apart.
    if let Some(at) = bytes.windows(2).position(|pair| pair == b"](") {
        let first = chunk_tokens(chunk[..at].trim_start_matches('['), out);
        let second = chunk_tokens(&chunk[at + 2..], out);
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
            let address = percent_decoded(address.split('?').next().unwrap_or(""), |_| true);
            return push_email(&address, out).then_some(Kind::Email);
        }
        if let Some((url, host)) = canonical_url(link) {
            out.push(Token::new(Kind::Url, url));
            out.push(Token::new(Kind::Host, host));
            // A link inside this one (a redirector's `?q=https://…`, escaped or not).
            let rest = link.split_once("://").map_or("", |(_, rest)| rest);
            let nested = rest.contains("://") || rest.to_ascii_lowercase().contains("%3a%2f%2f");
            if nested {
                let decoded = percent_decoded(rest, |_| true);
                if let Some(inner) = scheme_start_within(&decoded) {
                    chunk_tokens(&decoded[inner..], out);
                }
            }
            return Some(Kind::Url);
        }
        return None;
    }
    if strip_prefix_ignore_case(chunk, "www.").is_some()
        && let Some((url, host)) = canonical_url(&format!("http://{chunk}"))
    {
        out.push(Token::new(Kind::Url, url));
        out.push(Token::new(Kind::Host, host));
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
    if chunk.contains('@') {
        // A list of addresses (`a@x.example,b@y.example`): each.
        let mut found = false;
        for part in chunk.split([',', ';']) {
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
    // A link without a scheme (`evil.example/pay`): a chat client shows it as one.
    if is_bare_host(chunk.split('/').next().unwrap_or(""))
        && let Some((url, host)) = canonical_url(&format!("http://{chunk}"))
    {
        out.push(Token::new(Kind::Url, url));
        out.push(Token::new(Kind::Host, host));
        return Some(Kind::Url);
    }
    None
}

/// Whether `text` is a host name: labels of letters, digits and `-` joined by dots, the last of
/// 2 to 24 letters (`evil.example`, `docs.corp.example`; not `e.g` or `3.14`).
fn is_bare_host(text: &str) -> bool {
    let labels: Vec<&str> = text.split('.').collect();
    let Some(last) = labels.last() else {
        return false;
    };
    labels.len() >= 2
        && (2..=24).contains(&last.len())
        && last.chars().all(|c| c.is_alphabetic())
        && labels.iter().all(|label| {
            !label.is_empty() && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Where a link's scheme starts in `chunk` (`see:https://…` starts at `https`), if it holds one.
fn scheme_start(chunk: &str) -> Option<usize> {
    if let Some(rest) = strip_prefix_ignore_case(chunk, "mailto:")
        && (rest.contains('@') || rest.to_ascii_lowercase().contains("%40"))
    {
        return Some(0);
    }
    let separator = chunk
        .as_bytes()
        .windows(3)
        .position(|window| window == b"://")?;
    let scheme_from = chunk[..separator]
        .char_indices()
        .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |(at, c)| at + c.len_utf8());
    let scheme = &chunk[scheme_from..separator];
    (!scheme.is_empty() && scheme.starts_with(|c: char| c.is_ascii_alphabetic()))
        .then_some(scheme_from)
}

/// Where a further link starts inside `text` (the rest of a link after its scheme).
fn scheme_start_within(text: &str) -> Option<usize> {
    let separator = text
        .as_bytes()
        .windows(3)
        .position(|window| window == b"://")?;
    let start = text[..separator]
        .char_indices()
        .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |(at, c)| at + c.len_utf8());
    (start < separator).then_some(start)
}

/// An e-mail address in `text`, lower-cased, if `text` is one.
fn push_email(text: &str, out: &mut Vec<Token>) -> bool {
    let text = trim_trailing(text.trim_start_matches(['(', '[', '<']));
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    let domain = domain.trim_end_matches('.');
    // The address starts where its local part's characters start: `Contact:m@e`, `请联系m@e`
    // and `<m@e` hold `m@e`.
    let local_start = local
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(*c))
        .last()
        .map_or(local.len(), |(at, _)| at);
    let local = local[local_start..].trim_start_matches('.');
    let local_ok = !local.is_empty();
    let domain_ok = domain.contains('.')
        && !domain.starts_with('.')
        && domain
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.'));
    if local_ok && domain_ok {
        out.push(Token::new(
            Kind::Email,
            format!("{local}@{domain}").to_lowercase(),
        ));
        true
    } else {
        false
    }
}

/// Unreserved characters (RFC 3986 §2.3), which `%XX` must not hide.
fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// `text` with each `%XX` whose byte `decode` accepts decoded, and the others' hex upper-cased.
fn percent_decoded(text: &str, decode: impl Fn(u8) -> bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && let Some(hex) = bytes.get(at + 1..at + 3)
            && let Ok(hex) = std::str::from_utf8(hex)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            if decode(byte) {
                out.push(byte);
            } else {
                out.push(b'%');
                out.extend(hex.to_ascii_uppercase().bytes());
            }
            at += 3;
            continue;
        }
        out.push(bytes[at]);
        at += 1;
    }
    String::from_utf8(out).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into())
}

/// A link in canonical form and its host: scheme and host lower-cased, user information and
/// fragment dropped, the default port dropped, the path's dot segments resolved and its
/// unreserved characters decoded. `None` when there is no host.
fn canonical_url(link: &str) -> Option<(String, String)> {
    let (scheme, rest) = link.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let rest = rest.split('#').next().unwrap_or("");
    // A backslash ends the authority as `/` does: browsers and WHATWG parsers read it so, and
    // `https://evil.example\@good.example/` goes to evil.example.
    let authority_end = rest.find(['/', '?', '\\']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
            if port.chars().all(|c| c.is_ascii_digit()) {
                (host, Some(port))
            } else {
                (host_port, None)
            }
        }
        _ => (host_port, None),
    };
    // Lower-cased, not case-folded: `straße` and `strasse` are different hosts.
    let host = percent_decoded(host, |_| true)
        .trim_end_matches('.')
        .to_lowercase();
    // A host ends where host characters end (`evil.example](https` is `evil.example`).
    let host: String = host
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '.' | '[' | ']' | ':' | '_'))
        .collect();
    let host = host.trim_end_matches('.').to_owned();
    if host.is_empty() {
        return None;
    }
    let port = match (scheme.as_str(), port) {
        (_, Some(""))
        | (_, None)
        | ("http" | "ws", Some("80"))
        | ("https" | "wss", Some("443")) => String::new(),
        (_, Some(port)) => format!(":{}", port.trim_start_matches('0')),
    };
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let path = resolved_path(&percent_decoded(&path.replace('\\', "/"), is_unreserved));
    let mut url = format!("{scheme}://{host}{port}{path}");
    if let Some(query) = query {
        url.push('?');
        url.push_str(&percent_decoded(query, is_unreserved));
    }
    Some((url, host))
}

/// A link's path with `.` and `..` segments resolved; empty is `/`.
fn resolved_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    let trailing = path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    let mut out = format!("/{}", segments.join("/"));
    if trailing && !segments.is_empty() {
        out.push('/');
    }
    out
}

/// A file path in canonical form, if `chunk` is one: absolute (`/srv/a`), under the home
/// directory (`~/a`) or a drive (`C:\a`), with at least two components.
fn canonical_path(chunk: &str) -> Option<String> {
    let (root, rest) = if let Some(rest) = chunk.strip_prefix("~/") {
        ("~/", rest)
    } else if let Some(rest) = chunk.strip_prefix('/') {
        ("/", rest)
    } else {
        let mut chars = chunk.chars();
        match (chars.next(), chars.next(), chars.next()) {
            (Some(drive), Some(':'), Some('\\' | '/')) if drive.is_ascii_alphabetic() => {
                ("drive", &chunk[3..])
            }
            _ => return None,
        }
    };
    let separators: &[char] = if root == "drive" {
        &['\\', '/']
    } else {
        &['/']
    };
    let parts: Vec<&str> = rest
        .split(separators)
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let plausible = !parts.is_empty()
        && (parts.len() >= 2 || root == "~/" || parts[0].contains('.'))
        && parts
            .iter()
            .all(|part| part.chars().all(|c| !c.is_control()) && !part.contains("//"));
    if !plausible {
        return None;
    }
    Some(match root {
        "drive" => format!("{}:\\{}", chunk[..1].to_ascii_lowercase(), parts.join("\\")),
        root => format!("{root}{}", parts.join("/")),
    })
}

/// Long numbers (6 digits or more; spaces, `-` and `.` between digit groups dropped) and
/// IBANs whose check digits hold, anywhere in `text`. Read as bytes: every character either
/// takes part in is ASCII, and any other character (an accented letter, a dash) ends a word.
fn numbers_and_ibans(text: &str, out: &mut Vec<Token>) {
    let bytes = text.as_bytes();
    if !bytes.iter().any(u8::is_ascii_digit) {
        return;
    }
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let word_start = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        if word_start
            && byte.is_ascii_alphabetic()
            && let Some((iban, used)) = iban_at(&bytes[at..])
        {
            out.push(Token::new(Kind::Iban, iban));
            at += used;
            continue;
        }
        if byte.is_ascii_digit() && word_start {
            let mut digits = String::new();
            let mut end = at;
            let mut cursor = at;
            while cursor < bytes.len() {
                let here = bytes[cursor];
                if here.is_ascii_digit() {
                    digits.push(char::from(here));
                    cursor += 1;
                    end = cursor;
                } else if matches!(here, b' ' | b'-' | b'.')
                    && bytes.get(cursor + 1).is_some_and(u8::is_ascii_digit)
                {
                    cursor += 1;
                } else {
                    break;
                }
            }
            let word_end = bytes
                .get(end)
                .is_none_or(|next| !next.is_ascii_alphanumeric());
            if digits.len() >= 6 && word_end {
                out.push(Token::new(Kind::Number, digits));
            }
            at = end.max(at + 1);
            continue;
        }
        at += 1;
    }
}

/// The IBAN starting at `bytes` (country letters, check digits, then letters and digits,
/// optionally in groups separated by single spaces) and how many bytes it used, if its check
/// digits hold (ISO 13616 MOD 97-10).
fn iban_at(bytes: &[u8]) -> Option<(String, usize)> {
    let head = bytes.get(..4)?;
    if !(head[0].is_ascii_alphabetic()
        && head[1].is_ascii_alphabetic()
        && head[2].is_ascii_digit()
        && head[3].is_ascii_digit())
    {
        return None;
    }
    let mut compact = String::new();
    let mut ends = Vec::new();
    let mut cursor = 0;
    while cursor < bytes.len() && compact.len() < 34 {
        let byte = bytes[cursor];
        if byte.is_ascii_alphanumeric() {
            compact.push(char::from(byte.to_ascii_uppercase()));
            cursor += 1;
            ends.push(cursor);
        } else if matches!(byte, b' ' | b'-' | b'\t' | b'\n')
            && bytes.get(cursor + 1).is_some_and(u8::is_ascii_alphanumeric)
        {
            cursor += 1;
        } else {
            break;
        }
    }
    // The longest prefix that is a whole IBAN: a word after it may have been taken in.
    (15..=compact.len()).rev().find_map(|length| {
        let candidate = &compact[..length];
        let ends_a_word = bytes
            .get(ends[length - 1])
            .is_none_or(|next| !next.is_ascii_alphanumeric());
        (ends_a_word && iban_checks(candidate)).then(|| (candidate.to_owned(), ends[length - 1]))
    })
}

pub(crate) fn iban_checks(iban: &str) -> bool {
    let rearranged = iban[4..].chars().chain(iban[..4].chars());
    let mut remainder: u32 = 0;
    for c in rearranged {
        let value = match c.to_digit(36) {
            Some(value) => value,
            None => return false,
        };
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
