//! Values kept as keyed digests: HMAC-SHA-256 under a deployment's secret.

use std::fmt;

use hmac::{KeyInit as _, Mac as _};
use sha2::Sha256;

use super::extract::Token;

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
        let mut mac = self.keyed.clone();
        mac.update(token.kind.tag().as_bytes());
        mac.update(b":");
        mac.update(token.canonical.as_bytes());
        let bytes = mac.finalize().into_bytes();
        crate::canonical::hex_lower(&bytes[..16])
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
}
