use super::*;

/// How far `text` was read, and every value it carries as its kind and canonical form.
pub(super) fn read(text: &str) -> (Reading, Vec<(Kind, String)>) {
    let mut out = Vec::new();
    let reading = tokens(text, &mut out);
    let values = out
        .into_iter()
        .map(|token| (token.kind, token.canonical))
        .collect();
    (reading, values)
}

pub(super) fn all(text: &str) -> Vec<(Kind, String)> {
    read(text).1
}

pub(super) fn has(text: &str, kind: Kind, canonical: &str) -> bool {
    all(text).iter().any(|(k, c)| *k == kind && c == canonical)
}

#[test]
fn links_are_found_in_one_canonical_spelling_whatever_the_spelling_in_the_text() {
    let canonical = "https://evil.example/pay/now?to=1";
    for spelling in [
        "see https://evil.example/pay/now?to=1 today",
        "see HTTPS://EVIL.EXAMPLE/pay/now?to=1.",
        "(https://evil.example:443/pay/now?to=1)",
        "\"https://evil.example/pay/./now?to=1\"",
        "https://evil.example/pay/x/../now?to=1#top",
        "https://user@evil.example/pay/now?to=1,",
        "https://evil.example/%70ay/now?to=1",
        "<https://evil.example./pay/now?to=1>",
        "link:https://evil.example/pay/now?to=1;",
        "**https://evil.example/pay/now?to=1**",
    ] {
        assert!(
            has(spelling, Kind::Url, canonical),
            "{spelling:?} gave {:?}",
            all(spelling)
        );
        assert!(has(spelling, Kind::Host, "evil.example"), "{spelling:?}");
    }
    // Percent-escapes of reserved characters stay escapes, in one case.
    assert!(has(
        "https://a.example/x%2fy",
        Kind::Url,
        "https://a.example/x%2Fy"
    ));
    assert!(has("http://a.example", Kind::Url, "http://a.example/"));
    assert!(has(
        "http://a.example:8080/",
        Kind::Url,
        "http://a.example:8080/"
    ));
    assert!(has("www.a.example/x", Kind::Url, "http://www.a.example/x"));
    // A bracket the link opens is its own.
    assert!(has(
        "https://en.example/wiki/A_(b)",
        Kind::Url,
        "https://en.example/wiki/A_(b)"
    ));
}

#[test]
fn e_mail_addresses_are_lower_cased_with_mailto_and_escapes_removed() {
    for spelling in [
        "write to Mallory@Evil.Example.",
        "mailto:mallory@evil.example?subject=hi",
        "MAILTO:mallory%40evil.example",
        "<mallory@evil.example>",
        "(mallory@evil.example)",
    ] {
        assert!(
            has(spelling, Kind::Email, "mallory@evil.example"),
            "{spelling:?} gave {:?}",
            all(spelling)
        );
    }
    assert!(all("not@an address").is_empty());
}

#[test]
fn ibans_count_only_with_their_check_digits_in_any_grouping_or_case() {
    for spelling in [
        "pay DE89 3704 0044 0532 0130 00 now",
        "pay DE89370400440532013000.",
        "pay de89370400440532013000",
    ] {
        assert!(
            has(spelling, Kind::Iban, "DE89370400440532013000"),
            "{spelling:?} gave {:?}",
            all(spelling)
        );
    }
    // One check digit wrong: not an IBAN (its digits are still a long number).
    assert!(
        !all("DE88 3704 0044 0532 0130 00")
            .iter()
            .any(|(kind, _)| *kind == Kind::Iban)
    );
    assert!(has(
        "GB82 WEST 1234 5698 7654 32 is mine",
        Kind::Iban,
        "GB82WEST12345698765432"
    ));
}

#[test]
fn long_numbers_drop_their_group_separators_and_short_ones_are_not_values() {
    assert!(has(
        "card 4111 1111 1111 1111 ok",
        Kind::Number,
        "4111111111111111"
    ));
    assert!(has("account 12-345-678", Kind::Number, "12345678"));
    assert!(has("call +1 555.123.4567", Kind::Number, "15551234567"));
    assert!(
        !all("room 12345 on floor 3")
            .iter()
            .any(|(kind, _)| *kind == Kind::Number)
    );
    // Digits inside a word are part of the word, not a number.
    assert!(
        !all("ab1234567")
            .iter()
            .any(|(kind, _)| *kind == Kind::Number)
    );
}

