//! The Merkle tree against the RFC 6962 test vectors published with Certificate Transparency
//! (transparency-dev/merkle's `testonly/constants.go` and `proof/verify_test.go`), against a
//! plain recursive reference written here, and against every corruption of a proof.

use toolgate::audit::merkle::{
    Hash, MerkleTree, empty_root, leaf_hash, node_hash, verify_consistency, verify_inclusion,
};

fn hash(hex: &str) -> Hash {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    bytes.try_into().unwrap()
}

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

const LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

/// The tree hash of the first 1 ..= 8 leaves.
const ROOTS: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// (leaf, counted from 1; tree size; proof).
const INCLUSION: [(u64, u64, &[&str]); 4] = [
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        3,
        3,
        &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    ),
    (
        2,
        5,
        &[
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

/// (old size, new size, proof).
const CONSISTENCY: [(u64, u64, &[&str]); 4] = [
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        &[
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
];

fn vector_tree() -> MerkleTree {
    let mut tree = MerkleTree::new();
    for leaf in LEAVES {
        tree.push(leaf_hash(&bytes(leaf)));
    }
    tree
}

#[test]
fn the_published_vectors_roots_and_proofs_are_reproduced() {
    let tree = vector_tree();
    assert_eq!(
        tree.root(0).unwrap(),
        hash("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    );
    for (size, root) in ROOTS.iter().enumerate() {
        assert_eq!(
            tree.root(size as u64 + 1).unwrap(),
            hash(root),
            "size {}",
            size + 1
        );
    }
    assert_eq!(tree.root(9), None);
    for (leaf, size, proof) in INCLUSION {
        let expected: Vec<Hash> = proof.iter().map(|h| hash(h)).collect();
        assert_eq!(
            tree.inclusion_proof(leaf - 1, size).unwrap(),
            expected,
            "{leaf} in {size}"
        );
        let leaf_hash = leaf_hash(&bytes(LEAVES[leaf as usize - 1]));
        let root = hash(ROOTS[size as usize - 1]);
        assert!(verify_inclusion(
            leaf - 1,
            size,
            &leaf_hash,
            &expected,
            &root
        ));
        for (what, index, size, leaf, proof, root) in
            corrupt_inclusion(leaf - 1, size, leaf_hash, &expected, root)
        {
            assert!(
                !verify_inclusion(index, size, &leaf, &proof, &root),
                "{what}"
            );
        }
    }
    for (old, new, proof) in CONSISTENCY {
        let expected: Vec<Hash> = proof.iter().map(|h| hash(h)).collect();
        assert_eq!(
            tree.consistency_proof(old, new).unwrap(),
            expected,
            "{old} to {new}"
        );
        let (old_root, new_root) = (hash(ROOTS[old as usize - 1]), hash(ROOTS[new as usize - 1]));
        assert!(verify_consistency(
            old, new, &old_root, &new_root, &expected
        ));
        for (what, old, new, old_root, new_root, proof) in
            corrupt_consistency(old, new, old_root, new_root, &expected)
        {
            assert!(
                !verify_consistency(old, new, &old_root, &new_root, &proof),
                "{what}"
            );
        }
    }
}

type InclusionProbe = (&'static str, u64, u64, Hash, Vec<Hash>, Hash);

fn corrupt_inclusion(
    index: u64,
    size: u64,
    leaf: Hash,
    proof: &[Hash],
    root: Hash,
) -> Vec<InclusionProbe> {
    let other = node_hash(&root, &root);
    let mut probes: Vec<InclusionProbe> = vec![
        (
            "index - 1",
            index.wrapping_sub(1),
            size,
            leaf,
            proof.to_vec(),
            root,
        ),
        ("index + 1", index + 1, size, leaf, proof.to_vec(), root),
        ("index ^ 2", index ^ 2, size, leaf, proof.to_vec(), root),
        ("size * 2", index, size * 2, leaf, proof.to_vec(), root),
        ("size / 2", index, size / 2, leaf, proof.to_vec(), root),
        ("wrong leaf", index, size, other, proof.to_vec(), root),
        (
            "empty root",
            index,
            size,
            leaf,
            proof.to_vec(),
            empty_root(),
        ),
        ("wrong root", index, size, leaf, proof.to_vec(), other),
        (
            "trailing root",
            index,
            size,
            leaf,
            [proof, &[root]].concat(),
            root,
        ),
        (
            "preceding root",
            index,
            size,
            leaf,
            [&[root][..], proof].concat(),
            root,
        ),
    ];
    for i in 0..proof.len() {
        let mut flipped = proof.to_vec();
        flipped[i][0] ^= 8;
        probes.push(("a flipped bit", index, size, leaf, flipped, root));
    }
    if !proof.is_empty() {
        probes.push((
            "a removed hash",
            index,
            size,
            leaf,
            proof[..proof.len() - 1].to_vec(),
            root,
        ));
    }
    if proof.len() > 1 {
        let mut swapped = proof.to_vec();
        swapped.swap(0, 1);
        probes.push(("two hashes swapped", index, size, leaf, swapped, root));
    }
    probes
}

type ConsistencyProbe = (&'static str, u64, u64, Hash, Hash, Vec<Hash>);

fn corrupt_consistency(
    old: u64,
    new: u64,
    old_root: Hash,
    new_root: Hash,
    proof: &[Hash],
) -> Vec<ConsistencyProbe> {
    let other = node_hash(&old_root, &new_root);
    let mut probes: Vec<ConsistencyProbe> = vec![
        ("old - 1", old - 1, new, old_root, new_root, proof.to_vec()),
        ("old + 1", old + 1, new, old_root, new_root, proof.to_vec()),
        ("old ^ 2", old ^ 2, new, old_root, new_root, proof.to_vec()),
        ("new * 2", old, new * 2, old_root, new_root, proof.to_vec()),
        ("new / 2", old, new / 2, old_root, new_root, proof.to_vec()),
        ("wrong old root", old, new, other, new_root, proof.to_vec()),
        ("wrong new root", old, new, old_root, other, proof.to_vec()),
        (
            "swapped roots",
            old,
            new,
            new_root,
            old_root,
            proof.to_vec(),
        ),
        ("empty proof", old, new, old_root, new_root, Vec::new()),
        (
            "trailing root",
            old,
            new,
            old_root,
            new_root,
            [proof, &[new_root]].concat(),
        ),
        (
            "preceding root",
            old,
            new,
            old_root,
            new_root,
            [&[old_root][..], proof].concat(),
        ),
        (
            "a removed hash",
            old,
            new,
            old_root,
            new_root,
            proof[..proof.len() - 1].to_vec(),
        ),
    ];
    for i in 0..proof.len() {
        let mut flipped = proof.to_vec();
        flipped[i][0] ^= 16;
        probes.push(("a flipped bit", old, new, old_root, new_root, flipped));
    }
    probes
}

/// MTH as RFC 9162 defines it, recursively over the leaf hashes: the reference the tree's stored
/// subtrees must agree with.
fn reference_root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = 1 << (usize::BITS - 1 - (n - 1).leading_zeros());
            node_hash(&reference_root(&leaves[..k]), &reference_root(&leaves[k..]))
        }
    }
}

#[test]
fn every_proof_of_every_tree_up_to_70_leaves_verifies_and_agrees_with_the_reference() {
    let leaves: Vec<Hash> = (0..70_u32).map(|i| leaf_hash(&i.to_be_bytes())).collect();
    let mut tree = MerkleTree::new();
    for (index, leaf) in leaves.iter().enumerate() {
        assert_eq!(tree.push(*leaf), index as u64);
    }
    for size in 1..=70_u64 {
        let root = tree.root(size).unwrap();
        assert_eq!(
            root,
            reference_root(&leaves[..size as usize]),
            "size {size}"
        );
        let depth = 64 - (size - 1).leading_zeros();
        for index in 0..size {
            let proof = tree.inclusion_proof(index, size).unwrap();
            assert!(
                proof.len() as u32 <= depth,
                "{index} in {size}: {} hashes",
                proof.len()
            );
            assert!(verify_inclusion(
                index,
                size,
                &leaves[index as usize],
                &proof,
                &root
            ));
            assert!(!verify_inclusion(
                index,
                size,
                &leaves[(index as usize + 1) % 70],
                &proof,
                &root
            ));
        }
        for old in 0..=size {
            let proof = tree.consistency_proof(old, size).unwrap();
            let old_root = tree.root(old).unwrap();
            assert!(
                verify_consistency(old, size, &old_root, &root, &proof),
                "{old} to {size}"
            );
            if old > 0 && old < size {
                // A log cut back or rewritten before `old` is no extension of it.
                let other = node_hash(&old_root, &old_root);
                assert!(!verify_consistency(old, size, &other, &root, &proof));
            }
        }
    }
    assert_eq!(tree.inclusion_proof(70, 70), None);
    assert_eq!(tree.consistency_proof(5, 71), None);
    assert_eq!(tree.consistency_proof(6, 5), None);
}

mod log_tree;

#[cfg(feature = "checkpoints")]
mod checkpoints;
