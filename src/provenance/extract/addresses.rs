//! Links, e-mail addresses and paths in their canonical spellings: schemes found inside a
//! chunk, percent-decoding, dot segments, a default port.

use super::ip_hosts::{IpHost, ends_in_a_number, ip_host};
use super::{Kind, Token, trim_trailing};

pub(super) fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Where the first `://` of `text` starts: found by its colon, without the setup of a substring
/// search (`str::find` builds a searcher each call, which cost more than the search in a link).
pub(super) fn scheme_separator(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(colon) = bytes[from..].iter().position(|&byte| byte == b':') {
        let at = from + colon;
        if bytes[at + 1..].starts_with(b"//") {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// `text` split at each ASCII byte `splits` accepts, as `str::split` splits it at those
/// characters: a loop over the bytes, where the library's search for a set of characters
/// decodes each character of an address or a link first.
pub(super) fn split_at_ascii(
    text: &str,
    splits: impl Fn(u8) -> bool,
) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        // Only an ASCII byte splits: it is a whole character, so both sides stay text.
        match current
            .bytes()
            .position(|byte| byte.is_ascii() && splits(byte))
        {
            Some(at) => {
                rest = Some(&current[at + 1..]);
                Some(&current[..at])
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}

/// `text` split at the last `byte` (ASCII), as `rsplit_once(char)` splits it.
pub(super) fn rsplit_at_byte(text: &str, byte: u8) -> Option<(&str, &str)> {
    debug_assert!(byte.is_ascii());
    let at = text.bytes().rposition(|here| here == byte)?;
    Some((&text[..at], &text[at + 1..]))
}

/// `link` split at its first `://`, as `split_once("://")` splits it.
pub(super) fn split_scheme(link: &str) -> Option<(&str, &str)> {
    let at = scheme_separator(link)?;
    Some((&link[..at], &link[at + 3..]))
}

/// Where a link's scheme starts in `chunk` (`see:https://…` starts at `https`), if it holds one.
pub(super) fn scheme_start(chunk: &str) -> Option<usize> {
    if let Some(rest) = strip_prefix_ignore_case(chunk, "mailto:")
        && (rest.contains('@') || rest.to_ascii_lowercase().contains("%40"))
    {
        return Some(0);
    }
    let separator = scheme_separator(chunk)?;
    let scheme_from = chunk[..separator]
        .char_indices()
        .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |(at, c)| at + c.len_utf8());
    let scheme = &chunk[scheme_from..separator];
    (!scheme.is_empty() && scheme.starts_with(|c: char| c.is_ascii_alphabetic()))
        .then_some(scheme_from)
}

/// Where a further link starts inside `text` (the rest of a link after its scheme).
pub(super) fn scheme_start_within(text: &str) -> Option<usize> {
    let separator = scheme_separator(text)?;
    let start = text[..separator]
        .char_indices()
        .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |(at, c)| at + c.len_utf8());
    (start < separator).then_some(start)
}

/// An e-mail address in `text`, lower-cased, if `text` is one.
pub(super) fn push_email(text: &str, out: &mut Vec<Token>) -> bool {
    let text = trim_trailing(text.trim_start_matches(['(', '[', '<']));
    let Some((local, domain)) = rsplit_at_byte(text, b'@') else {
        return false;
    };
    let domain = domain.trim_end_matches('.');
    // The address starts where its local part's characters start: `Contact:m@e`, `请联系m@e`
    // and `<m@e` hold `m@e`.
    let local = local[local_part_start(local)..].trim_start_matches('.');
    let local_ok = !local.is_empty();
    let domain_ok = domain.as_bytes().contains(&b'.')
        && !domain.starts_with('.')
        && if domain.is_ascii() {
            domain
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.'))
        } else {
            domain
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.'))
        };
    if local_ok && domain_ok {
        let mut address = String::with_capacity(local.len() + 1 + domain.len());
        for part in [local, "@", domain] {
            address.push_str(part);
        }
        if address.is_ascii() {
            address.make_ascii_lowercase();
        } else {
            address = address.to_lowercase();
        }
        out.push(Token::new(Kind::Email, address));
        true
    } else {
        false
    }
}

/// Where the local part ending `text` starts: after the last character that cannot be in one.
/// Read by bytes: only ASCII bytes are a local part's, and no byte of a longer character is.
fn local_part_start(text: &str) -> usize {
    text.bytes()
        .rposition(|byte| !is_local_part_byte(byte))
        .map_or(0, |at| at + 1)
}

/// Whether `byte` may be in an address's local part: a letter, a digit or one of RFC 5322's
/// `atext` signs, or a dot.
fn is_local_part_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~.".contains(&byte)
}

/// Unreserved characters (RFC 3986 §2.3), which `%XX` must not hide.
fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// `text` with each `%XX` whose byte `decode` accepts decoded, and the others' hex upper-cased.
pub(super) fn percent_decoded(text: &str, decode: impl Fn(u8) -> bool) -> String {
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

/// A link in canonical form, and where its host is in it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Link {
    pub(super) url: String,
    host: std::ops::Range<usize>,
}

impl Link {
    /// The link's host, as canonical as the link.
    pub(super) fn host(&self) -> &str {
        &self.url[self.host.clone()]
    }
}

/// A link in canonical form and its host: scheme and host lower-cased, user information and
/// fragment dropped, the default port dropped, the path's dot segments resolved and its
/// unreserved characters decoded. `None` when there is no host.
pub(super) fn canonical_url(link: &str) -> Option<Link> {
    plain_url(link).or_else(|| respelled_url(link))
}

/// The canonical form of a link already in it — lower-case scheme and host, no port, escape,
/// backslash, fragment, user, empty or dot segment — which is most links: the link itself (and
/// `/` for an empty path), read in one pass and copied once, without the allocations of
/// [`respelled_url`]. `None` for any other link; the two agree wherever this one answers (a
/// property test holds them to it).
fn plain_url(link: &str) -> Option<Link> {
    let separator = scheme_separator(link)?;
    let scheme = &link.as_bytes()[..separator];
    let plain_scheme = !scheme.is_empty()
        && scheme.iter().all(|&byte| {
            byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'+' | b'-' | b'.')
        });
    if !plain_scheme {
        return None;
    }
    let host_start = separator + 3;
    let rest = &link.as_bytes()[host_start..];
    // The host: up to the first `/` or `?`.
    let host_len = rest
        .iter()
        .position(|&byte| {
            !(byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'-' | b'.'))
        })
        .unwrap_or(rest.len());
    let (host, tail) = rest.split_at(host_len);
    if host.is_empty() || host.ends_with(b".") || !matches!(tail.first(), None | Some(b'/' | b'?'))
    {
        return None;
    }
    // An IP address not in its dotted form is written again (`0xcb.0.113.5`).
    let host_text = &link[host_start..host_start + host_len];
    if ends_in_a_number(host_text) && ip_host(host_text) != IpHost::AsWritten {
        return None;
    }
    // The path and the query: graphic bytes but an escape, backslash, fragment, user or
    // bracket; in the path (before the first `?`), no empty segment and no `.` or `..` one.
    let mut in_path = true;
    let mut segment_start = 0;
    let mut path_len = tail.len();
    for (at, &byte) in tail.iter().enumerate() {
        if !byte.is_ascii_graphic() || matches!(byte, b'%' | b'\\' | b'#' | b'@' | b'[' | b']') {
            return None;
        }
        if in_path && matches!(byte, b'/' | b'?') {
            // Two slashes in a row make an empty segment; a `?` may end an empty last one.
            let segment = &tail[segment_start..at];
            if at > 0 && (matches!(segment, b"." | b"..") || byte == b'/' && segment.is_empty()) {
                return None;
            }
            segment_start = at + 1;
            if byte == b'?' {
                in_path = false;
                path_len = at;
            }
        }
    }
    if in_path && path_len > 0 && matches!(&tail[segment_start..], b"." | b"..") {
        return None;
    }
    let host = host_start..host_start + host_len;
    if path_len > 0 {
        return Some(Link {
            url: link.to_owned(),
            host,
        });
    }
    // An empty path is `/`.
    let mut url = String::with_capacity(link.len() + 1);
    url.push_str(&link[..host.end]);
    url.push('/');
    url.push_str(&link[host.end..]);
    Some(Link { url, host })
}

