//! A hasher for keys that are already keyed hashes: a map of them need not hash them again.
//!
//! A provenance digest (keyed SipHash of a value) and a counter name's hash under a store's own
//! random key are uniform, and nobody without the key can choose ones that collide; hashing them
//! again with the map's own SipHash cost as much as the lookup itself.

use std::hash::{BuildHasherDefault, Hasher};

/// Builds [`Prehashed`] hashers, for a map whose keys hash as one keyed hash.
pub(crate) type PrehashedState = BuildHasherDefault<Prehashed>;

/// The hash is the key's last write: a `u64` as it is, bytes (a `[u8; 16]` digest, written
/// after its length) by their first eight.
#[derive(Debug, Default)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut first = [0; 8];
        let taken = bytes.len().min(8);
        first[..taken].copy_from_slice(&bytes[..taken]);
        self.0 = u64::from_le_bytes(first);
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher as _;

    use super::*;

    #[test]
    fn a_key_hashes_as_the_hash_it_already_is() {
        let build = PrehashedState::default();
        for value in [0, 1, 0x8000_0000_0000_0000, u64::MAX, 0x0123_4567_89AB_CDEF] {
            let mut hasher = build.build_hasher();
            hasher.write_u64(value);
            assert_eq!(hasher.finish(), value);
        }
        // A digest: its first eight bytes, not its length written before them.
        let digest: [u8; 16] = core::array::from_fn(|at| u8::try_from(at + 1).unwrap());
        assert_eq!(
            build.hash_one(digest),
            u64::from_le_bytes([1, 2, 3, 4, 5, 6, 7, 8])
        );
        let mut other = digest;
        other[0] = 0xFF;
        assert_ne!(build.hash_one(other), build.hash_one(digest));
    }
}
