//! Salted commitments to a call's arguments: what an audit entry holds instead of their bare
//! digest, so a reader of the log cannot confirm a guessed argument (a PIN, a name) by hashing it.
//!
//! `salted-sha256:` over a domain tag, 16 random bytes (the salt, one per entry) and the SHA-256
//! of the arguments' canonical JSON. The salt is kept apart from the log: with it, given arguments
//! can be shown to be the ones committed to ([`ArgumentSalt::opens`]); without it (deleted, say,
//! to erase a person's data) nothing can be confirmed, and the log's hashes and proofs, which
//! cover only the commitment, are unchanged.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::canonical::{ArgumentHash, hex_digest};

/// Separates these hashes from every other SHA-256 the log uses.
const DOMAIN: &[u8] = b"toolgate argument commitment v1\0";

/// The prefix of a commitment's text.
pub(crate) const PREFIX: &str = "salted-sha256:";

/// One entry's salt: 16 bytes from the OS's randomness. Its `Debug` does not show it (with the
/// salt, a guess at the arguments can be confirmed); [`to_hex`](Self::to_hex) does, for the sink
/// that stores it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ArgumentSalt([u8; 16]);

impl ArgumentSalt {
    /// A fresh salt, or `None` if the OS generator failed.
    pub(crate) fn random() -> Option<Self> {
        crate::random::bytes16().ok().map(Self)
    }

    /// The salt as 32 lowercase hex digits, as sinks store it.
    pub fn to_hex(&self) -> String {
        crate::canonical::hex_lower(&self.0)
    }

    /// The commitment to arguments whose canonical hash is `hash`.
    pub(crate) fn commit(&self, hash: &ArgumentHash) -> String {
        let mut hasher = Sha256::new();
        hasher.update(DOMAIN);
        hasher.update(self.0);
        hasher.update(hash.bytes());
        let digest = hex_digest(&hasher.finalize());
        // `hex_digest` spells `sha256:`; the commitment says it is salted.
        format!("{PREFIX}{}", digest.trim_start_matches("sha256:"))
    }

    /// Whether `commitment` (an entry's
    /// [`argument_commitment`](crate::audit::AuditEvent::argument_commitment)) was made with this
    /// salt over `arguments` — compared by meaning: any spelling of the same JSON opens it.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate::audit::{AuditKind, MemoryAuditSink};
    /// # use toolgate::*;
    /// # let tool = ToolDefinition::new(
    /// #     ToolSpec::new("read_pin", "Read.", json!({"type": "object"})),
    /// #     |_: &serde_json::Value| -> Result<String, ToolError> { Ok("ok".into()) },
    /// # )?;
    /// let sink = std::sync::Arc::new(MemoryAuditSink::new());
    /// let controller = ToolController::new(ToolRegistry::new([tool])?, ToolPolicy::new(["read_pin"], Vec::<String>::new())?)
    ///     .with_audit_sink(sink.clone());
    /// controller.handle(ToolCall::new("c1", "read_pin", json!({"pin": "1234"})));
    /// let received = &sink.events()[0];
    /// assert_eq!(received.kind, AuditKind::CallReceived);
    /// assert!(received.argument_commitment.starts_with("salted-sha256:"));
    /// let salt = received.salt().expect("the memory sink keeps the salt");
    /// assert!(salt.opens(&received.argument_commitment, &json!({"pin": "1234"})));
    /// assert!(!salt.opens(&received.argument_commitment, &json!({"pin": "1235"})));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn opens(&self, commitment: &str, arguments: &Value) -> bool {
        self.commit(&ArgumentHash::of(arguments)) == commitment
    }
}

impl fmt::Debug for ArgumentSalt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ArgumentSalt(..)")
    }
}

/// A salt's text was not 32 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a salt is 32 lowercase hex digits")]
pub struct ArgumentSaltSyntax;

impl FromStr for ArgumentSalt {
    type Err = ArgumentSaltSyntax;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let digits = text.as_bytes();
        if digits.len() != 32
            || !digits
                .iter()
                .all(|digit| matches!(digit, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(ArgumentSaltSyntax);
        }
        let mut bytes = [0_u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| ArgumentSaltSyntax)?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| ArgumentSaltSyntax)?;
        }
        Ok(Self(bytes))
    }
}

/// What showing given arguments against an entry found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disclosure {
    /// The entry commits to these arguments.
    Matches,
    /// The entry commits to other arguments.
    DoesNotMatch,
    /// The entry's salt is gone (forgotten): nothing can be confirmed about its arguments.
    SaltErased,
}

