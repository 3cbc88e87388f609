//! Hosts that are IP addresses, read as URL parsers read them (the WHATWG URL standard's host
//! parser): a host whose last label is a number is an IPv4 address however it is written —
//! `3405803781`, `0xcb.0.113.5`, `0313.0.113.5`, `203.0.29957`, `203.0.113.005` are all
//! `203.0.113.5` to a browser, `fetch`, reqwest or the `url` crate — and a bracketed host is an
//! IPv6 address, written in one canonical form; one that maps an IPv4 address
//! (`[::ffff:203.0.113.5]`, `[::ffff:cb00:7105]`) is that IPv4 address, where a dual-stack socket
//! connects. An independent attack had each of those spellings pass as a host nobody named. A
//! host a parser refuses (`0x1g.0.0.1`, `[::ffff:evil.example]`) is no host: its link is no link.

/// How a host is read: as written, written again (an IP address in its canonical form), or not
/// at all (a parser refuses it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum IpHost {
    /// Not an IP address, or one already in its canonical form.
    AsWritten,
    /// An IP address, canonical.
    Respelled(String),
    /// Parsers refuse it.
    Refused,
}

/// How URL parsers read `host` (lower-cased, percent-decoded, without its port).
pub(super) fn ip_host(host: &str) -> IpHost {
    if let Some(inside) = host.strip_prefix('[') {
        return match inside.strip_suffix(']').and_then(ipv6) {
            Some(canonical) if canonical == host => IpHost::AsWritten,
            Some(canonical) => IpHost::Respelled(canonical),
            None => IpHost::Refused,
        };
    }
    if !ends_in_a_number(host) {
        return IpHost::AsWritten;
    }
    match ipv4(host) {
        Some(address) => {
            let canonical = dotted(address);
            if canonical == host {
                IpHost::AsWritten
            } else {
                IpHost::Respelled(canonical)
            }
        }
        None => IpHost::Refused,
    }
}

/// The hosts `text` writes as a link's, after `//` (`https://3405803781/…`, `//203.0.113.5/…`),
/// canonical: a person's request names an IP address only so.
pub(crate) fn linked_hosts(text: &str) -> std::collections::HashSet<String> {
    let mut out = Vec::new();
    for word in text.split_whitespace().filter(|word| word.contains("//")) {
        let _ = super::tokens(word, &mut out);
    }
    out.into_iter()
        .filter(|token| token.kind == super::Kind::Host)
        .map(|token| token.canonical)
        .collect()
}

/// Whether `token` (a link or a host) names an IP address that is none of `linked` (see
/// [`linked_hosts`]). Read the way results are read, a person's figures would name addresses — a
/// bank account `3405803781/0800`, a budget `1.200.000.000 EUR`, a build `10.0.19.41`
/// (independent attacks) — and a rule letting through what the person named would let the model
/// fetch them.
pub(crate) fn an_ip_not_linked(
    token: &super::Token,
    linked: &std::collections::HashSet<String>,
) -> bool {
    let host = match token.kind {
        super::Kind::Host => token.canonical.as_str(),
        super::Kind::Url => {
            let Some((_, rest)) = token.canonical.split_once("://") else {
                return false;
            };
            let end = if rest.starts_with('[') {
                rest.find(']').map_or(rest.len(), |at| at + 1)
            } else {
                rest.find([':', '/', '?']).unwrap_or(rest.len())
            };
            &rest[..end]
        }
        _ => return false,
    };
    let is_ip = host.starts_with('[') || ends_in_a_number(host);
    is_ip && !linked.contains(host)
}

/// Whether the last label of `host` (a trailing empty one dropped) is a number, so parsers read
/// the host as an IPv4 address.
pub(super) fn ends_in_a_number(host: &str) -> bool {
    let host = host
        .strip_suffix('.')
        .filter(|rest| !rest.is_empty())
        .unwrap_or(host);
    let last = host.rsplit('.').next().unwrap_or(host);
    !last.is_empty() && (last.bytes().all(|byte| byte.is_ascii_digit()) || number(last).is_some())
}

