//! The address and link readings' tests: the plain link's shortcut, the byte searches held to
//! the library's, and links broken by quoted-printable soft breaks.

mod shortcut {
    use proptest::prelude::*;

    use super::super::{plain_url, respelled_url};

    proptest! {
        /// Wherever the shortcut answers, it answers as the general canonicalisation does.
        #[test]
        fn a_plain_link_is_canonical_as_any_link_is(
            scheme in "(http|https|HTTP|h2+x|ftp)",
            rest in prop_oneof![
                r"[a-zA-Z0-9:/?#%@.\\~_=&\[\]-]{0,40}",
                // Mostly plain: the shortcut answers for many of these.
                r"[a-z0-9.-]{1,12}(/[a-z0-9._~-]{0,6}){0,4}(\?[a-z0-9=&./?-]{0,12})?",
            ],
        ) {
            let link = format!("{scheme}://{rest}");
            if let Some(plain) = plain_url(&link) {
                prop_assert_eq!(Some(plain), respelled_url(&link), "{}", link);
            }
        }
    }

    #[test]
    fn the_shortcut_answers_for_plain_links_only() {
        let read = |link| plain_url(link).map(|link| (link.url.clone(), link.host().to_owned()));
        for (link, url, host) in [
            (
                "https://reports.example/12/q3?lang=en",
                "https://reports.example/12/q3?lang=en",
                "reports.example",
            ),
            ("https://a.example", "https://a.example/", "a.example"),
            ("https://a.example?q", "https://a.example/?q", "a.example"),
            ("https://a.example/?q", "https://a.example/?q", "a.example"),
            (
                "https://a.example/a/?q=//./..",
                "https://a.example/a/?q=//./..",
                "a.example",
            ),
            ("https://a.example/a/", "https://a.example/a/", "a.example"),
            (
                "https://a.example/.a/a.",
                "https://a.example/.a/a.",
                "a.example",
            ),
            (
                "svn+ssh://a.example/x",
                "svn+ssh://a.example/x",
                "a.example",
            ),
            ("h2-x.1://a.example/x", "h2-x.1://a.example/x", "a.example"),
        ] {
            assert_eq!(
                read(link),
                Some((url.to_owned(), host.to_owned())),
                "{link}"
            );
        }
        for respelled in [
            "HTTPS://a.example/",
            "https://A.example/",
            "https://a.example:443/",
            "https://a.example/%7e",
            "https://a.example/./x",
            "https://a.example//x",
            "https://a.example/x#top",
            "https://u@a.example/",
            "https://a.example\\@b.example/",
            "https://a.example./",
            "https://a.example/a//b",
            "https://a.example/a/.",
            "https://a.example/a/..?q",
            "https://a.example/./",
            "https://a.example:8443/",
            "https://a.example x",
        ] {
            assert_eq!(plain_url(respelled), None, "{respelled}");
        }
    }
}

mod byte_search {
    use proptest::prelude::*;

    use super::super::*;

    proptest! {
        #[test]
        fn the_byte_searches_find_what_the_library_searches_find(
            text in prop::collection::vec(
                prop::sample::select(vec![":", "/", "//", "://", "a", "é", ":/", " ", "请", "+", "=", "~", ",", "<"]),
                0..16,
            ).prop_map(|pieces| pieces.concat()),
        ) {
            prop_assert_eq!(scheme_separator(&text), text.find("://"));
            prop_assert_eq!(split_scheme(&text), text.split_once("://"));
            for byte in [b':', b'/', b'a'] {
                let c = char::from(byte);
                prop_assert_eq!(rsplit_at_byte(&text, byte), text.rsplit_once(c));
                let split: Vec<&str> = split_at_ascii(&text, |b| b == byte || b == b' ').collect();
                // As the characters were read before: the start of the run of characters a
                // local part may hold that ends the text.
                let by_chars = text
                    .char_indices()
                    .rev()
                    .take_while(|(_, c)| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(*c))
                    .last()
                    .map_or(text.len(), |(at, _)| at);
                prop_assert_eq!(local_part_start(&text), by_chars);
                prop_assert_eq!(split, text.split([c, ' ']).collect::<Vec<_>>());
            }
        }
    }
}

mod soft_breaks {
    use super::super::super::tests::all;

    #[test]
    fn a_soft_break_joins_on_either_line_ending_and_a_bare_carriage_return_is_none() {
        // Either line ending, after other `=` (a query's) and with a bare carriage return before.
        for mail in [
            "https://evil.example/?q=1&a-very-long-pa=\r\nth/x",
            "x=\r y=z https://evil.example/a-very-long-pa=\nth/x",
        ] {
            assert!(
                all(mail).iter().any(|(_, c)| c.ends_with("long-path/x")),
                "{mail:?}"
            );
        }
        assert!(
            !all("https://evil.example/a-very-long-pa=\rth/x")
                .iter()
                .any(|(_, c)| c.ends_with("long-path/x"))
        );
    }
}

/// An IP address without a scheme is a link or a host where a page may plant one: four decimal
/// parts alone, any spelling before a path or port or after `//`; a short number is not.
#[test]
fn an_ip_address_without_a_scheme_is_read_where_a_page_may_plant_one() {
    use super::super::Kind;
    use super::super::tests::has;
    for text in [
        "Mirror: 203.0.113.5",
        "see 203.0.113.5/pay now",
        "see 203.0.113.5:8080/pay",
        "see 203.0.113.5./pay",
        "see //0xcb.0.113.5/pay",
        "see //203.0.28933/pay",
        "see 203.0.28933/pay",
        "see 3405803781/pay",
        "see 0xcb.0.113.5/pay",
    ] {
        assert!(has(text, Kind::Host, "203.0.113.5"), "{text}");
    }
    for text in ["from 2024/05", "version 1.2.3/stable", "1.5/2", "v1.2.3.4"] {
        assert!(
            !super::super::tests::all(text)
                .iter()
                .any(|(kind, _)| *kind == Kind::Host),
            "{text}"
        );
    }
}