impl fmt::Display for Disclosure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Disclosure::Matches => "the entry commits to these arguments",
            Disclosure::DoesNotMatch => "the entry commits to other arguments",
            Disclosure::SaltErased => {
                "the entry's salt was erased: nothing can be confirmed about its arguments"
            }
        })
    }
}

/// Shows `arguments` against an entry's event: its salted commitment with `salt`, or — for an
/// entry written before commitments — its bare digest.
pub(crate) fn disclose(event: &Value, salt: Option<ArgumentSalt>, arguments: &Value) -> Disclosure {
    if let Some(commitment) = event
        .get("argument_commitment")
        .and_then(Value::as_str)
        .filter(|commitment| !commitment.is_empty())
    {
        return match salt {
            None => Disclosure::SaltErased,
            Some(salt) if salt.opens(commitment, arguments) => Disclosure::Matches,
            Some(_) => Disclosure::DoesNotMatch,
        };
    }
    match event.get("argument_digest").and_then(Value::as_str) {
        Some(digest) if digest == ArgumentHash::of(arguments).text() => Disclosure::Matches,
        _ => Disclosure::DoesNotMatch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_salt_opens_only_its_own_commitment_to_the_same_meaning() {
        let salt: ArgumentSalt = "000102030405060708090a0b0c0d0e0f".parse().unwrap();
        let other: ArgumentSalt = "0f0e0d0c0b0a09080706050403020100".parse().unwrap();
        let commitment = salt.commit(&ArgumentHash::of(&json!({"pin": "1234", "n": 1})));
        assert!(commitment.starts_with(PREFIX));
        assert_eq!(commitment.len(), PREFIX.len() + 64);
        // Same meaning, another spelling: key order, 1.0 for 1.
        assert!(salt.opens(&commitment, &json!({"n": 1.0, "pin": "1234"})));
        assert!(!salt.opens(&commitment, &json!({"pin": "1235", "n": 1})));
        assert!(!other.opens(&commitment, &json!({"pin": "1234", "n": 1})));
        // Not the bare digest, and not the same for two salts.
        assert_ne!(
            commitment.trim_start_matches(PREFIX),
            ArgumentHash::of(&json!({"pin": "1234", "n": 1}))
                .text()
                .trim_start_matches("sha256:")
        );
        assert_ne!(
            commitment,
            other.commit(&ArgumentHash::of(&json!({"pin": "1234", "n": 1})))
        );
        assert_eq!(salt.to_hex(), "000102030405060708090a0b0c0d0e0f");
        assert_eq!(format!("{salt:?}"), "ArgumentSalt(..)");
    }

    #[test]
    fn only_32_lowercase_hex_digits_parse_as_a_salt() {
        for bad in [
            "",
            "00",
            &"0".repeat(31),
            &"0".repeat(33),
            &"A".repeat(32),
            &"g".repeat(32),
            "+0000000000000000000000000000000",
        ] {
            assert!(bad.parse::<ArgumentSalt>().is_err(), "{bad:?}");
        }
        assert!(
            "0123456789abcdef0123456789abcdef"
                .parse::<ArgumentSalt>()
                .is_ok()
        );
    }

    #[test]
    fn disclosure_says_which_of_the_three_it_is() {
        let salt = ArgumentSalt::random().unwrap();
        let arguments = json!({"to": "alice"});
        let event = json!({"argument_commitment": salt.commit(&ArgumentHash::of(&arguments))});
        assert_eq!(
            disclose(&event, Some(salt), &arguments),
            Disclosure::Matches
        );
        assert_eq!(
            disclose(&event, Some(salt), &json!({"to": "bob"})),
            Disclosure::DoesNotMatch
        );
        assert_eq!(disclose(&event, None, &arguments), Disclosure::SaltErased);
        // What the gateway prints for each.
        assert_eq!(
            Disclosure::Matches.to_string(),
            "the entry commits to these arguments"
        );
        assert_eq!(
            Disclosure::DoesNotMatch.to_string(),
            "the entry commits to other arguments"
        );
        assert!(
            Disclosure::SaltErased
                .to_string()
                .contains("salt was erased")
        );
        // An entry from before commitments: its bare digest.
        let old = json!({"argument_digest": ArgumentHash::of(&arguments).text()});
        assert_eq!(disclose(&old, None, &arguments), Disclosure::Matches);
        assert_eq!(
            disclose(&old, None, &json!({"to": "bob"})),
            Disclosure::DoesNotMatch
        );
    }
}