/// The address `host` is as an IPv4 address: one to four parts, each decimal, `0x` hex or
/// `0`-led octal, the last filling the bytes the others leave.
fn ipv4(host: &str) -> Option<u32> {
    let host = host
        .strip_suffix('.')
        .filter(|rest| !rest.is_empty())
        .unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let numbers = parts
        .iter()
        .map(|part| number(part))
        .collect::<Option<Vec<u64>>>()?;
    let (last, before) = numbers.split_last()?;
    if before.iter().any(|&part| part > 255) || *last >= 256_u64.pow(5 - parts.len() as u32) {
        return None;
    }
    let mut address = *last;
    for (at, &part) in before.iter().enumerate() {
        address += part << (8 * (3 - at));
    }
    u32::try_from(address).ok()
}

/// One part of an IPv4 address; `None` for an empty part, a bad digit, or one past 2^32.
fn number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        return Some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // More digits than a 32-bit number holds (leading zeros aside) are past any address.
    let digits = digits.trim_start_matches('0');
    if digits.len() > 11 {
        return Some(u64::MAX);
    }
    u64::from_str_radix(if digits.is_empty() { "0" } else { digits }, radix).ok()
}

fn dotted(address: u32) -> String {
    let [a, b, c, d] = address.to_be_bytes();
    format!("{a}.{b}.{c}.{d}")
}

