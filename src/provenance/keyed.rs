//! Values kept as keyed digests: HMAC-SHA-256 under a deployment's secret.

use std::fmt;

use hmac::{KeyInit as _, Mac as _};
use sha2::Sha256;

use super::extract::Token;

/// A value's keyed digest: the first 128 bits of its HMAC.
pub(crate) type Digest = [u8; 16];

/// The secret value digests are keyed with. Instances sharing a counters' store must share it,
/// or each reads only its own records; it never leaves the process (its `Debug` shows nothing).
#[derive(Clone)]
pub struct ProvenanceKey {
    keyed: hmac::Hmac<Sha256>,
}

impl ProvenanceKey {
    /// The key `secret` (32 bytes from a deployment's secret store).
    pub fn new(secret: [u8; 32]) -> Self {
        Self {
            keyed: hmac::Hmac::<Sha256>::new_from_slice(&secret)
                .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length")),
        }
    }

    /// A key from the operating system's randomness: records are readable by this process only.
    ///
    /// # Panics
    ///
    /// If the operating system has no randomness to give (as for approval ids).
    pub fn random() -> Self {
        let mut secret = [0_u8; 32];
        getrandom::fill(&mut secret).expect("the operating system's randomness");
        Self::new(secret)
    }

    /// The digest of `token`: 128 bits of its HMAC, in hex.
    pub(crate) fn digest(&self, token: &Token) -> String {
        crate::canonical::hex_lower(&self.digest_bytes(token))
    }

    /// The digest of `token` as bytes: 128 bits of its HMAC.
    pub(crate) fn digest_bytes(&self, token: &Token) -> Digest {
        let mut mac = self.keyed.clone();
        mac.update(token.kind.tag().as_bytes());
        mac.update(b":");
        mac.update(token.canonical.as_bytes());
        let bytes = mac.finalize().into_bytes();
        let mut digest = [0; 16];
        digest.copy_from_slice(&bytes[..16]);
        digest
    }
}

impl fmt::Debug for ProvenanceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProvenanceKey(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::extract::Kind;

    #[test]
    fn digests_depend_on_the_key_the_kind_and_the_value_and_show_neither() {
        let token = |kind, text: &str| Token {
            kind,
            canonical: text.to_owned(),
        };
        let one = ProvenanceKey::new([1; 32]);
        let two = ProvenanceKey::new([2; 32]);
        let value = token(Kind::Text, "mallory");
        assert_eq!(one.digest(&value), one.digest(&value.clone()));
        assert_ne!(one.digest(&value), two.digest(&value));
        assert_ne!(
            one.digest(&value),
            one.digest(&token(Kind::Email, "mallory"))
        );
        assert_ne!(
            one.digest(&value),
            one.digest(&token(Kind::Text, "mallorz"))
        );
        assert_eq!(one.digest(&value).len(), 32);
        assert!(!one.digest(&value).contains("mallory"));
        assert_eq!(format!("{one:?}"), "ProvenanceKey(..)");
    }

    #[test]
    fn digests_and_counter_names_are_the_ones_stores_already_hold() {
        // Computed apart (Python's `hmac`, the key 32 bytes of 7): records written by earlier
        // versions in a SQLite or PostgreSQL store are found only if these never change.
        let key = ProvenanceKey::new([7; 32]);
        let iban = Token {
            kind: Kind::Iban,
            canonical: "GB82WEST12345698765432".to_owned(),
        };
        assert_eq!(key.digest(&iban), "f5391e9c92c347e55c5b63cde04c6ed0");
        let alice = crate::contract::Principal::new("alice", Vec::<String>::new());
        let scope = crate::provenance::Scope::of(Some(&alice), &key);
        assert_eq!(scope.as_str(), "2aedfae46df728510b18da54d9c6e316");
        assert_eq!(
            scope.bucket_of("u", &key, &iban),
            "prov:u:2aedfae46df728510b18da54d9c6e316:f5391e9c92c347e55c5b63cde04c6ed0"
        );
        assert_eq!(
            crate::provenance::Scope::of(None, &key).bucket_of("p", &key, &iban),
            "prov:p:-:f5391e9c92c347e55c5b63cde04c6ed0"
        );
    }

    #[test]
    fn a_bucket_built_around_the_digest_is_the_bucket_of_the_digest() {
        let key = ProvenanceKey::new([7; 32]);
        let token = Token {
            kind: Kind::Iban,
            canonical: "GB82WEST12345698765432".to_owned(),
        };
        let principal = crate::contract::Principal::new("alice", Vec::<String>::new());
        for scope in [
            crate::provenance::Scope::of(None, &key),
            crate::provenance::Scope::of(Some(&principal), &key),
        ] {
            for source in ["p", "u", "mail"] {
                let bucket = scope.bucket_of(source, &key, &token);
                let expected = format!("prov:{source}:{}:{}", scope.as_str(), key.digest(&token));
                assert_eq!(bucket, expected);
                assert_eq!(
                    bucket,
                    scope.bucket_of_digest(source, &key.digest_bytes(&token))
                );
            }
        }
    }
}
