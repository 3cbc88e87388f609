//! Values kept as keyed digests: SipHash-2-4 under two keys derived from a deployment's secret.
//!
//! SipHash-2-4 is a pseudorandom function made for short inputs (Aumasson and Bernstein, 2012):
//! without its 128-bit key, its outputs tell nothing of its inputs and no guess can be tested.
//! A digest is its 64-bit output under two independent keys, 128 bits in all. It replaced
//! HMAC-SHA-256 (128 bits of it) because a result carries a hundred values or more, each keyed
//! before it is kept: about 36 ns a value against 135 ns (one run, this machine's SHA
//! extensions in use), the largest single cost of recording a page.

use std::fmt;

use hmac::{KeyInit as _, Mac as _};
use sha2::Sha256;
use siphasher::sip::SipHasher24;

use super::extract::Token;

/// A value's keyed digest: SipHash-2-4 of it under each of the two keys.
pub(crate) type Digest = [u8; 16];

/// What the deployment's secret is extended with to derive the digests' keys: the secret may
/// key other things too, and keys derived for one use never serve another.
const KEYS_LABEL: &[u8] = b"toolgate provenance digests: two SipHash-2-4 keys";

/// The secret value digests are keyed with. Instances sharing a counters' store must share it,
/// or each reads only its own records; it never leaves the process (its `Debug` shows nothing).
#[derive(Clone)]
pub struct ProvenanceKey {
    /// SipHash-2-4 under each of two 128-bit keys: the first 32 bytes of
    /// HMAC-SHA-256(secret, [`KEYS_LABEL`]).
    hashers: [SipHasher24; 2],
}

impl ProvenanceKey {
    /// The key `secret` (32 bytes from a deployment's secret store).
    pub fn new(secret: [u8; 32]) -> Self {
        let mut derive = hmac::Hmac::<Sha256>::new_from_slice(&secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        derive.update(KEYS_LABEL);
        let derived = derive.finalize().into_bytes();
        let key = |bytes: &[u8]| {
            let mut half = [0; 16];
            half.copy_from_slice(bytes);
            SipHasher24::new_with_key(&half)
        };
        Self {
            hashers: [key(&derived[..16]), key(&derived[16..32])],
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

    /// The digest of `token` as bytes: SipHash-2-4 of `kind:canonical` under each key, each
    /// output's eight bytes little-endian, as SipHash's reference writes them.
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
        let mut digest = [0; 16];
        for (out, hasher) in digest.chunks_exact_mut(8).zip(&self.hashers) {
            out.copy_from_slice(&hasher.hash(input).to_le_bytes());
        }
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
        // the paper's test vector) under keys from Python's `hmac`, the secret 32 bytes of 7:
        // what a store holds is found only if these never change.
        let key = ProvenanceKey::new([7; 32]);
        let iban = Token {
            kind: Kind::Iban,
            canonical: "GB82WEST12345698765432".to_owned(),
        };
        assert_eq!(key.digest(&iban), "ea5b13c71d4cc0e88da58d07ab97c5fb");
        let alice = crate::contract::Principal::new("alice", Vec::<String>::new());
        let scope = crate::provenance::Scope::of(Some(&alice), &key);
        assert_eq!(scope.as_str(), "b5bf5d6c1899d92f19621245c483a1f0");
        assert_eq!(
            scope.bucket_of("u", &key, &iban),
            "prov:u:b5bf5d6c1899d92f19621245c483a1f0:ea5b13c71d4cc0e88da58d07ab97c5fb"
        );
        assert_eq!(
            crate::provenance::Scope::of(None, &key).bucket_of("p", &key, &iban),
            "prov:p:-:ea5b13c71d4cc0e88da58d07ab97c5fb"
        );
    }

    #[test]
    fn each_half_of_a_digest_is_keyed_by_its_own_half_of_the_derived_key() {
        // Two keys, not one used twice: the halves differ, and each moves with its own key.
        let key = ProvenanceKey::new([7; 32]);
        let value = Token {
            kind: Kind::Text,
            canonical: "mallory".to_owned(),
        };
        let digest = key.digest_bytes(&value);
        assert_ne!(digest[..8], digest[8..]);
        let mut swapped = key.clone();
        swapped.hashers.swap(0, 1);
        let other = swapped.digest_bytes(&value);
        assert_eq!((&digest[..8], &digest[8..]), (&other[8..], &other[..8]));
    }

    #[test]
    fn values_of_every_length_are_digested_as_siphash_reads_them_written_in_parts() {
        // The input is laid out on the stack up to 128 bytes, on the heap past it: both must be
        // SipHash of `kind:canonical` as a streaming hasher reads it.
        use std::hash::Hasher as _;
        let key = ProvenanceKey::new([9; 32]);
        for length in [0, 1, 7, 8, 118, 123, 124, 125, 126, 200, 4_000] {
            let token = Token {
                kind: Kind::Url,
                canonical: "x".repeat(length),
            };
            let mut expected = [0; 16];
            for (out, hasher) in expected.chunks_exact_mut(8).zip(&key.hashers) {
                let mut streaming = *hasher;
                streaming.write(b"url");
                streaming.write(b":");
                streaming.write(token.canonical.as_bytes());
                out.copy_from_slice(&streaming.finish().to_le_bytes());
            }
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
