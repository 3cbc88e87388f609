//! Values kept as keyed digests: SipHash-2-4-128 under a key derived from a deployment's secret.
//!
//! SipHash-2-4 is a pseudorandom function made for short inputs (Aumasson and Bernstein, 2012):
//! without its 128-bit key, its outputs tell nothing of its inputs and no guess can be tested.
//! A digest is the 128-bit output of its 128-bit mode (the reference implementation's
//! `siphash(…, 16)`), read in one pass. It replaced HMAC-SHA-256 (128 bits of it) because a
//! result carries a hundred values or more, each keyed before it is kept: about 36 ns a value
//! against 135 ns (one run, this machine's SHA extensions in use); and then SipHash-2-4's 64-bit
//! output under two keys, which read each value twice (577 instructions a value against 390).

use std::fmt;

use hmac::{KeyInit as _, Mac as _};
use sha2::Sha256;
use siphasher::sip128::SipHasher24;

use super::extract::Token;

/// A value's keyed digest: SipHash-2-4-128 of it.
pub(crate) type Digest = [u8; 16];

/// What the deployment's secret is extended with to derive the digests' keys: the secret may
/// key other things too, and keys derived for one use never serve another.
/// (A new construction, a new label: the two-key digests' label was
/// `toolgate provenance digests: two SipHash-2-4 keys`.)
const KEYS_LABEL: &[u8] = b"toolgate provenance digests: a SipHash-2-4-128 key";

/// The secret value digests are keyed with. Instances sharing a counters' store must share it,
/// or each reads only its own records; it never leaves the process (its `Debug` shows nothing).
#[derive(Clone)]
pub struct ProvenanceKey {
    /// SipHash-2-4-128 under the first 16 bytes of HMAC-SHA-256(secret, [`KEYS_LABEL`]).
    hasher: SipHasher24,
}

impl ProvenanceKey {
    /// The key `secret` (32 bytes from a deployment's secret store).
    pub fn new(secret: [u8; 32]) -> Self {
        let mut derive = hmac::Hmac::<Sha256>::new_from_slice(&secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        derive.update(KEYS_LABEL);
        let derived = derive.finalize().into_bytes();
        let mut key = [0; 16];
        key.copy_from_slice(&derived[..16]);
        Self {
            hasher: SipHasher24::new_with_key(&key),
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

    /// The digest of `token`, in hex.
    pub(crate) fn digest(&self, token: &Token) -> String {
        crate::canonical::hex_lower(&self.digest_bytes(token))
    }

    /// The digest of `token` as bytes: SipHash-2-4-128 of `kind:canonical`, its two output
    /// words' bytes little-endian, as SipHash's reference writes them.
    pub(crate) fn digest_bytes(&self, token: &Token) -> Digest {
        // The input laid out whole, so SipHash reads it in one pass (its streaming writes cost
        // more than its rounds for inputs this short); on the stack for most values.
        let tag = token.kind.tag().as_bytes();
        let canonical = token.canonical.as_bytes();
        let length = tag.len() + 1 + canonical.len();
        let mut stack = [0_u8; 128];
        let mut heap = Vec::new();
        let input: &mut [u8] = if length <= stack.len() {
            &mut stack[..length]
        } else {
            heap.resize(length, 0);
            &mut heap
        };
        input[..tag.len()].copy_from_slice(tag);
        input[tag.len()] = b':';
        input[tag.len() + 1..].copy_from_slice(canonical);
        let hash = self.hasher.hash(input);
        let mut digest = [0; 16];
        digest[..8].copy_from_slice(&hash.h1.to_le_bytes());
        digest[8..].copy_from_slice(&hash.h2.to_le_bytes());
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
    fn digests_and_counter_names_are_the_ones_an_independent_implementation_computes() {
        // Computed apart, by a SipHash-2-4 written from the paper in Python (checked against
        // the reference's test vectors, 64- and 128-bit) under a key from Python's `hmac`, the
        // secret 32 bytes of 7: what a store holds is found only if these never change.
        let key = ProvenanceKey::new([7; 32]);
        let iban = Token {
            kind: Kind::Iban,
            canonical: "GB82WEST12345698765432".to_owned(),
        };
        assert_eq!(key.digest(&iban), "764cfdf7c4232db2b87f8511df364859");
        let alice = crate::contract::Principal::new("alice", Vec::<String>::new());
        let scope = crate::provenance::Scope::of(Some(&alice), &key);
        assert_eq!(scope.as_str(), "31a4199bb120ce79f41a2c1c04ea8933");
        assert_eq!(
            scope.bucket_of("u", &key, &iban),
            "prov:u:31a4199bb120ce79f41a2c1c04ea8933:764cfdf7c4232db2b87f8511df364859"
        );
        assert_eq!(
            crate::provenance::Scope::of(None, &key).bucket_of("p", &key, &iban),
            "prov:p:-:764cfdf7c4232db2b87f8511df364859"
        );
    }

    #[test]
    fn a_digest_is_the_reference_siphash_2_4_128_of_kind_and_value_at_every_layout() {
        // The reference's key 00 01 … 0f, the input laid out on the stack up to 128 bytes and
        // on the heap past it; the outputs computed by the Python implementation above. Two
        // 64-bit halves under one key, or the 64-bit mode twice, would give other bytes.
        let reference: [u8; 16] = std::array::from_fn(|at| at as u8);
        let key = ProvenanceKey {
            hasher: SipHasher24::new_with_key(&reference),
        };
        for (length, expected) in [
            (0, "ea1a7da87c70f18e2b3259d6b84a5e8a"),
            (4, "559913e547eedf142e9f0af414e3dca8"),
            (12, "6f1ce5ccc2cade63fe6f581f198636d8"),
            (124, "a016f1088814d516044047ed2addd2e2"),
            (200, "01b3dd1563aef86e6cff5852efa71117"),
        ] {
            let token = Token {
                kind: Kind::Url,
                canonical: "x".repeat(length),
            };
            assert_eq!(key.digest(&token), expected, "{length} bytes");
        }
    }

    #[test]
    fn values_of_every_length_are_digested_as_siphash_reads_them_written_in_parts() {
        // The input is laid out on the stack up to 128 bytes, on the heap past it: both must be
        // SipHash of `kind:canonical` as a streaming hasher reads it.
        use siphasher::sip128::Hasher128 as _;
        use std::hash::Hasher as _;
        let key = ProvenanceKey::new([9; 32]);
        for length in [0, 1, 7, 8, 118, 123, 124, 125, 126, 200, 4_000] {
            let token = Token {
                kind: Kind::Url,
                canonical: "x".repeat(length),
            };
            let mut streaming = key.hasher;
            streaming.write(b"url");
            streaming.write(b":");
            streaming.write(token.canonical.as_bytes());
            let hash = streaming.finish128();
            let mut expected = [0; 16];
            expected[..8].copy_from_slice(&hash.h1.to_le_bytes());
            expected[8..].copy_from_slice(&hash.h2.to_le_bytes());
            assert_eq!(key.digest_bytes(&token), expected, "{length} bytes");
        }
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
