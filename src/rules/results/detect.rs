//! What a result rule looks for: secrets (private keys, cloud and API tokens) and personal data
//! checked the way it is issued (card numbers by Luhn, IBANs by their check digits), each found
//! as byte spans of a text. Patterns run in the `regex` crate's engine, in time linear in the
//! text.

use std::sync::LazyLock;

use regex::Regex;
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
    /// A payment card number: 13 to 19 digits (single spaces or dashes between groups) whose
    /// Luhn check holds.
    CardNumber,
    /// An IBAN whose check digits hold (ISO 13616), grouped or not.
    Iban,
}

static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
    )
    .expect("a fixed pattern")
});

static CLOUD_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35})\b")
        .expect("a fixed pattern")
});

static API_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}",
        r"|github_pat_[A-Za-z0-9_]{22,}",
        r"|xox[abposr]-[A-Za-z0-9\-]{10,}",
        r"|sk-ant-[A-Za-z0-9_\-]{20,}",
        r"|sk-(?:proj-)?[A-Za-z0-9_\-]{20,}",
        r"|[sr]k_live_[0-9A-Za-z]{20,}",
        r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})",
    ))
    .expect("a fixed pattern")
});

static CARD_NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d(?:[ \-]?\d){12,18}\b").expect("a fixed pattern"));

static IBAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b[A-Z]{2}\d{2}(?:[ \t\-]?[A-Z0-9]){11,30}\b").expect("a fixed pattern")
});

impl Detector {
    /// The byte spans of `text` this detector finds.
    /// Whether `text` holds the start of a private key that does not end in it (its `-----END`
    /// line missing): the rest may stand in another text of the result (the next content block,
    /// the next element of a list of lines), where no detector sees it as a key.
    pub(crate) fn leaves_a_key_open(self, text: &str) -> bool {
        self == Self::PrivateKey
            && PRIVATE_KEY
                .find_iter(text)
                .any(|found| !found.as_str().contains("-----END "))
    }

    pub(crate) fn find(self, text: &str, out: &mut Vec<(usize, usize)>) {
        match self {
            Self::PrivateKey => spans(&PRIVATE_KEY, text, out, |_| true),
            Self::CloudToken => spans(&CLOUD_TOKEN, text, out, |_| true),
            Self::ApiToken => spans(&API_TOKEN, text, out, |_| true),
            Self::CardNumber => spans(&CARD_NUMBER, text, out, luhn_holds),
            Self::Iban => {
                // The longest IBAN that checks, from each candidate's start (a word after an IBAN
                // may have been taken into the candidate).
                for found in IBAN.find_iter(text) {
                    let compact: Vec<(usize, char)> = found
                        .as_str()
                        .char_indices()
                        .filter(|(_, c)| !c.is_whitespace() && *c != '-')
                        .collect();
                    let checked = (15..=compact.len().min(34)).rev().find(|&length| {
                        let candidate: String = compact[..length]
                            .iter()
                            .map(|(_, c)| c.to_ascii_uppercase())
                            .collect();
                        crate::provenance::extract::iban_checks(&candidate)
                    });
                    if let Some(length) = checked {
                        let (last, c) = compact[length - 1];
                        out.push((found.start(), found.start() + last + c.len_utf8()));
                    }
                }
            }
        }
    }
}

fn spans(pattern: &Regex, text: &str, out: &mut Vec<(usize, usize)>, keep: impl Fn(&str) -> bool) {
    out.extend(
        pattern
            .find_iter(text)
            .filter(|found| keep(found.as_str()))
            .map(|found| (found.start(), found.end())),
    );
}

/// Whether the digits of `text` pass the Luhn check (ISO/IEC 7812).
fn luhn_holds(text: &str) -> bool {
    let digits: Vec<u32> = text.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(index, &digit)| {
            if !index.is_multiple_of(2) {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                digit
            }
        })
        .sum();
    sum.is_multiple_of(10)
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
