//! A Merkle tree as RFC 9162 (Certificate Transparency 2.0) defines it: leaves and nodes hashed
//! with SHA-256 under distinct prefixes, the tree hash of any prefix of the log, inclusion proofs
//! (entry *i* is in the tree of size *n*) and consistency proofs (the tree of size *m* is a prefix
//! of the tree of size *n*), and their verifiers — which need only the proof, the entry's hash and
//! the tree hashes, never the log.
//!
//! # Guarantees
//!
//! - Hashes are RFC 9162's (section 2.1.1): a leaf is `SHA-256(0x00 || entry)`, a node
//!   `SHA-256(0x01 || left || right)`, the empty tree `SHA-256("")`; so a leaf can never pass for a
//!   node. Checked against the published RFC 6962 test vectors (`tests/audit/file/merkle.rs`).
//! - Proofs hold O(log n) hashes; the tree keeps every complete subtree's hash, so a proof for
//!   any size up to the tree's is built from O(log² n) stored hashes, never by rehashing leaves.
//! - A verifier fails on anything but the exact proof: another index, size, leaf or root, a hash
//!   flipped, added, dropped or moved.
//!
//! ```
//! use toolgate::audit::merkle::{MerkleTree, leaf_hash, verify_consistency, verify_inclusion};
//!
//! let mut tree = MerkleTree::new();
//! for entry in ["a", "b", "c", "d", "e"] {
//!     tree.push(leaf_hash(entry.as_bytes()));
//! }
//! let root = tree.root(5).unwrap();
//! let proof = tree.inclusion_proof(2, 5).unwrap();
//! assert!(verify_inclusion(2, 5, &leaf_hash(b"c"), &proof, &root));
//! assert!(!verify_inclusion(2, 5, &leaf_hash(b"x"), &proof, &root));
//! // The tree of 3 entries is a prefix of the tree of 5.
//! let old = tree.root(3).unwrap();
//! let extension = tree.consistency_proof(3, 5).unwrap();
//! assert!(verify_consistency(3, 5, &old, &root, &extension));
//! ```

use sha2::{Digest, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// The hash of a leaf: `SHA-256(0x00 || entry)`.
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x00]);
    hasher.update(entry);
    hasher.finalize().into()
}

/// The hash of a node: `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x01]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// The hash of the empty tree: `SHA-256("")`.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The largest power of two smaller than `n` (`n` ≥ 2).
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// A Merkle tree over leaf hashes, appended one at a time, keeping the hash of every complete
/// subtree (about two hashes per leaf).
#[derive(Debug, Clone, Default)]
pub struct MerkleTree {
    // levels[k][i]: the hash of leaves i·2^k .. (i+1)·2^k.
    levels: Vec<Vec<Hash>>,
}

