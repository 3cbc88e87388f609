//! The PostgreSQL chain as one Merkle tree for every node: its head, whether it extends a head
//! kept earlier, and receipts (the helpers the JSON Lines log uses too).

use super::{ChainTip, PostgresAuditSink, PostgresAuditVerifyError, Taps, verify_chain_into};
use crate::audit::{Receipt, TreeHead, merkle, tree_head};

impl PostgresAuditSink {
    /// The chain's Merkle tree head (RFC 9162; the leaves are the entries spelled as the JSON
    /// Lines file holds them, so one tree covers every node's appends), after verifying it.
    ///
    /// # Errors
    ///
    /// As [`verify`](Self::verify).
    pub fn tree_head(&self) -> Result<TreeHead, PostgresAuditVerifyError> {
        let (tree, tip) = self.tree()?;
        Ok(tree_head::head_of(&tree, tip.entries))
    }

    /// Verifies the chain and that it extends `kept`, a tree head taken earlier (no entry before
    /// it cut off or rewritten); returns the head now.
    ///
    /// # Errors
    ///
    /// As [`verify`](Self::verify), or [`PostgresAuditVerifyError::NotExtending`].
    pub fn verify_extends(&self, kept: &TreeHead) -> Result<TreeHead, PostgresAuditVerifyError> {
        let (tree, tip) = self.tree()?;
        tree_head::extends(&tree, tip.entries, kept).map_err(PostgresAuditVerifyError::NotExtending)
    }

    /// The receipt of entry `index` with the tree head now; `Ok(None)` past the chain's end.
    ///
    /// # Errors
    ///
    /// As [`verify`](Self::verify).
    pub fn receipt(
        &self,
        index: u64,
    ) -> Result<Option<(Receipt, TreeHead)>, PostgresAuditVerifyError> {
        let (tree, tip) = self.tree()?;
        Ok(tree_head::receipt_of(&tree, tip.entries, index))
    }

    fn tree(&self) -> Result<(merkle::MerkleTree, ChainTip), PostgresAuditVerifyError> {
        let mut client = self.integrated()?;
        let mut tree = merkle::MerkleTree::new();
        let taps = Taps {
            tree: Some(&mut tree),
            copy: None,
        };
        let tip = verify_chain_into(&mut client, taps)?;
        Ok((tree, tip))
    }
}