/// The canonical form of the IPv6 address `inside` the brackets: `[…]` in lower-case hex, the
/// first longest run of zero pieces compressed; or the dotted IPv4 address an IPv4-mapped one
/// maps. `None` where parsers refuse it (a zone, a bad piece, too many or too few pieces).
fn ipv6(inside: &str) -> Option<String> {
    let pieces = ipv6_pieces(inside)?;
    if pieces[..5] == [0; 5] && pieces[5] == 0xffff {
        return Some(dotted((u32::from(pieces[6]) << 16) | u32::from(pieces[7])));
    }
    // The first longest run of two or more zero pieces.
    let (mut best, mut best_len, mut run_start, mut run_len) = (None, 1, 0, 0);
    for (at, &piece) in pieces.iter().enumerate() {
        if piece == 0 {
            if run_len == 0 {
                run_start = at;
            }
            run_len += 1;
            if run_len > best_len {
                best = Some(run_start);
                best_len = run_len;
            }
        } else {
            run_len = 0;
        }
    }
    let hex = |pieces: &[u16]| {
        pieces
            .iter()
            .map(|piece| format!("{piece:x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    Some(match best {
        Some(start) => format!(
            "[{}::{}]",
            hex(&pieces[..start]),
            hex(&pieces[start + best_len..])
        ),
        None => format!("[{}]", hex(&pieces)),
    })
}

/// The eight pieces of an IPv6 address (RFC 4291's text forms, as the WHATWG parser takes them).
fn ipv6_pieces(text: &str) -> Option<[u16; 8]> {
    let (head, tail) = match text.split_once("::") {
        Some((head, tail)) => (head, Some(tail)),
        None => (text, None),
    };
    let parse = |side: &str, last: bool| -> Option<Vec<u16>> {
        if side.is_empty() {
            return Some(Vec::new());
        }
        let groups: Vec<&str> = side.split(':').collect();
        let mut pieces = Vec::with_capacity(8);
        for (at, group) in groups.iter().enumerate() {
            if last && at + 1 == groups.len() && group.contains('.') {
                let [a, b, c, d] = embedded_ipv4(group)?;
                pieces.push(u16::from_be_bytes([a, b]));
                pieces.push(u16::from_be_bytes([c, d]));
            } else if (1..=4).contains(&group.len())
                && group.bytes().all(|byte| byte.is_ascii_hexdigit())
            {
                pieces.push(u16::from_str_radix(group, 16).ok()?);
            } else {
                return None;
            }
        }
        Some(pieces)
    };
    let head = parse(head, tail.is_none())?;
    let mut pieces = [0_u16; 8];
    match tail {
        None if head.len() == 8 => pieces.copy_from_slice(&head),
        Some(tail) => {
            let tail = parse(tail, true)?;
            if head.len() + tail.len() > 7 {
                return None;
            }
            pieces[..head.len()].copy_from_slice(&head);
            pieces[8 - tail.len()..].copy_from_slice(&tail);
        }
        None => return None,
    }
    Some(pieces)
}

/// A dotted IPv4 address inside an IPv6 one: four decimal parts, each at most 255, none with a
/// leading zero (the WHATWG parser refuses the rest).
fn embedded_ipv4(text: &str) -> Option<[u8; 4]> {
    let parts: Vec<&str> = text.split('.').collect();
    let [a, b, c, d] = parts.as_slice() else {
        return None;
    };
    let byte = |part: &str| {
        let plain = !part.is_empty()
            && part.len() <= 3
            && part.bytes().all(|byte| byte.is_ascii_digit())
            && (part == "0" || !part.starts_with('0'));
        plain.then(|| part.parse::<u8>().ok()).flatten()
    };
    Some([byte(a)?, byte(b)?, byte(c)?, byte(d)?])
}

#[cfg(test)]
mod tests {
    use super::{IpHost, ip_host};

    #[test]
    fn every_spelling_of_an_ipv4_address_is_its_dotted_form() {
        for spelling in [
            "3405803781",
            "0xcb.0.113.5",
            "0xcb007105",
            "0313.0.113.5",
            "203.0.28933",
            "203.28933",
            "203.0.113.005",
            "203.0.113.5.",
            "0xCB.0.113.5",
            "0xcb.0x0.0x71.0x5",
            "[::ffff:203.0.113.5]",
            "[::ffff:cb00:7105]",
            "[0:0:0:0:0:ffff:cb00:7105]",
            "[0000:0000:0000:0000:0000:ffff:cb00:7105]",
        ] {
            assert_eq!(
                ip_host(spelling),
                IpHost::Respelled("203.0.113.5".to_owned()),
                "{spelling}"
            );
        }
        assert_eq!(ip_host("203.0.113.5"), IpHost::AsWritten);
        assert_eq!(ip_host("0"), IpHost::Respelled("0.0.0.0".to_owned()));
        assert_eq!(ip_host("0x"), IpHost::Respelled("0.0.0.0".to_owned()));
    }

    #[test]
    fn names_that_are_no_numbers_are_hosts_as_written() {
        for host in [
            "example.com",
            "evil.example",
            "1.example",
            "x.0xg",
            "203.0.113.example",
        ] {
            assert_eq!(ip_host(host), IpHost::AsWritten, "{host}");
        }
    }

    #[test]
    fn addresses_parsers_refuse_are_no_hosts() {
        for host in [
            "256.0.0.1",
            "1.2.3.4.5",
            "0x1g.0.0.1",
            "1.2.3.09",
            "4294967296",
            "99999999999999999999",
            "1..2.3",
            "example.1.2.3.4.5",
            "[::ffff:evil.example]",
            "[1:2:3:4:5:6:7:8:9]",
            "[1::2::3]",
            "[fe80::1%eth0]",
            "[::ffff:203.0.113.05]",
            "[12345::]",
            "[::1",
        ] {
            assert_eq!(ip_host(host), IpHost::Refused, "{host}");
        }
    }

    #[test]
    fn ipv6_addresses_are_written_one_way() {
        for (spelling, canonical) in [
            ("[::1]", "[::1]"),
            ("[0:0:0:0:0:0:0:1]", "[::1]"),
            ("[2001:DB8:0:0:1:0:0:1]", "[2001:db8::1:0:0:1]"),
            ("[2001:0db8::0001]", "[2001:db8::1]"),
            ("[1:0:0:2:0:0:0:3]", "[1:0:0:2::3]"),
            ("[1:2:3:4:5:6:7:8]", "[1:2:3:4:5:6:7:8]"),
            ("[::]", "[::]"),
            ("[1:0:2:3:4:5:6:7]", "[1:0:2:3:4:5:6:7]"),
        ] {
            let read = match ip_host(&spelling.to_ascii_lowercase()) {
                IpHost::AsWritten => spelling.to_ascii_lowercase(),
                IpHost::Respelled(host) => host,
                IpHost::Refused => panic!("{spelling} refused"),
            };
            assert_eq!(read, canonical, "{spelling}");
        }
    }
}