impl MerkleTree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many leaves the tree holds.
    pub fn len(&self) -> u64 {
        self.levels.first().map_or(0, |leaves| leaves.len() as u64)
    }

    /// Whether the tree holds no leaf.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a leaf (its [`leaf_hash`]); returns its index.
    pub fn push(&mut self, leaf: Hash) -> u64 {
        let index = self.len();
        let mut hash = leaf;
        let mut level = 0;
        loop {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            self.levels[level].push(hash);
            let count = self.levels[level].len();
            if !count.is_multiple_of(2) {
                break;
            }
            hash = node_hash(
                &self.levels[level][count - 2],
                &self.levels[level][count - 1],
            );
            level += 1;
        }
        index
    }

    /// The tree hash of the first `size` leaves; `None` past the tree's size.
    pub fn root(&self, size: u64) -> Option<Hash> {
        match size {
            0 => Some(empty_root()),
            size if size <= self.len() => Some(self.subtree(0, size)),
            _ => None,
        }
    }

    /// The hash of leaves `start .. start + size` (`size` ≥ 1, within the tree).
    fn subtree(&self, start: u64, size: u64) -> Hash {
        if size.is_power_of_two() && start.is_multiple_of(size) {
            let level = size.trailing_zeros() as usize;
            #[expect(
                clippy::cast_possible_truncation,
                reason = "an index of a stored level"
            )]
            return self.levels[level][(start / size) as usize];
        }
        let k = split(size);
        node_hash(&self.subtree(start, k), &self.subtree(start + k, size - k))
    }

    /// The inclusion proof of leaf `index` in the tree of the first `size` leaves (RFC 9162,
    /// 2.1.3.1), from the leaf up; `None` unless `index < size ≤ len`.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Option<Vec<Hash>> {
        if index >= size || size > self.len() {
            return None;
        }
        let mut proof = Vec::new();
        self.path(index, 0, size, &mut proof);
        Some(proof)
    }

    /// PATH(m, D[start .. start + size]), appended from the leaf up.
    fn path(&self, m: u64, start: u64, size: u64, proof: &mut Vec<Hash>) {
        if size <= 1 {
            return;
        }
        let k = split(size);
        if m < k {
            self.path(m, start, k, proof);
            proof.push(self.subtree(start + k, size - k));
        } else {
            self.path(m - k, start + k, size - k, proof);
            proof.push(self.subtree(start, k));
        }
    }

    /// The consistency proof that the tree of the first `old` leaves is a prefix of the tree of
    /// the first `new` (RFC 9162, 2.1.4.1); `None` unless `old ≤ new ≤ len`. Empty when `old` is
    /// 0 or equals `new`.
    pub fn consistency_proof(&self, old: u64, new: u64) -> Option<Vec<Hash>> {
        if old > new || new > self.len() {
            return None;
        }
        let mut proof = Vec::new();
        if old > 0 && old < new {
            self.subproof(old, 0, new, true, &mut proof);
        }
        Some(proof)
    }

    /// SUBPROOF(m, D[start .. start + size], whole).
    fn subproof(&self, m: u64, start: u64, size: u64, whole: bool, proof: &mut Vec<Hash>) {
        if m == size {
            if !whole {
                proof.push(self.subtree(start, size));
            }
            return;
        }
        let k = split(size);
        if m <= k {
            self.subproof(m, start, k, whole, proof);
            proof.push(self.subtree(start + k, size - k));
        } else {
            self.subproof(m - k, start + k, size - k, false, proof);
            proof.push(self.subtree(start, k));
        }
    }
}

/// Whether `proof` shows the leaf hashed `leaf` at `index` in the tree of `size` leaves whose
/// hash is `root` (RFC 9162, 2.1.3.2).
pub fn verify_inclusion(index: u64, size: u64, leaf: &Hash, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s) = (index, size - 1);
    let mut hash = *leaf;
    for sibling in proof {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            hash = node_hash(sibling, &hash);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            hash = node_hash(&hash, sibling);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && hash == *root
}

/// Whether `proof` shows the tree of `old` leaves hashed `old_root` to be a prefix of the tree of
/// `new` leaves hashed `new_root` (RFC 9162, 2.1.4.2). Any tree extends the empty one; a tree
/// extends itself only with an empty proof and the same hash.
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> bool {
    if old > new {
        return false;
    }
    if old == new {
        return proof.is_empty() && old_root == new_root;
    }
    if old == 0 {
        return proof.is_empty();
    }
    if proof.is_empty() {
        return false;
    }
    let mut path: Vec<&Hash> = Vec::with_capacity(proof.len() + 1);
    if old.is_power_of_two() {
        path.push(old_root);
    }
    path.extend(proof);
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    let (mut f, mut s) = (old - 1, new - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut old_hash, mut new_hash) = (**first, **first);
    for hash in rest {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            old_hash = node_hash(hash, &old_hash);
            new_hash = node_hash(hash, &new_hash);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            new_hash = node_hash(&new_hash, hash);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && old_hash == *old_root && new_hash == *new_root
}
