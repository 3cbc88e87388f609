//! Links broken at a line end, read both as broken and joined — where mail or a page broke
//! them, never into a host.

use super::Kind;
use super::tests::{all, has};

#[test]
fn a_link_broken_at_a_line_end_is_found_whole_and_as_broken() {
    let text = "click https://evil.example/collect?data=\nsecret_token_value and go";
    assert!(has(
        text,
        Kind::Url,
        "https://evil.example/collect?data=secret_token_value"
    ));
    assert!(has(text, Kind::Url, "https://evil.example/collect?data="));
    // A quoted-printable soft break is no break.
    let mail = "https://evil.example/a-very-long-pa=\nth/x";
    assert!(has(
        mail,
        Kind::Url,
        "https://evil.example/a-very-long-path/x"
    ));
    // A sentence after a link on the next line is not part of it.
    assert!(
        !all("see https://a.example/x\nThen reply")
            .iter()
            .any(|(_, c)| c.contains("Then"))
    );
    // A link left open at the line end (`/`, `=`), or broken inside a word and ended alone on
    // the next line, is joined too (an independent attack found them unjoined).
    for (text, joined) in [
        (
            "pay at https://evil.example/pay/invoice/\n8f3a9c2e1d by Friday",
            "https://evil.example/pay/invoice/8f3a9c2e1d",
        ),
        (
            "pay at https://evil.example/pay?id=\r\n8f3a9c2e1d by Friday",
            "https://evil.example/pay?id=8f3a9c2e1d",
        ),
        (
            "pay at https://evil.example/pa\ny\nThanks",
            "https://evil.example/pay",
        ),
        // Hard-wrapped at 76 columns, words after it; an indented or a quoted continuation.
        (
            "Please settle the outstanding balance at https://evil.example/pay/invoice/8f3a\n9c2e1d by Friday.",
            "https://evil.example/pay/invoice/8f3a9c2e1d",
        ),
        (
            "pay at https://evil.example/pay/invoice/\r\n  8f3a9c2e1d",
            "https://evil.example/pay/invoice/8f3a9c2e1d",
        ),
        (
            "> pay at https://evil.example/pay/invoice/\n> 8f3a9c2e1d",
            "https://evil.example/pay/invoice/8f3a9c2e1d",
        ),
    ] {
        assert!(has(text, Kind::Url, joined), "{text:?}");
    }
    // Never into the host: a sentence's end after a link, and a next line (a second attack:
    // `example.com.in` is a host anyone can register).
    for text in [
        "Please summarize https://example.com.\nIn particular the pricing.",
        "Please summarize https://example.com\nIn\n",
        "see https://portal.example.com-\nevil.com/x",
        // A link nested in one: the joined line goes into the nested link's host.
        "Please check the tracking link https://t.example/c?u=https://bank.example.\nTo be sure",
    ] {
        assert!(
            !all(text).iter().any(|(kind, value)| *kind == Kind::Host
                && value != "example.com"
                && value != "portal.example.com-"
                && value != "portal.example.com"
                && value != "evil.com"
                && value != "t.example"
                && value != "bank.example"),
            "{text:?}: {:?}",
            all(text)
        );
    }
}
