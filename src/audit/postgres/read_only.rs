//! Opening the PostgreSQL audit log to read it: what an auditor's role, granted `SELECT` only,
//! can do.

use std::sync::{Arc, Once};
use std::time::Duration;

use postgres::{Config, NoTls};

use super::append::Appender;
use super::{INTEGRATE_EVERY, PostgresAuditSink, RECONNECT_FOR, audit_error, duration_ms, schema};
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
        let mut config: Config = url
            .parse()
            .map_err(|error| audit_error("invalid connection string", error))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("toolgate-audit-reader");
        }
        let mut client = config
            .connect(NoTls)
            .map_err(|error| audit_error("cannot connect to the audit database", error))?;
        schema::check_only(&mut client)?;
        Ok(Self {
            appender: Arc::new(Appender::new(
                config,
                client,
                duration_ms(RECONNECT_FOR),
                duration_ms(INTEGRATE_EVERY),
            )?),
            background: Once::new(),
            read_only: true,
        })
    }
}