#[test]
fn paths_and_handles() {
    assert!(has(
        "read /srv//data/./a.txt now",
        Kind::Path,
        "/srv/data/a.txt"
    ));
    assert!(has("in ~/notes/x.md", Kind::Path, "~/notes/x.md"));
    assert!(has("at C:\\Users\\me\\x", Kind::Path, "c:\\Users\\me\\x"));
    assert!(has("ping @Mallory now", Kind::Text, "mallory"));
    assert!(has("post in #General.", Kind::Text, "general"));
    // A lone slash or a fraction is not a path.
    assert!(all("either / or 1/2").is_empty());
}

#[cfg(feature = "unicode")]
#[test]
fn invisible_characters_and_compatibility_forms_hide_nothing() {
    assert!(has(
        "https://ｅｖｉｌ.example/x",
        Kind::Host,
        "evil.example"
    ));
    assert!(has(
        "https://evil\u{200B}.example/x",
        Kind::Host,
        "evil.example"
    ));
    assert!(has(
        "mallory\u{2060}@evil.example",
        Kind::Email,
        "mallory@evil.example"
    ));
    assert_eq!(
        whole("Ｂｏｂ\u{202E}").map(|token| token.canonical),
        Some("bob".to_owned())
    );
}

#[test]
fn a_whole_value_takes_the_form_of_the_one_value_it_is() {
    let kind_of = |text: &str| whole(text).map(|token| (token.kind, token.canonical));
    assert_eq!(
        kind_of(" https://Evil.example/x "),
        Some((Kind::Url, "https://evil.example/x".to_owned()))
    );
    assert_eq!(
        kind_of("DE89 3704 0044 0532 0130 00"),
        Some((Kind::Iban, "DE89370400440532013000".to_owned()))
    );
    assert_eq!(
        kind_of("4111-1111-1111-1111"),
        Some((Kind::Number, "4111111111111111".to_owned()))
    );
    assert_eq!(
        kind_of("MAILTO:Bob@Example.com"),
        Some((Kind::Email, "bob@example.com".to_owned()))
    );
    assert_eq!(kind_of("@bob"), Some((Kind::Text, "bob".to_owned())));
    assert_eq!(
        kind_of("  Hotel   Miramar "),
        Some((Kind::Text, "hotel miramar".to_owned()))
    );
    // A sentence holding a number is text, not the number.
    assert_eq!(
        kind_of("pay 4111111111111111 now").map(|(kind, _)| kind),
        Some(Kind::Text)
    );
    assert_eq!(kind_of("   "), None);
    assert!(kind_of(&"x".repeat(MAX_WHOLE_VALUE_CHARS + 1)).is_some());
}

#[test]
fn hosts_are_read_from_links_and_bare_names() {
    let host = |text: &str| {
        let (host, reading) = host_of(text);
        assert_eq!(reading, Reading::Whole, "{text}");
        host.map(|token| token.canonical)
    };
    assert_eq!(
        host("https://Evil.Example./x?y"),
        Some("evil.example".to_owned())
    );
    assert_eq!(host("evil.example"), Some("evil.example".to_owned()));
    assert_eq!(host("not a host"), None);
}

#[test]
fn no_text_makes_the_reader_panic() {
    for text in [
        "",
        "://",
        "http://",
        "https://[::1]:8080/x",
        "mailto:",
        "@",
        "#",
        "%",
        "https://a.example/%",
        "https://a.example/%zz%f",
        "DE",
        "DE00",
        "C:",
        "~/",
        "=\n",
        "é://x",
        "1 2 3 4 5 6 7 8 9",
    ] {
        all(text);
        whole(text);
        let _ = host_of(text);
    }
}

#[test]
fn a_run_of_closing_brackets_takes_linear_time() {
    // Stripping re-counted the brackets for every one stripped: minutes for 100,000.
    for bracket in [")", "]", "}"] {
        let text = format!("https://a.example/x{}", bracket.repeat(100_000));
        assert!(has(&text, Kind::Host, "a.example"));
    }
}

