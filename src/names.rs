//! Hash maps keyed by tool names and approval ids, hashed with FNV-1a instead of SipHash.
//!
//! SipHash guards a map against keys chosen to collide. Here every key comes from the program's
//! own configuration (tool names, rule tools) or from the OS random generator (approval ids); the
//! model only chooses what is *looked up*, and a lookup cannot add keys or lengthen the probe
//! sequences that trusted keys laid out. So the keyed hash buys nothing, while on the allow path
//! it cost more than a third of the gate's own work (measured with callgrind: about 375
//! instructions per name, against about 40 for FNV-1a).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// 64-bit FNV-1a.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv1a>>;
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<Fnv1a>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        let hash = |text: &str| {
            let mut hasher = Fnv1a::default();
            hasher.write(text.as_bytes());
            hasher.finish()
        };
        assert_eq!(hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash("foobar"), 0x85944171f73967e8);
        let build = BuildHasherDefault::<Fnv1a>::default();
        assert_eq!(build.hash_one("calculator"), build.hash_one("calculator"));
    }
}
