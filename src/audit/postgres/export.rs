//! The PostgreSQL chain written out as a JSON Lines audit log, verified as it is written.

use std::io;

use super::{ChainTip, PostgresAuditSink, PostgresAuditVerifyError, Taps, verify_chain_into};

impl PostgresAuditSink {
    /// Writes the whole chain to `out` as the JSON Lines log a file sink would hold, byte for
    /// byte — so every file tool (`verify_audit_file`, tree heads, receipts, checkpoints, an
    /// outside RFC 9162 verifier) reads the export and agrees with [`tree_head`](Self::tree_head)
    /// — after integrating what is queued. The chain is verified as it is written (one snapshot,
    /// safe while nodes append); on any error what was written is incomplete and must not be
    /// used. Salts are not exported: they stay in the database, where `forget_salt` can erase them.
    ///
    /// # Errors
    ///
    /// As [`verify`](Self::verify), or [`PostgresAuditVerifyError::Unwritable`] if `out` fails.
    pub fn export(&self, out: &mut dyn io::Write) -> Result<ChainTip, PostgresAuditVerifyError> {
        let mut client = self.integrated()?;
        let taps = Taps {
            tree: None,
            copy: Some(&mut *out),
        };
        let tip = verify_chain_into(&mut client, taps)?;
        out.flush().map_err(PostgresAuditVerifyError::Unwritable)?;
        Ok(tip)
    }
}