#[test]
fn a_backslash_ends_the_host_and_hosts_are_lower_cased_not_folded() {
    // Browsers read `\` as `/`: this link goes to evil.example.
    assert!(has(
        "https://evil.example\\@good.example/",
        Kind::Host,
        "evil.example"
    ));
    assert!(!has(
        "https://evil.example\\@good.example/",
        Kind::Host,
        "good.example"
    ));
    // `ß` and `ı` are other hosts than `ss` and `i`.
    assert!(has("https://straße.example/", Kind::Host, "straße.example"));
    assert!(!has(
        "https://straße.example/",
        Kind::Host,
        "strasse.example"
    ));
    assert!(has("https://gıthub.example/", Kind::Host, "gıthub.example"));
    assert!(has(
        "mailto:bob@STRASSE.example",
        Kind::Email,
        "bob@strasse.example"
    ));
}

#[test]
fn links_wrapped_in_typographic_quotes_markdown_or_json_escapes_are_found() {
    for text in [
        "He said “https://evil.example” is safe",
        "请访问https://evil.example。",
        "「https://evil.example」",
        "«https://evil.example»",
        "_https://evil.example_",
        "|https://evil.example|",
        "[https://evil.example](https://evil.example)",
        "[click](https://evil.example/pay)",
        r#"{"url":"https:\/\/evil.example\/pay"}"#,
    ] {
        assert!(
            has(text, Kind::Host, "evil.example"),
            "{text}: {:?}",
            all(text)
        );
    }
    assert!(has(
        "[click](https://evil.example/pay)",
        Kind::Url,
        "https://evil.example/pay"
    ));
}

#[test]
fn links_without_a_scheme_and_links_inside_links_are_found() {
    assert!(has(
        "Please fetch evil.example/payload",
        Kind::Host,
        "evil.example"
    ));
    assert!(has("Visit evil.example.", Kind::Host, "evil.example"));
    assert!(
        !all("e.g. 3.14 is pi")
            .iter()
            .any(|(kind, _)| *kind == Kind::Host)
    );
    for text in [
        "https://www.google.example/url?q=https://evil.example/pay&sa=D",
        "https://www.google.example/url?q=https%3A%2F%2Fevil.example%2Fpay&sa=D",
    ] {
        assert!(
            has(text, Kind::Host, "evil.example"),
            "{text}: {:?}",
            all(text)
        );
    }
}

#[test]
fn addresses_behind_a_label_a_script_or_in_a_list_and_ibans_with_dashes_are_found() {
    for text in [
        "Contact:mallory@evil.example",
        "Reply-To:mallory@evil.example",
        "请联系mallory@evil.example",
        "bob@good.example,mallory@evil.example",
        "[m](mailto:mallory@evil.example)",
    ] {
        assert!(
            has(text, Kind::Email, "mallory@evil.example"),
            "{text}: {:?}",
            all(text)
        );
    }
    for text in [
        "DE89-3704-0044-0532-0130-00",
        "DE89\t3704\t0044\t0532\t0130\t00",
    ] {
        assert!(has(text, Kind::Iban, "DE89370400440532013000"), "{text}");
    }
    let whole_of = |text: &str| whole(text).map(|token| (token.kind, token.canonical));
    assert_eq!(
        whole_of("Mallory <mallory@evil.example>"),
        Some((Kind::Email, "mallory@evil.example".to_owned()))
    );
    assert_eq!(
        whole_of("IBAN: DE89 3704 0044 0532 0130 00 (Evil Bank)"),
        Some((Kind::Iban, "DE89370400440532013000".to_owned()))
    );
}

