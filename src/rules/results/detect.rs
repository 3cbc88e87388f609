//! What a result rule looks for: secrets (private keys, cloud and API tokens) and personal data
//! checked the way it is issued (card numbers by Luhn, IBANs by their check digits), each found
//! as byte spans of a text. Patterns run in the `regex` crate's engine, in time linear in the
//! text.

use std::sync::LazyLock;

use regex::Regex;

use super::grouped;
use serde::{Deserialize, Serialize};

/// A kind of content a result rule finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detector {
    /// A PEM private key block (`-----BEGIN … PRIVATE KEY-----` to its `END` line, or to the end).
    PrivateKey,
    /// A cloud credential: an AWS access key id (`AKIA…`, `ASIA…`), a Google API key (`AIza…`).
    CloudToken,
    /// An API token of a well-known service: GitHub (`ghp_…`, `github_pat_…`), Slack
    /// (`xoxb-…`), OpenAI and Anthropic (`sk-…`, `sk-ant-…`), Stripe (`sk_live_…`), and JSON
    /// Web Tokens (`eyJ….eyJ….…`).
    ApiToken,
    /// A payment card number: 13 to 19 digits in whole groups of a run of digit groups (up to
    /// three spaces or dashes of any kind between groups) whose Luhn check holds.
    CardNumber,
    /// An IBAN whose check digits hold (ISO 13616), grouped or not (up to three spaces or dashes
    /// of any kind between groups).
    Iban,
}

static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
    )
    .expect("a fixed pattern")
});

// No word boundary before or after a token: `AWS_KEY_AKIA…`, `id9AKIA…`, a `\n` or `%3D` written
// out before one, or a word glued after it hid it from `\b`. The prefixes are rare enough in
// text on their own; the short ones (`sk-`, `sk_live_`) are told from a word's end by
// [`starts_a_token`].
static CLOUD_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}")
        .expect("a fixed pattern")
});

static API_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"gh[pousr]_[A-Za-z0-9]{36,}",
        r"|github_pat_[A-Za-z0-9_]{22,}",
        r"|xox[abposr]-[A-Za-z0-9\-]{10,}",
        r"|sk-ant-[A-Za-z0-9_\-]{20,}",
        r"|sk-(?:proj-)?[A-Za-z0-9_\-]{20,}",
        r"|[sr]k_live_[0-9A-Za-z]{20,}",
        r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ))
    .expect("a fixed pattern")
});

impl Detector {
    /// Whether `text` holds the start of a private key that does not end in it (its `-----END`
    /// line missing): the rest may stand in another text of the result (the next content block,
    /// the next element of a list of lines), where no detector sees it as a key.
    pub(crate) fn leaves_a_key_open(self, text: &str) -> bool {
        self == Self::PrivateKey
            && PRIVATE_KEY
                .find_iter(text)
                .any(|found| !found.as_str().contains("-----END "))
    }

    /// The byte spans of `text` this detector finds.
    pub(crate) fn find(self, text: &str, out: &mut Vec<(usize, usize)>) {
        match self {
            Self::PrivateKey => spans(&PRIVATE_KEY, text, out),
            Self::CloudToken => spans(&CLOUD_TOKEN, text, out),
            Self::ApiToken => spans(&API_TOKEN, text, out),
            Self::CardNumber => grouped::card_numbers(text, out),
            Self::Iban => grouped::ibans(text, out),
        }
    }
}

/// Every match of `pattern` in `text` that [`starts_a_token`]; after one that does not, the
/// search goes on from its next character (a token may start inside it: `task-ghp_…`).
fn spans(pattern: &Regex, text: &str, out: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(found) = pattern.find_at(text, from) {
        if starts_a_token(text, found.start(), found.as_str()) {
            out.push((found.start(), found.end()));
            from = found.end();
        } else {
            from = found.start()
                + text[found.start()..]
                    .chars()
                    .next()
                    .map_or(1, char::len_utf8);
        }
    }
}

/// Whether `token`, found at `start` of `text`, starts a token rather than ending a word: a
/// short prefix (`sk-`, `sk_live_`, `rk_live_`) after a letter is a word's end (`task-…`,
/// `desk-…`) — unless the letter ends an escape written out (`\n`, `%3D`).
fn starts_a_token(text: &str, start: usize, token: &str) -> bool {
    if !(token.starts_with("sk") || token.starts_with("rk")) {
        return true;
    }
    match &text.as_bytes()[..start] {
        [.., b'\\', letter] if letter.is_ascii_alphabetic() => true,
        [.., b'%', high, low] if high.is_ascii_hexdigit() && low.is_ascii_hexdigit() => true,
        [.., before] => !before.is_ascii_alphabetic(),
        [] => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(detector: Detector, text: &str) -> Vec<String> {
        let mut spans = Vec::new();
        detector.find(text, &mut spans);
        spans
            .into_iter()
            .map(|(start, end)| text[start..end].to_owned())
            .collect()
    }

    #[test]
    fn each_detector_finds_its_kind_and_not_look_alikes() {
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(found(Detector::PrivateKey, &format!("x {key} y")), [key]);
        assert_eq!(
            found(
                Detector::PrivateKey,
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE cut"
            ),
            ["-----BEGIN RSA PRIVATE KEY-----\nMIIE cut"]
        );
        assert!(found(Detector::PrivateKey, "-----BEGIN PUBLIC KEY-----").is_empty());
        assert_eq!(
            found(Detector::CloudToken, "id AKIAIOSFODNN7EXAMPLE ok"),
            ["AKIAIOSFODNN7EXAMPLE"]
        );
        assert!(found(Detector::CloudToken, "AKIAshort").is_empty());
        for token in [
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "xoxb-1234567890-abcdef",
            "sk-proj-abcdefghijklmnopqrstuv",
            "sk-ant-api03-abcdefghijklmnopqrst",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk",
        ] {
            assert_eq!(found(Detector::ApiToken, &format!("t={token};")), [token]);
        }
        assert!(found(Detector::ApiToken, "sk-short").is_empty());
        assert_eq!(
            found(Detector::CardNumber, "card 4111 1111 1111 1111, exp"),
            ["4111 1111 1111 1111"]
        );
        assert!(found(Detector::CardNumber, "order 4111 1111 1111 1112").is_empty());
        assert_eq!(
            found(Detector::Iban, "to DE89 3704 0044 0532 0130 00 now"),
            ["DE89 3704 0044 0532 0130 00"]
        );
        assert!(found(Detector::Iban, "DE88 3704 0044 0532 0130 00").is_empty());
    }
}
