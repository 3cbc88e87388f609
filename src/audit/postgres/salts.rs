//! Disclosing arguments against an entry of the PostgreSQL chain, and forgetting a salt. Salts
//! live in `toolgate_audit_salts`, keyed by entry key: the chain's hashes never cover them.

use serde_json::Value;

use super::{PostgresAuditSink, PostgresAuditVerifyError, audit_error, verify_chain};
use crate::audit::AuditError;
use crate::audit::commitment::{self, ArgumentSalt, Disclosure};

impl PostgresAuditSink {
    /// Shows `arguments` against entry `index` of the chain (after integrating what is queued
    /// and verifying the chain): whether its salted commitment opens to them with its salt, or
    /// the salt was erased. `Ok(None)` past the chain's end.
    ///
    /// # Errors
    ///
    /// As [`verify`](Self::verify).
    pub fn disclose(
        &self,
        index: u64,
        arguments: &Value,
    ) -> Result<Option<Disclosure>, PostgresAuditVerifyError> {
        let mut client = self.integrated()?;
        verify_chain(&mut client)?;
        let unreadable = |error| PostgresAuditVerifyError::Unreadable(audit_error("read", error));
        let seq = i64::try_from(index).unwrap_or(i64::MAX);
        let Some(row) = client
            .query_opt(
                "SELECT a.event, s.salt FROM toolgate_audit a
                 LEFT JOIN toolgate_audit_salts s ON s.entry_key = a.entry_key
                 WHERE a.seq = $1",
                &[&seq],
            )
            .map_err(unreadable)?
        else {
            return Ok(None);
        };
        let event: Value = row
            .try_get::<_, &str>(0)
            .ok()
            .and_then(|event| serde_json::from_str(event).ok())
            .unwrap_or(Value::Null);
        let salt = row
            .try_get::<_, Option<&str>>(1)
            .ok()
            .flatten()
            .and_then(|salt| salt.parse::<ArgumentSalt>().ok());
        Ok(Some(commitment::disclose(&event, salt, arguments)))
    }

    /// Deletes entry `index`'s salt (a person's data erased); returns whether there was one. The
    /// chain is untouched: every hash, proof and checkpoint over it still verifies, and nothing
    /// can be confirmed about that entry's arguments any more.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if the database cannot be reached.
    pub fn forget_salt(&self, index: u64) -> Result<bool, AuditError> {
        if self.read_only {
            return Err(AuditError::new(
                "this PostgreSQL audit log was opened read-only: no salt is erased",
            ));
        }
        let mut client = self.integrated().map_err(|error| match error {
            PostgresAuditVerifyError::Unreadable(error) => error,
            other => AuditError::caused_by("integrate", other),
        })?;
        let seq = i64::try_from(index).unwrap_or(i64::MAX);
        let deleted = client
            .execute(
                "DELETE FROM toolgate_audit_salts
                 WHERE entry_key = (SELECT entry_key FROM toolgate_audit WHERE seq = $1)",
                &[&seq],
            )
            .map_err(|error| audit_error("cannot delete the salt", error))?;
        Ok(deleted > 0)
    }
}
