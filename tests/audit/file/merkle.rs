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

// ---- the JSON Lines log as a tree --------------------------------------------------------------

use super::{TempFile, write_calls, write_some_events};
use toolgate::audit::{
    AuditExtendError, TreeHead, audit_receipt, audit_tree_head, verify_audit_extends,
};

#[test]
fn a_kept_tree_head_catches_a_log_cut_back_or_rewritten_whole() {
    let file = TempFile::new("tree-head");
    write_some_events(&file);
    let kept = audit_tree_head(&file.0).unwrap();
    assert_eq!(kept.size, 9);
    assert_eq!(kept.to_string().parse::<TreeHead>().unwrap(), kept);
    // The log grows: it still extends the head kept.
    write_some_events(&file);
    let now = verify_audit_extends(&file.0, &kept).unwrap();
    assert_eq!(now.size, 18);
    assert_eq!(verify_audit_extends(&file.0, &now).unwrap(), now);

    // Cut back to 6 entries: a valid chain, but shorter than the head.
    let lines = file.lines();
    file.write_lines(&lines[..6]);
    assert!(
        toolgate::audit::verify_audit_file(&file.0).is_ok(),
        "the chain alone cannot tell"
    );
    assert!(matches!(
        verify_audit_extends(&file.0, &kept),
        Err(AuditExtendError::CutOff {
            entries: 6,
            head: 9
        })
    ));

    // Rewritten from the start: another valid chain of 18 entries (other calls), same length.
    let forged = TempFile::new("tree-head-forged");
    write_calls(&forged, "x", 6);
    std::fs::copy(&forged.0, &file.0).unwrap();
    assert_eq!(
        toolgate::audit::verify_audit_file(&file.0).unwrap().entries,
        18
    );
    let error = verify_audit_extends(&file.0, &kept).unwrap_err();
    assert!(
        matches!(error, AuditExtendError::Rewritten { size: 9 }),
        "{error}"
    );
    assert!(error.to_string().contains("rewritten"));
}

#[test]
fn a_receipt_proves_one_entry_from_the_entry_and_a_head_alone() {
    let file = TempFile::new("receipt");
    write_calls(&file, "c", 5);
    let lines = file.lines();
    let (receipt, head) = audit_receipt(&file.0, 7).unwrap().unwrap();
    assert_eq!((receipt.index, receipt.size, head.size), (7, 15, 15));
    // What an auditor holds: the line, the receipt (as JSON) and the head (as text).
    let receipt: toolgate::audit::Receipt =
        serde_json::from_str(&serde_json::to_string(&receipt).unwrap()).unwrap();
    let head: TreeHead = head.to_string().parse().unwrap();
    assert!(receipt.verify(&lines[7], &head));
    assert!(!receipt.verify(&lines[8], &head), "another entry");
    assert!(
        !receipt.verify(&lines[7].replace("c2", "c9"), &head),
        "an edited entry"
    );
    let later = {
        write_calls(&file, "d", 1);
        audit_tree_head(&file.0).unwrap()
    };
    assert!(!receipt.verify(&lines[7], &later), "a head of another size");
    assert!(audit_receipt(&file.0, 18).unwrap().is_none());
}

// ---- signed checkpoints --------------------------------------------------------------------------

#[cfg(feature = "checkpoints")]
mod checkpoints {
    use super::super::{TempFile, write_calls};
    use toolgate::audit::AuditExtendError;
    use toolgate::audit::checkpoint::{
        Checkpoint, CheckpointError, NoteError, NoteSigner, NoteVerifier, checkpoint_audit_file,
        cosign_note, open_note, sign_note, verify_audit_checkpoint,
    };

    // The published vector of golang.org/x/mod/sumdb/note (note_test.go), an independent
    // implementation of the C2SP signed-note format.
    const PETER_PRIVATE: &str =
        "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
    const PETER: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
    const TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                        then you don't know what your problem is.\n";
    const SIGNED: &str = "If you think cryptography is the answer to your problem,\n\
        then you don't know what your problem is.\n\n\
        — PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

    #[test]
    fn the_published_note_is_signed_and_opened_byte_for_byte() {
        let signer = NoteSigner::from_key(PETER_PRIVATE).unwrap();
        assert_eq!(signer.verifier_key(), PETER);
        assert_eq!(signer.private_key(), PETER_PRIVATE);
        assert!(
            !format!("{signer:?}").contains("AYEK"),
            "no secret in Debug"
        );
        assert_eq!(sign_note(TEXT, &[&signer]).unwrap(), SIGNED);
        let peter = NoteVerifier::from_key(PETER).unwrap();
        let opened = open_note(SIGNED, std::slice::from_ref(&peter)).unwrap();
        assert_eq!(
            (opened.text.as_str(), opened.signed_by.as_slice()),
            (TEXT, &["PeterNeumann".to_owned()][..])
        );
        // An edited text, a flipped signature byte, an unknown key only, a mangled key.
        let edited = SIGNED.replace("answer", "Answer");
        assert!(matches!(
            open_note(&edited, std::slice::from_ref(&peter)),
            Err(NoteError::BadSignature(_))
        ));
        let flipped = SIGNED.replace("x08go", "x08gp");
        assert!(open_note(&flipped, std::slice::from_ref(&peter)).is_err());
        let (stranger, stranger_key) = NoteSigner::generate("stranger.example").unwrap();
        let theirs = sign_note(TEXT, &[&stranger]).unwrap();
        assert!(matches!(
            open_note(&theirs, std::slice::from_ref(&peter)),
            Err(NoteError::Unverified)
        ));
        // A signature of an unknown key beside a known one is ignored.
        let both = cosign_note(SIGNED, &stranger).unwrap();
        assert_eq!(
            open_note(&both, std::slice::from_ref(&peter))
                .unwrap()
                .signed_by,
            ["PeterNeumann"]
        );
        let witnessed = open_note(
            &both,
            &[peter, NoteVerifier::from_key(&stranger_key).unwrap()],
        )
        .unwrap();
        assert_eq!(witnessed.signed_by, ["PeterNeumann", "stranger.example"]);
        for bad in [
            "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "PeterNeumann+c74f20a3+AhpcpQcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "PeterNeumann+c74f20a3",
        ] {
            assert!(NoteVerifier::from_key(bad).is_err(), "{bad}");
        }
        assert!(sign_note("no newline", &[&stranger]).is_err());
    }

