//! The JSON Lines audit log as a Merkle tree (RFC 9162): each verified line — its one spelling,
//! without the newline — is a leaf. A tree head (size and root) saved anywhere proves later that
//! the log only grew: a log cut back below that size, or rewritten anywhere before it, no longer
//! has that head; and a receipt proves one entry is in the log from the entry, the receipt and a
//! head alone.

use std::fmt;
use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::merkle::{Hash, MerkleTree, leaf_hash, verify_inclusion};
use super::{AuditVerifyError, ChainTip, verify_audit_file};
use crate::canonical::hex_digest;

/// A tree head: how many entries, and the Merkle tree hash of the first that many. Written
/// `size 12 root sha256:<hex>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeHead {
    /// How many entries the tree holds.
    pub size: u64,
    /// The tree hash (RFC 9162) of those entries.
    pub root: Hash,
}

impl fmt::Display for TreeHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "size {} root {}", self.size, hex_digest(&self.root))
    }
}

/// A tree head that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a tree head is written `size N root sha256:<64 hex digits>`: single spaces, N in decimal digits without a sign or leading zero, the hex in lower case"
)]
pub struct TreeHeadSyntax;

/// One head, one spelling — the one [`Display`](fmt::Display) writes, a line break after it
/// allowed (a head kept in a file): `size +12`, `size 012`, upper-case hex or other white space
/// are refused, as the log's entries and a checkpoint's size accept one spelling.
impl FromStr for TreeHead {
    type Err = TreeHeadSyntax;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let line = text
            .strip_suffix("\r\n")
            .or_else(|| text.strip_suffix('\n'))
            .unwrap_or(text);
        let mut words = line.split(' ');
        let (Some("size"), Some(size), Some("root"), Some(root), None) = (
            words.next(),
            words.next(),
            words.next(),
            words.next(),
            words.next(),
        ) else {
            return Err(TreeHeadSyntax);
        };
        let head = Self {
            size: size.parse().map_err(|_| TreeHeadSyntax)?,
            root: parse_hash(root).ok_or(TreeHeadSyntax)?,
        };
        if head.to_string() != line {
            return Err(TreeHeadSyntax);
        }
        Ok(head)
    }
}

/// A hash written `sha256:<64 hex digits>`.
fn parse_hash(text: &str) -> Option<Hash> {
    let hex = text.strip_prefix("sha256:")?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0; 32];
    for (index, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[index * 2..index * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// A log that does not extend a tree head saved earlier.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditExtendError {
    /// The log itself does not verify (see [`verify_audit_file`]).
    #[error(transparent)]
    Verify(#[from] AuditVerifyError),
    /// Entries were cut off: the log is shorter than the head.
    #[error(
        "the log holds {entries} entries, fewer than the {head} of the tree head kept: entries were cut off its end"
    )]
    CutOff {
        /// Entries in the log now.
        entries: u64,
        /// The head's size.
        head: u64,
    },
    /// The first `size` entries are not the ones the head was taken over.
    #[error(
        "the log's first {size} entries are not those the tree head kept was taken over: the log was rewritten"
    )]
    Rewritten {
        /// The head's size.
        size: u64,
    },
}

/// The tree over a verified log, and the chain's tip.
///
/// # Errors
///
/// As [`verify_audit_file`]: a log that does not verify has no tree.
pub fn audit_tree(path: impl AsRef<Path>) -> Result<(MerkleTree, ChainTip), AuditVerifyError> {
    let path = path.as_ref();
    let tip = verify_audit_file(path)?;
    let unreadable = |source| AuditVerifyError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(unreadable)?;
    let mut reader = BufReader::new(file.take(tip.bytes));
    let mut tree = MerkleTree::new();
    let mut line = Vec::new();
    while reader.read_until(b'\n', &mut line).map_err(unreadable)? > 0 {
        let entry = line.strip_suffix(b"\n").unwrap_or(&line);
        tree.push(leaf_hash(entry));
        line.clear();
    }
    Ok((tree, tip))
}

