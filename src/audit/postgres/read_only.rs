//! Opening the PostgreSQL audit log to read it: what an auditor's role, granted `SELECT` only,
//! can do.

use postgres::Config;

use super::{PostgresAuditSink, audit_error};
use crate::audit::AuditError;

impl PostgresAuditSink {
    /// Opens the log to read it, changing nothing: no table is created or migrated, no queued
    /// entry integrated (readers see what the writers integrated, each within 50 ms of its
    /// record), nothing recorded and no salt erased. [`verify`](Self::verify),
    /// [`tree_head`](Self::tree_head), [`verify_extends`](Self::verify_extends),
    /// [`receipt`](Self::receipt), [`disclose`](Self::disclose), [`export`](Self::export) and
    /// [`recent`](Self::recent) work with a role granted `SELECT` alone.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if the string does not parse, the server cannot be reached, or the schema
    /// holds no audit tables of this version (a wrong database or schema is not an empty log).
    pub fn connect_read_only(url: &str) -> Result<Self, AuditError> {
        let config: Config = url
            .parse()
            .map_err(|error| audit_error("invalid connection string", error))?;
        Self::open(config, "toolgate-audit-reader", true)
    }
}