/// The canonical form of any link (see the module's table of spellings).
fn respelled_url(link: &str) -> Option<Link> {
    let (scheme, rest) = split_scheme(link)?;
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
    // An IP address however it is written is the address parsers read (`3405803781` is
    // `203.0.113.5`); one they refuse is no host, and its link no link.
    let host = match ip_host(&host) {
        IpHost::AsWritten => host,
        IpHost::Respelled(address) => address,
        IpHost::Refused => return None,
    };
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
    let host = scheme.len() + 3..scheme.len() + 3 + host.len();
    Some(Link { url, host })
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
pub(super) fn canonical_path(chunk: &str) -> Option<String> {
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

/// The scheme ending at byte `colon` of `text`: the ASCII letters and digits before it.
pub(super) fn scheme_before(text: &str, colon: usize) -> &str {
    let start = text[..colon]
        .rfind(|c: char| !c.is_ascii_alphanumeric())
        .map_or(0, |at| {
            at + text[at..].chars().next().map_or(1, char::len_utf8)
        });
    &text[start..colon]
}

/// Whether `scheme` is one browsers read `scheme:host` of as `scheme://host` (WHATWG's special
/// schemes that have a host).
pub(super) fn is_special_scheme(scheme: &str) -> bool {
    ["https", "http", "wss", "ws", "ftp"]
        .iter()
        .any(|special| special.eq_ignore_ascii_case(scheme))
}

/// `chunk` with a special scheme's slashes made `//` (`https:/evil.example`,
/// `HTTPS:\\\\evil.example`, `https:evil.example`), as browsers read them; `None` when it holds no
/// such scheme or already reads `scheme://host`.
pub(super) fn special_scheme_slashes(chunk: &str) -> Option<String> {
    let colons = chunk
        .bytes()
        .enumerate()
        .filter(|&(_, byte)| byte == b':')
        .map(|(at, _)| at);
    for colon in colons {
        let rest = &chunk[colon + 1..];
        let host = rest.trim_start_matches(['/', '\\']);
        let already = rest.len() - host.len() == 2 && rest.starts_with("//");
        if already || !host.starts_with(|c: char| c.is_alphanumeric()) {
            continue;
        }
        let scheme = scheme_before(chunk, colon);
        let start = colon - scheme.len();
        if is_special_scheme(scheme) {
            return Some(format!("{}{scheme}://{host}", &chunk[..start]));
        }
    }
    None
}

/// Whether `text` is a host name: labels of letters, digits and `-` joined by dots, the last of
/// 2 to 24 letters (`evil.example`, `docs.corp.example`; not `e.g` or `3.14`).
pub(super) fn is_bare_host(text: &str) -> bool {
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

/// Whether `host` (of a link without a scheme; `followed` when a path, a query or a port comes
/// after it) is an IP address as a page may plant one: four decimal parts (`203.0.113.5`), and
/// — with something after it, in hex or with a part of more than three digits, or after `//` —
/// any spelling URL parsers read as one (`3405803781/pay`, `0xcb.0.113.5/pay`,
/// `203.0.28933/pay`). A version, fraction or date (`1.2.3/stable`, `1.5/2`, `2024/05`) is
/// none. A person's request names an address only as a link's host (see
/// `an_ip_text_does_not_link`): read so, figures would name addresses.
pub(super) fn is_bare_ip(host: &str, after_slashes: bool, followed: bool) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    let dotted = parts.len() == 4
        && parts.iter().all(|part| {
            (1..=3).contains(&part.len()) && part.bytes().all(|byte| byte.is_ascii_digit())
        });
    // Spelled otherwise only where no version, fraction or date is: a part in hex, or of more
    // than three digits (`0313.0.113.5`, `203.0.28933`, `3405803781`; not `1.2.3/stable`,
    // `1.5/2`, `2024/05` — a number alone needs eight digits, a public address's).
    let unlike_a_figure = parts.iter().any(|part| {
        let part = part.to_ascii_lowercase();
        part.starts_with("0x") || part.len() > 3 && (parts.len() > 1 || part.len() >= 8)
    });
    let spelled = (after_slashes || followed && unlike_a_figure) && ends_in_a_number(host);
    (dotted || spelled) && ip_host(host) != IpHost::Refused
}

#[cfg(test)]
#[path = "address_tests.rs"]
mod tests;