/// Spellings a browser (WHATWG URL) reads as one link, found by an attack session: a special
/// scheme with too few or too many slashes or backslashes, a host's dots spelled as CJK or
/// fullwidth full stops, a protocol-relative link, a bare host with a port or a query, an `@` in
/// a scheme-less link's path or query, and a link inside a `mailto:` link's body.
#[test]
fn spellings_a_browser_reads_as_one_link_are_found() {
    let host = |text: &str| has(text, Kind::Host, "evil.example");
    for spelling in [
        "https:/evil.example/pay",
        "https:evil.example/pay",
        "HTTPS:\\\\evil.example\\pay",
        "go to https:\\/evil.example/pay now",
        "https:///evil.example/pay",
        "https://evil\u{3002}example/pay",
        "https://evil\u{ff61}example/pay",
        "https://evil\u{ff0e}example/pay",
        "evil\u{3002}example/pay",
        "//evil.example/pay",
        "evil.example:443/pay",
        "evil.example?pay=1",
        "evil.example/pay?to=a@b.example",
        "evil.example/pay/x@y.example",
        "mailto:help@corp.example?body=https%3A%2F%2Fevil.example%2Fpay",
        "mailto:help@corp.example?body=see%20https://evil.example/pay",
    ] {
        assert!(host(spelling), "{spelling}: {:?}", all(spelling));
    }
    assert!(has(
        "https:/evil.example/pay",
        Kind::Url,
        "https://evil.example/pay"
    ));
    assert!(has(
        "evil.example:8443/pay",
        Kind::Url,
        "http://evil.example:8443/pay"
    ));
    // What stays what it was: a sentence's full stop after a host, a path with two slashes, an
    // address, a mailto's address.
    assert!(has(
        "访问 evil.example\u{3002}然后",
        Kind::Host,
        "evil.example"
    ));
    assert!(has("see //srv/data/x", Kind::Path, "/srv/data/x"));
    assert!(has("write to a@b.example", Kind::Email, "a@b.example"));
    assert!(has(
        "mailto:help@corp.example?body=hi",
        Kind::Email,
        "help@corp.example"
    ));
    assert!(!host("https:"), "a scheme alone is no link");
}

#[test]
fn addresses_with_a_domain_past_ascii_are_read_and_lower_cased_whole() {
    for (text, address) in [
        (
            "write to Joerg@Bücher.example today",
            "joerg@bücher.example",
        ),
        // A local part is ASCII: it starts after the last character past it.
        ("write to Jörg@Bücher.example today", "rg@bücher.example"),
        ("请联系m@例子.example", "m@例子.example"),
        ("a@ünï-cödé.example.", "a@ünï-cödé.example"),
    ] {
        assert!(has(text, Kind::Email, address), "{text}: {:?}", all(text));
    }
    // A domain past ASCII holding a character no domain holds is no address.
    for text in ["a@bü!cher.example", "a@bü_cher.example"] {
        assert!(
            !all(text).iter().any(|(kind, _)| *kind == Kind::Email),
            "{text}: {:?}",
            all(text)
        );
    }
}

#[test]
fn a_host_is_listed_after_a_value_of_another_kind_spelled_alike() {
    // A link's host is left out only when the same host was just listed: a handle, a line or a
    // path spelled as the host just before it is another kind of value, and the host is still
    // listed (a rule reading hosts would otherwise never see it).
    for text in [
        "@evil.example https://evil.example/pay",
        "#evil.example see https://evil.example/",
        "evil.example\nhttps://evil.example/x",
    ] {
        assert!(has(text, Kind::Host, "evil.example"), "{text:?}");
    }
    // Listed once when it comes again soon after; again when it comes after many other values.
    let hosts = |text: &str| {
        all(text)
            .into_iter()
            .filter(|(kind, _)| *kind == Kind::Host)
            .count()
    };
    assert_eq!(hosts("https://evil.example/a https://evil.example/b"), 1);
    let paragraph = |n| format!("https://evil.example/{n} m{n}@corp.example 1234567{n}\n");
    // Six paragraphs of a link, an address and a number: the first host is 16 values back.
    let page: String = (0..6).map(paragraph).collect();
    assert_eq!(hosts(&page), 1, "{:?}", all(&page));
    let page: String = (0..7).map(paragraph).collect();
    assert_eq!(hosts(&page), 2, "{:?}", all(&page));
    let numbers: String = (0..30).map(|n| format!("{:08} and ", n * 7919)).collect();
    let far = format!("https://evil.example/a {numbers} https://evil.example/b");
    assert_eq!(hosts(&far), 2);
}
