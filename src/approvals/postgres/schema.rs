//! The approval tables, created on first use under a version number and refused when newer.

use super::pool::{Conn, OpError};
use crate::approvals::{ApprovalError, StoreError};

/// The layout this version writes and reads.
pub(super) const SCHEMA_VERSION: i64 = 1;

/// The channel every change to an approval is published on (`LISTEN toolgate_approvals`).
pub(super) const CHANNEL: &str = "toolgate_approvals";

/// Version 1. Times are the server's (`now()`): expiry is decided by one clock for every node.
/// The trigger publishes each new request and each change of state or outcome on [`CHANNEL`]
/// when its transaction commits, naming the schema so that stores in other schemas of the same
/// database can tell their changes apart.
const CREATE_V1: &str = "
CREATE TABLE toolgate_approvals (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    request text NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'expired', 'revoked')),
    outcome text CHECK (outcome IN ('ok', 'error')),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    answered_at timestamptz
);
CREATE INDEX toolgate_approvals_waiting ON toolgate_approvals (seq) WHERE state = 'pending';
CREATE FUNCTION toolgate_approvals_publish() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('toolgate_approvals', json_build_object(
        'schema', TG_TABLE_SCHEMA, 'id', NEW.id, 'state', NEW.state, 'outcome', NEW.outcome)::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER toolgate_approvals_publish
    AFTER INSERT OR UPDATE OF state, outcome ON toolgate_approvals
    FOR EACH ROW EXECUTE FUNCTION toolgate_approvals_publish();
";

/// Creates the tables in the connection's current schema if they are missing, or checks their
/// version. An advisory lock keeps two nodes starting at once from racing to create them.
pub(super) fn create_or_check(conn: &mut Conn) -> Result<(), OpError> {
    let mut transaction = conn.client().transaction()?;
    transaction.execute(
        "SELECT pg_advisory_xact_lock(hashtext('toolgate schema ' || current_schema()))",
        &[],
    )?;
    transaction.batch_execute(
        "CREATE TABLE IF NOT EXISTS toolgate_meta (key text PRIMARY KEY, value bigint NOT NULL)",
    )?;
    let version: Option<i64> = transaction
        .query_opt(
            "SELECT value FROM toolgate_meta WHERE key = 'approvals_schema_version'",
            &[],
        )?
        .map(|row| row.get(0));
    match version {
        None => {
            transaction.execute(
                "INSERT INTO toolgate_meta (key, value) VALUES ('approvals_schema_version', $1)",
                &[&SCHEMA_VERSION],
            )?;
            transaction.batch_execute(CREATE_V1)?;
        }
        Some(SCHEMA_VERSION) => {}
        Some(other) => {
            return Err(OpError::Refused(ApprovalError::Store(StoreError::new(
                format!(
                    "approval schema version {other}, this toolgate reads version {SCHEMA_VERSION}"
                ),
            ))));
        }
    }
    transaction.commit().map_err(OpError::AtCommit)
}
