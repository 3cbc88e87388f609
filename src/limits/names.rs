//! A map from counter names, each name hashed once per take: the memory store finds a counter when
//! it reads the totals and again when it records, and a result's hundred values are a hundred
//! counters — hashing each name twice (three times for a new one) cost a third of the store's work.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

use crate::prehashed::PrehashedState;

/// Counters by name, found by a hash computed once by [`NameKeys::hash`].
#[derive(Debug)]
pub(super) struct NameMap<V> {
    map: HashMap<Named, V, PrehashedState>,
}

/// How names are hashed for a [`NameMap`]: SipHash under a random key drawn for each store (the
/// standard map's), so names an attacker chooses — a rate limit's key can be an argument —
/// collide no more often than in a standard map.
#[derive(Debug, Default)]
pub(super) struct NameKeys(RandomState);

impl NameKeys {
    /// `name`'s hash: computed once, given to each lookup of that name.
    #[inline]
    pub(super) fn hash(&self, name: &str) -> u64 {
        let mut hasher = self.0.build_hasher();
        hasher.write(name.as_bytes());
        hasher.finish()
    }
}

/// A name and its hash under the map's key.
#[derive(Debug)]
struct Named {
    hash: u64,
    name: Box<str>,
}

/// What a name is found by: its hash and its text, owned or borrowed.
trait NameView {
    fn hashed(&self) -> u64;
    fn name(&self) -> &str;
}

impl NameView for Named {
    fn hashed(&self) -> u64 {
        self.hash
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl NameView for (u64, &str) {
    fn hashed(&self) -> u64 {
        self.0
    }
    fn name(&self) -> &str {
        self.1
    }
}

impl<'a> Borrow<dyn NameView + 'a> for Named {
    fn borrow(&self) -> &(dyn NameView + 'a) {
        self
    }
}

impl Hash for dyn NameView + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hashed());
    }
}

impl PartialEq for dyn NameView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.hashed() == other.hashed() && self.name() == other.name()
    }
}

impl Eq for dyn NameView + '_ {}

// A key hashes as its view does, so the map finds an owned name by a borrowed one.
impl Hash for Named {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialEq for Named {
    fn eq(&self, other: &Self) -> bool {
        (self as &dyn NameView) == (other as &dyn NameView)
    }
}

impl Eq for Named {}

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        Self {
            map: HashMap::default(),
        }
    }
}

impl<V> NameMap<V> {
    pub(super) fn get_mut(&mut self, hash: u64, name: &str) -> Option<&mut V> {
        self.map.get_mut(&(hash, name) as &dyn NameView)
    }

    pub(super) fn remove(&mut self, hash: u64, name: &str) -> Option<V> {
        self.map.remove(&(hash, name) as &dyn NameView)
    }

    /// Adds `name` (hashed by [`NameKeys::hash`]); a name held already has its value
    /// replaced, and the old one is returned.
    pub(super) fn insert(&mut self, hash: u64, name: &str, value: V) -> Option<V> {
        let name = Named {
            hash,
            name: name.into(),
        };
        self.map.insert(name, value)
    }

    pub(super) fn retain(&mut self, mut keep: impl FnMut(&mut V) -> bool) {
        self.map.retain(|_, value| keep(value));
    }

    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_found_by_its_hash_and_its_text_and_by_nothing_else() {
        let (keys, mut map) = (NameKeys::default(), NameMap::default());
        let names = ["a", "b", "prov:u:-:00ff", "", "é", "a\0", "\0a"];
        for (value, name) in names.iter().enumerate() {
            let hash = keys.hash(name);
            assert!(map.get_mut(hash, name).is_none(), "{name:?}");
            map.insert(hash, name, value);
        }
        assert_eq!(map.len(), names.len());
        for (value, name) in names.iter().enumerate() {
            let hash = keys.hash(name);
            assert_eq!(map.get_mut(hash, name).copied(), Some(value), "{name:?}");
            // The same hash with another text, or the right text under another hash, is not it.
            assert!(map.get_mut(hash, "other").is_none(), "{name:?}");
            assert!(map.get_mut(hash ^ 1, name).is_none(), "{name:?}");
        }
        let hash = keys.hash("b");
        assert_eq!(map.remove(hash, "b"), Some(1));
        assert_eq!(map.remove(hash, "b"), None);
        map.retain(|value| *value % 2 == 0);
        let mut left = Vec::new();
        for name in names {
            let hash = keys.hash(name);
            left.extend(map.get_mut(hash, name).copied());
        }
        assert_eq!(left, [0, 2, 4, 6]);
    }

    #[test]
    fn a_name_inserted_again_replaces_its_value() {
        let (keys, mut map) = (NameKeys::default(), NameMap::default());
        let hash = keys.hash("seen");
        assert_eq!(map.insert(hash, "seen", 1), None);
        assert_eq!(map.insert(hash, "seen", 2), Some(1));
        assert_eq!(map.len(), 1);
        // Another name under the same hash is another key.
        assert_eq!(map.insert(hash, "other", 3), None);
        assert_eq!(map.len(), 2);
        assert_eq!(map.get_mut(hash, "seen").copied(), Some(2));
    }

    #[test]
    fn the_map_places_a_key_by_the_hash_it_was_given() {
        // The keyed hash computed once is the hash the map places a key by, owned or borrowed:
        // were it lost (every key placed alike), every lookup would walk every key.
        let build = PrehashedState::default();
        for value in [0, 1, u64::MAX, 0x0123_4567_89AB_CDEF] {
            let named = Named {
                hash: value,
                name: "n".into(),
            };
            assert_eq!(build.hash_one(&named), value);
            assert_eq!(build.hash_one(&(value, "other") as &dyn NameView), value);
        }
    }

    #[test]
    fn two_stores_hash_a_name_under_their_own_keys() {
        // Each store draws its own key: names that collide in one do not in another.
        let first = NameKeys::default();
        let differ = (0..8).any(|n| {
            let second = NameKeys::default();
            first.hash(&n.to_string()) != second.hash(&n.to_string())
        });
        assert!(differ);
    }
}
