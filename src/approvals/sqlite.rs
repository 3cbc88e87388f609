//! A durable approval ledger in SQLite (feature `sqlite`; SQLite is bundled, nothing to install).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::approvals::{
    ApprovalError, ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore, ExecutionOutcome,
    StoreError, Transition, store::Admit,
};

/// The ledger layout this version writes and reads.
const SCHEMA_VERSION: i64 = 1;

/// Approval requests kept in a SQLite file: they survive restarts, and several processes may
/// share one file.
///
/// # Guarantees
///
/// - Written with WAL and `synchronous=FULL`: an answer that returned is on disk.
/// - A request is consumed by a conditional update (`… WHERE state = 'pending'`) inside an
///   `IMMEDIATE` transaction: of any number of answers from any number of threads or processes,
///   exactly one succeeds, and it is stored as approved *before* the handler runs — a crash
///   afterwards leaves it approved with an unknown outcome, never pending again.
/// - A file that is not a ledger, is corrupt or truncated, or was written by a newer version is
///   refused when opened, and nothing is approved from it. A stored request whose call no
///   longer matches its digest is denied when answered.
///
/// # Examples
///
/// ```no_run
/// use toolgate::*;
/// use toolgate::approvals::ApprovalError;
/// use toolgate::approvals::SqliteApprovalStore;
/// # fn registry() -> ToolRegistry { ToolRegistry::default() }
/// let controller = ToolController::new(registry(), ToolPolicy::default())
///     .with_approval_store(SqliteApprovalStore::open("approvals.db")?);
/// // After a restart, a new controller over the same file sees and answers the same requests.
/// # Ok::<(), ApprovalError>(())
/// ```
#[derive(Debug)]
pub struct SqliteApprovalStore {
    path: PathBuf,
    // One connection per store; SQLite's own locks order access between processes.
    connection: Mutex<Connection>,
}

/// A store failure caused by `error` (SQLite, or JSON), which stays reachable as its source.
fn store_error(error: impl std::error::Error + Send + Sync + 'static) -> ApprovalError {
    ApprovalError::Store(StoreError::caused_by(error.to_string(), error))
}

/// A store failure that the store itself found (a newer ledger version, a failed integrity check).
fn store_problem(message: String) -> ApprovalError {
    ApprovalError::Store(StoreError::new(message))
}

