//! The audit tables and their versions: created on first use, migrated forward, a newer one
//! refused.

use postgres::Client;

use super::audit_error;
use crate::audit::AuditError;
use crate::audit::verify::GENESIS;

/// The layout this version writes and reads.
const SCHEMA_VERSION: i64 = 2;

/// Version 1: the entries, and one row naming the chain's tip. Integrating locks the tip row, so
/// entries from every node form one line.
const CREATE_V1: &str = "
CREATE TABLE toolgate_audit (
    seq bigint PRIMARY KEY CHECK (seq >= 0),
    prev text NOT NULL,
    event text NOT NULL,
    hash text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE toolgate_audit_tip (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    entries bigint NOT NULL,
    last_hash text NOT NULL
);
";

/// Version 2: appends commit to a queue concurrently (no lock); integration moves queued entries
/// into the chain in batches under the tip's lock. Every entry has a key of its writer's making,
/// unique in queue and chain alike, so an append retried after an unconfirmed commit is stored
/// once. Salts live in a table of their own: deleting one touches no entry.
const MIGRATE_V1_TO_V2: &str = "
ALTER TABLE toolgate_audit ADD COLUMN entry_key text;
CREATE UNIQUE INDEX toolgate_audit_entry_key ON toolgate_audit (entry_key);
CREATE TABLE toolgate_audit_queue (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    entry_key text NOT NULL UNIQUE,
    event text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE toolgate_audit_salts (
    entry_key text PRIMARY KEY,
    salt text NOT NULL
);
";

pub(super) fn create_or_check(client: &mut Client) -> Result<(), AuditError> {
    let at = |error| audit_error("cannot create the audit tables", error);
    let mut transaction = client.transaction().map_err(at)?;
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock(hashtext('toolgate schema ' || current_schema()))",
            &[],
        )
        .map_err(at)?;
    transaction
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS toolgate_meta (key text PRIMARY KEY, value bigint NOT NULL)",
        )
        .map_err(at)?;
    let version: Option<i64> = transaction
        .query_opt(
            "SELECT value FROM toolgate_meta WHERE key = 'audit_schema_version'",
            &[],
        )
        .map_err(at)?
        .map(|row| row.get(0));
    match version {
        None => {
            transaction.batch_execute(CREATE_V1).map_err(at)?;
            transaction
                .execute(
                    "INSERT INTO toolgate_audit_tip (entries, last_hash) VALUES (0, $1)",
                    &[&GENESIS],
                )
                .map_err(at)?;
            transaction.batch_execute(MIGRATE_V1_TO_V2).map_err(at)?;
            transaction
                .execute(
                    "INSERT INTO toolgate_meta (key, value) VALUES ('audit_schema_version', $1)",
                    &[&SCHEMA_VERSION],
                )
                .map_err(at)?;
        }
        Some(1) => {
            // Entries of version 1 keep their place and hashes; they have no key (none is ever
            // retried again) and no salt (they carry a bare digest).
            transaction.batch_execute(MIGRATE_V1_TO_V2).map_err(at)?;
            transaction
                .execute(
                    "UPDATE toolgate_meta SET value = $1 WHERE key = 'audit_schema_version'",
                    &[&SCHEMA_VERSION],
                )
                .map_err(at)?;
        }
        Some(SCHEMA_VERSION) => {}
        Some(other) => {
            return Err(AuditError::new(format!(
                "audit schema version {other}, this toolgate reads version {SCHEMA_VERSION}"
            )));
        }
    }
    transaction.commit().map_err(at)
}

/// Checks that the audit tables are there, of this version, without creating or migrating
/// anything (a reader's role may only `SELECT`).
pub(super) fn check_only(client: &mut Client) -> Result<(), AuditError> {
    let version = client.query_opt(
        "SELECT value FROM toolgate_meta WHERE key = 'audit_schema_version'",
        &[],
    );
    let version: Option<i64> = match version {
        Ok(row) => row.and_then(|row| row.try_get(0).ok()),
        Err(error) if error.code() == Some(&postgres::error::SqlState::UNDEFINED_TABLE) => {
            return Err(AuditError::new(
                "no toolgate audit tables in this database and schema (is it the audit log's?)",
            ));
        }
        Err(error) => return Err(audit_error("cannot read the audit tables", error)),
    };
    match version {
        Some(SCHEMA_VERSION) => Ok(()),
        None => Err(AuditError::new(
            "no toolgate audit tables in this database and schema (is it the audit log's?)",
        )),
        Some(other) => Err(AuditError::new(format!(
            "audit schema version {other}, this toolgate reads version {SCHEMA_VERSION} (a writer migrates an older one when it connects)"
        ))),
    }
}