    #[test]
    fn a_signed_checkpoint_catches_a_log_cut_back_and_names_its_origin() {
        let file = TempFile::new("checkpoint");
        write_calls(&file, "c", 3);
        let (signer, verifier) = NoteSigner::generate("audit.example/gw").unwrap();
        let verifiers = [NoteVerifier::from_key(&verifier).unwrap()];
        let note = checkpoint_audit_file(&file.0, "audit.example/gw", &signer).unwrap();
        let checkpoint = Checkpoint::parse(&open_note(&note, &verifiers).unwrap().text).unwrap();
        assert_eq!(checkpoint.size, 9);
        assert_eq!(Checkpoint::parse(&checkpoint.body()).unwrap(), checkpoint);
        write_calls(&file, "d", 1);
        assert_eq!(
            verify_audit_checkpoint(&file.0, &note, &verifiers, "audit.example/gw").unwrap(),
            checkpoint
        );
        assert!(matches!(
            verify_audit_checkpoint(&file.0, &note, &verifiers, "other.example/log"),
            Err(CheckpointError::Note(NoteError::WrongOrigin { .. }))
        ));
        let lines = file.lines();
        file.write_lines(&lines[..8]);
        assert!(matches!(
            verify_audit_checkpoint(&file.0, &note, &verifiers, "audit.example/gw"),
            Err(CheckpointError::Log(AuditExtendError::CutOff {
                entries: 8,
                head: 9
            }))
        ));
        // A checkpoint body that is not one; the size in digits only (C2SP, the Go parser).
        let root = checkpoint.body().lines().nth(2).unwrap().to_owned();
        for size in [
            "+12", " 12", "12 ", "-0", "0x1", "1_0", "١٢", "１２", "09", "",
        ] {
            let text = format!("o\n{size}\n{root}\n");
            assert!(Checkpoint::parse(&text).is_err(), "{size:?}");
        }
        assert_eq!(
            Checkpoint::parse(&format!("o\n12\n{root}\n")).unwrap().size,
            12
        );
        for text in ["o\n", "o\n1\nnot-base64\n", "\n1\nAAAA\n"] {
            assert!(Checkpoint::parse(text).is_err(), "{text:?}");
        }
    }

    /// The log's key must sign, and every witness named must cosign: a note signed by any one of
    /// the keys given is not enough.
    #[test]
    fn the_logs_key_and_every_named_witness_must_sign_a_checkpoint() {
        let file = TempFile::new("checkpoint-witnesses");
        write_calls(&file, "c", 2);
        let origin = "audit.example/gw";
        let (log, log_key) = NoteSigner::generate(origin).unwrap();
        let (witness, witness_key) = NoteSigner::generate("witness.example").unwrap();
        let (other, other_key) = NoteSigner::generate("other-witness.example").unwrap();
        let key = |text: &str| NoteVerifier::from_key(text).unwrap();
        let by_log = checkpoint_audit_file(&file.0, origin, &log).unwrap();
        let cosigned = cosign_note(&by_log, &witness).unwrap();
        let body = by_log.split("\n\n").next().unwrap().to_owned() + "\n";
        let by_witness_only = sign_note(&body, &[&witness]).unwrap();
        let by_other_pair = sign_note(&body, &[&witness, &other]).unwrap();
        let unsigned = |result: Result<Checkpoint, CheckpointError>| match result {
            Err(CheckpointError::Note(NoteError::Unsigned(name))) => name,
            other => panic!("expected a missing signer, got {other:?}"),
        };
        assert!(verify_audit_checkpoint(&file.0, &by_log, &[key(&log_key)], origin).is_ok());
        assert!(
            verify_audit_checkpoint(
                &file.0,
                &cosigned,
                &[key(&log_key), key(&witness_key)],
                origin
            )
            .is_ok()
        );
        // The witness never cosigned.
        assert_eq!(
            unsigned(verify_audit_checkpoint(
                &file.0,
                &by_log,
                &[key(&log_key), key(&witness_key)],
                origin
            )),
            "witness.example"
        );
        // The log's own key never signed, though the witnesses did.
        assert_eq!(
            unsigned(verify_audit_checkpoint(
                &file.0,
                &by_witness_only,
                &[key(&log_key), key(&witness_key)],
                origin
            )),
            origin
        );
        assert_eq!(
            unsigned(verify_audit_checkpoint(
                &file.0,
                &by_other_pair,
                &[key(&log_key), key(&witness_key), key(&other_key)],
                origin
            )),
            origin
        );
        // Two keys of one name: one signature would stand for both.
        let (twin, twin_key) = NoteSigner::generate(origin).unwrap();
        let both = cosign_note(&by_log, &twin).unwrap();
        assert!(matches!(
            verify_audit_checkpoint(&file.0, &both, &[key(&log_key), key(&twin_key)], origin),
            Err(CheckpointError::Note(NoteError::BadKey(_)))
        ));
    }
}
