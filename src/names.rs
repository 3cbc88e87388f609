//! Hash maps keyed by tool names, rule keys and approval ids, hashed a word at a time instead of
//! with SipHash.
//!
//! SipHash guards a map against keys chosen to collide. Here every key comes from the program's
//! own configuration (tool names, rule tools, rule keys) or from the OS random generator (approval
//! ids); the model only chooses what is *looked up*, and a lookup cannot add keys or lengthen the
//! probe sequences that trusted keys laid out. So the keyed hash buys nothing. Do not key one of
//! these maps by anything the model sends.
//! (Fast path: ~20 instr. a name, against ~375 for the keyed hash, callgrind.)

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hash over 64-bit words (the construction of rustc's `FxHasher`), with the
/// length of a short tail mixed in.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WordHasher(u64);

/// An odd constant with well-spread bits (the 64-bit golden ratio).
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

impl WordHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

/// Up to eight bytes as a little-endian integer.
#[inline(always)]
fn le(bytes: &[u8]) -> u64 {
    let mut eight = [0_u8; 8];
    eight[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(eight)
}

impl Hasher for WordHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.add(le(word));
        }
        let tail = words.remainder();
        let n = tail.len();
        // A tail of 1 to 7 bytes read as two overlapping halves, without a loop. Collisions cost
        // only time here (a lookup compares the keys), so the halves need not be disjoint.
        let word = match n {
            0 => return,
            1 => u64::from(tail[0]),
            2 | 3 => le(&tail[..2]) | le(&tail[n - 2..]) << 16,
            _ => le(&tail[..4]) | le(&tail[n - 4..]) << 32,
        };
        self.add(word ^ ((n as u64) << 56));
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    #[inline]
    fn write_u64(&mut self, word: u64) {
        self.add(word);
    }

    #[inline]
    fn write_usize(&mut self, word: usize) {
        self.add(word as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // hashbrown takes its bucket from the low bits and its tag from the top seven; the
        // multiplication leaves the top bits best mixed, so fold them down too.
        self.0 ^ (self.0 >> 29)
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<WordHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn word_hash_tells_apart_lengths_tails_and_words() {
        let build = BuildHasherDefault::<WordHasher>::default();
        let names = [
            "",
            "a",
            "a\0",
            "\0a",
            "ab",
            "ba",
            "calculato",
            "calculator",
            "calculatoR",
            "12345678",
            "123456780",
            "1234567\0",
            "read_file",
            "read_filf",
        ];
        let hashes: HashSet<u64> = names.iter().map(|name| build.hash_one(name)).collect();
        assert_eq!(hashes.len(), names.len());
        assert_eq!(build.hash_one("calculator"), build.hash_one("calculator"));
    }

    #[test]
    fn maps_of_many_similar_names_find_each_exactly() {
        let names: Vec<String> = (0..10_000).map(|i| format!("tool_{i:05}")).collect();
        let map: FastMap<&str, usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(map.get(name.as_str()), Some(&i));
        }
        assert_eq!(map.get("tool_10000"), None);
        assert_eq!(map.get("tool_0000"), None);
    }
}
