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
// text on their own; the short ones (`sk-`, `sk_live_`, `rk_live_`) are in [`SHORT_TOKEN`].
static CLOUD_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}")
        .expect("a fixed pattern")
});

static API_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"gh[pousr]_[A-Za-z0-9]{36,}",
        r"|github_pat_[A-Za-z0-9_]{22,}",
        r"|xox[abposre]-[A-Za-z0-9\-]{10,}",
        r"|xapp-[A-Za-z0-9\-]{10,}",
        // A JSON Web Token, signed or not (`alg: none` leaves the signature empty).
        r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
    ))
    .expect("a fixed pattern")
});

/// Tokens of a short prefix, which ends words too (`task-…`, `desk-…`, `network_live_…`): one
/// starts a text, or follows a character that is no letter, or an escape written out before it
/// (`\n`, `%3D`, quoted-printable `=3D`, `\x3d`, `\u003e`). The token is the group `token`;
/// matched in one pass, in time linear in the text (searching again after each word's end took
/// time quadratic in a text of `task-` repeated: 512 KB, 106 s).
static SHORT_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?:^|[^A-Za-z]|\\[A-Za-z]|[%=][0-9A-Fa-f]{2}|\\x[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4})",
        r"(?P<token>sk-(?:proj-)?[A-Za-z0-9_\-]{20,}|[sr]k_live_[0-9A-Za-z]{20,})",
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
            Self::ApiToken => {
                spans(&API_TOKEN, text, out);
                out.extend(SHORT_TOKEN.captures_iter(text).filter_map(|found| {
                    let token = found.name("token")?;
                    Some((token.start(), token.end()))
                }));
            }
            Self::CardNumber => grouped::card_numbers(text, out),
            Self::Iban => grouped::ibans(text, out),
        }
    }
}

fn spans(pattern: &Regex, text: &str, out: &mut Vec<(usize, usize)>) {
    out.extend(
        pattern
            .find_iter(text)
            .map(|found| (found.start(), found.end())),
    );
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