impl SqliteApprovalStore {
    /// Opens (or creates) a ledger file, checking its integrity and version first.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the file cannot be opened, is not a SQLite database, fails
    /// SQLite's integrity check, or holds a ledger of a newer version.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ApprovalError> {
        let path = path.as_ref().to_owned();
        let at = |error: rusqlite::Error| {
            ApprovalError::Store(StoreError::caused_by(
                format!("{}: {error}", path.display()),
                error,
            ))
        };
        let mut connection = Connection::open(&path).map_err(at)?;
        connection
            .busy_timeout(crate::sqlite_busy::BUSY_TIMEOUT)
            .map_err(at)?;
        // Retried as a whole while another process holds the lock: see `sqlite_busy`.
        match crate::sqlite_busy::retry_while_busy(
            || set_up(&mut connection),
            |setup| matches!(setup, Setup::Sql(error) if crate::sqlite_busy::is_busy(error)),
        ) {
            Ok(()) => {}
            Err(Setup::Sql(error)) => return Err(at(error)),
            Err(Setup::Corrupt(check)) => {
                return Err(store_problem(format!(
                    "{}: the ledger is corrupt ({check})",
                    path.display()
                )));
            }
            Err(Setup::Newer(other)) => {
                return Err(store_problem(format!(
                    "{}: ledger schema version {other}, this toolgate reads version {SCHEMA_VERSION}",
                    path.display()
                )));
            }
        }
        Ok(Self {
            path,
            connection: Mutex::new(connection),
        })
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // Only an answer's `admit` check runs under this lock besides this file's statements, before
        // anything is written; a lock poisoned by it still guards a usable connection (its
        // transaction rolls back when dropped), and SQLite's transactions keep the file consistent.
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn as_sql(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl ApprovalStore for SqliteApprovalStore {
    fn insert(
        &self,
        request: &ApprovalRequest,
        expires_ms: Option<u64>,
        max_pending: usize,
        now_ms: u64,
    ) -> Result<(), ApprovalError> {
        let text = serde_json::to_string(request).map_err(store_error)?;
        let mut connection = self.lock();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(store_error)?;
        let waiting: i64 = transaction
            .query_row(
                "SELECT COUNT(*) FROM approvals
                 WHERE state = 'pending' AND (expires_ms IS NULL OR expires_ms > ?1)",
                [as_sql(now_ms)],
                |row| row.get(0),
            )
            .map_err(store_error)?;
        if usize::try_from(waiting).unwrap_or(usize::MAX) >= max_pending {
            return Err(ApprovalError::TooManyPending { limit: max_pending });
        }
        transaction
            .execute(
                "INSERT INTO approvals (id, request, state, created_ms, expires_ms)
                 VALUES (?1, ?2, 'pending', ?3, ?4)",
                params![
                    request.approval_id.to_string(),
                    text,
                    as_sql(now_ms),
                    expires_ms.map(as_sql)
                ],
            )
            .map_err(store_error)?;
        transaction.commit().map_err(store_error)
    }

    fn take(
        &self,
        approval_id: ApprovalId,
        transition: Transition,
        admit: Admit<'_>,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError> {
        let id = approval_id.to_string();
        let mut connection = self.lock();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(store_error)?;
        let row: Option<(String, Option<i64>)> = transaction
            .query_row(
                "SELECT request, expires_ms FROM approvals WHERE id = ?1 AND state = 'pending'",
                [&id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(store_error)?;
        let Some((text, expires_ms)) = row else {
            return Err(ApprovalError::NotPending { approval_id });
        };
        // Read before the state changes: a row that does not parse is left as it is.
        let request: ApprovalRequest = serde_json::from_str(&text).map_err(|error| {
            ApprovalError::Store(StoreError::caused_by(
                format!("stored request {id} is unreadable: {error}"),
                error,
            ))
        })?;
        let expired = expires_ms.is_some_and(|expires| expires <= as_sql(now_ms));
        // Nothing is written yet: a refused answer drops the transaction, the request stays pending.
        let state = transition.settle(&request, expired, admit)?.column();
        let changed = transaction
            .execute(
                "UPDATE approvals SET state = ?1 WHERE id = ?2 AND state = 'pending'",
                params![state, id],
            )
            .map_err(store_error)?;
        if changed != 1 {
            return Err(ApprovalError::NotPending { approval_id });
        }
        transaction.commit().map_err(store_error)?;
        Ok((request, expired))
    }

    fn waiting(
        &self,
        approval_id: ApprovalId,
        now_ms: u64,
    ) -> Result<Option<ApprovalRequest>, ApprovalError> {
        let id = approval_id.to_string();
        let text: Option<String> = self
            .lock()
            .query_row(
                "SELECT request FROM approvals WHERE id = ?1 AND state = 'pending'
                 AND (expires_ms IS NULL OR expires_ms > ?2)",
                params![id, as_sql(now_ms)],
                |row| row.get(0),
            )
            .optional()
            .map_err(store_error)?;
        text.map(|text| {
            serde_json::from_str(&text).map_err(|error| {
                ApprovalError::Store(StoreError::caused_by(
                    format!("stored request {id} is unreadable: {error}"),
                    error,
                ))
            })
        })
        .transpose()
    }

    fn pending(&self, now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        let connection = self.lock();
        let mut statement = connection
            .prepare(
                "SELECT request FROM approvals
                 WHERE state = 'pending' AND (expires_ms IS NULL OR expires_ms > ?1)
                 ORDER BY created_ms, id",
            )
            .map_err(store_error)?;
        let rows = statement
            .query_map([as_sql(now_ms)], |row| row.get::<_, String>(0))
            .map_err(store_error)?;
        let mut requests = Vec::new();
        for row in rows {
            let text = row.map_err(store_error)?;
            requests.push(serde_json::from_str(&text).map_err(store_error)?);
        }
        Ok(requests)
    }

    fn record_outcome(
        &self,
        approval_id: ApprovalId,
        outcome: ExecutionOutcome,
    ) -> Result<(), ApprovalError> {
        let outcome = outcome.column();
        self.lock()
            .execute(
                "UPDATE approvals SET outcome = ?1 WHERE id = ?2 AND state = 'approved'",
                params![outcome, approval_id.to_string()],
            )
            .map_err(store_error)?;
        Ok(())
    }

    fn state(&self, approval_id: ApprovalId) -> Result<Option<ApprovalState>, ApprovalError> {
        let row: Option<(String, Option<String>)> = self
            .lock()
            .query_row(
                "SELECT state, outcome FROM approvals WHERE id = ?1",
                [approval_id.to_string()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(store_error)?;
        let Some((state, outcome)) = row else {
            return Ok(None);
        };
        ApprovalState::from_columns(&state, outcome.as_deref())
            .map(Some)
            .ok_or_else(|| store_problem(format!("unknown state {state:?} in the ledger")))
    }
}

/// Why setting a ledger up failed.
enum Setup {
    Sql(rusqlite::Error),
    /// What `PRAGMA quick_check` said.
    Corrupt(String),
    /// The version the file holds.
    Newer(i64),
}

impl From<rusqlite::Error> for Setup {
    fn from(error: rusqlite::Error) -> Self {
        Self::Sql(error)
    }
}

/// Checks the file, sets WAL mode, and creates or checks the schema in one `IMMEDIATE`
/// transaction, which waits for the lock like every write.
fn set_up(connection: &mut Connection) -> Result<(), Setup> {
    let check: String = connection.query_row("PRAGMA quick_check", [], |row| row.get(0))?;
    if check != "ok" {
        return Err(Setup::Corrupt(check));
    }
    let _mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    transaction.execute(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        [],
    )?;
    let version: Option<i64> = transaction
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    match version {
        None => {
            transaction.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                [SCHEMA_VERSION],
            )?;
            transaction.execute(
                "CREATE TABLE approvals (
                    id TEXT PRIMARY KEY,
                    request TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN
                        ('pending', 'approved', 'rejected', 'expired', 'revoked')),
                    outcome TEXT CHECK (outcome IN ('ok', 'error')),
                    created_ms INTEGER NOT NULL,
                    expires_ms INTEGER
                )",
                [],
            )?;
        }
        Some(SCHEMA_VERSION) => {}
        Some(other) => return Err(Setup::Newer(other)),
    }
    transaction.commit()?;
    Ok(())
}