/// The tree head of the whole log: keep it (print it, mail it, hand it to a witness) and check a
/// later log against it with [`verify_audit_extends`].
///
/// # Errors
///
/// As [`verify_audit_file`].
pub fn audit_tree_head(path: impl AsRef<Path>) -> Result<TreeHead, AuditVerifyError> {
    let (tree, tip) = audit_tree(path)?;
    Ok(head_of(&tree, tip.entries))
}

/// The head of `tree`'s first `entries` leaves.
pub(crate) fn head_of(tree: &MerkleTree, entries: u64) -> TreeHead {
    TreeHead {
        size: entries,
        root: tree.root(entries).unwrap_or(super::merkle::empty_root()),
    }
}

/// Whether the tree of a verified log (`entries` leaves) extends `kept`; its head now.
pub(crate) fn extends(
    tree: &MerkleTree,
    entries: u64,
    kept: &TreeHead,
) -> Result<TreeHead, AuditExtendError> {
    if entries < kept.size {
        return Err(AuditExtendError::CutOff {
            entries,
            head: kept.size,
        });
    }
    // The first `kept.size` entries are those the head was taken over exactly when their tree
    // hash is the head's.
    if tree.root(kept.size) != Some(kept.root) {
        return Err(AuditExtendError::Rewritten { size: kept.size });
    }
    let now = head_of(tree, entries);
    Ok(now)
}

/// The receipt of leaf `index` of a verified log's tree, with its head.
pub(crate) fn receipt_of(
    tree: &MerkleTree,
    entries: u64,
    index: u64,
) -> Option<(Receipt, TreeHead)> {
    let proof = tree.inclusion_proof(index, entries)?;
    let receipt = Receipt {
        index,
        size: entries,
        proof: proof.iter().map(|hash| hex_digest(hash)).collect(),
    };
    Some((receipt, head_of(tree, entries)))
}

/// Verifies the log and that it extends `kept`, a tree head taken earlier: its first `kept.size`
/// entries are exactly those the head was taken over. Returns the log's head now.
///
/// # Errors
///
/// [`AuditExtendError::CutOff`] or [`AuditExtendError::Rewritten`] when it does not extend the
/// head; [`AuditExtendError::Verify`] when the log does not verify.
pub fn verify_audit_extends(
    path: impl AsRef<Path>,
    kept: &TreeHead,
) -> Result<TreeHead, AuditExtendError> {
    let (tree, tip) = audit_tree(path)?;
    extends(&tree, tip.entries, kept)
}

/// A receipt: entry `index` is in the tree of `size` entries, with the proof; verified from the
/// entry's line, the receipt and a head alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Receipt {
    /// The entry's index (its `seq`).
    pub index: u64,
    /// The size of the tree the proof is for.
    pub size: u64,
    /// The inclusion proof, from the leaf up, each hash written `sha256:<hex>`.
    pub proof: Vec<String>,
}

impl Receipt {
    /// Whether `entry` — the entry's line as the log holds it, without the newline — is at
    /// this receipt's index in the tree `head` names (`head.size` must be the receipt's).
    pub fn verify(&self, entry: &str, head: &TreeHead) -> bool {
        let Some(proof) = self
            .proof
            .iter()
            .map(|hex| parse_hash(hex))
            .collect::<Option<Vec<Hash>>>()
        else {
            return false;
        };
        head.size == self.size
            && verify_inclusion(
                self.index,
                self.size,
                &leaf_hash(entry.as_bytes()),
                &proof,
                &head.root,
            )
    }
}

/// The receipt of entry `index` in the log's tree now, and that tree's head.
///
/// # Errors
///
/// As [`verify_audit_file`]; `Ok(None)` when the log has no entry `index`.
pub fn audit_receipt(
    path: impl AsRef<Path>,
    index: u64,
) -> Result<Option<(Receipt, TreeHead)>, AuditVerifyError> {
    let (tree, tip) = audit_tree(path)?;
    Ok(receipt_of(&tree, tip.entries, index))
}
