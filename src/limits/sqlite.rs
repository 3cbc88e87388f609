//! Counters in a SQLite file (feature `sqlite`) — the approval ledger's file, typically — so
//! that processes sharing it share their limits.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::sql::{as_sql, expires_ms, since_ms, swept_until, written_together};
use super::{CounterError, RateCounters, Refuses, Take, Taken};

/// Counts kept in a SQLite file, shared by every process that opens it with the same session.
///
/// # Guarantees
///
/// - A take runs in one `IMMEDIATE` transaction: counting and recording are one step for every
///   process sharing the file, so two processes under a cap of `n` authorize `n` calls between
///   them, not `2n`; and a refused call records nothing.
/// - Call times are deleted a day after they were taken (the longest window; on every take, by
///   an index on the expiry time); `"per": "session"` times stay until
///   [`forget_session`](Self::forget_session).
/// - Counters of different sessions never mix.
/// - A take fails (the call is denied) once the path no longer names the file opened — removed or
///   replaced: a process opening the path now would count apart.
/// - A take recording more than four counters, each once (a tool result's values), writes them in
///   three statements, counted exactly as one by one.
///
/// # Examples
///
/// ```no_run
/// use toolgate::*;
/// use toolgate::approvals::SqliteApprovalStore;
/// use toolgate::limits::SqliteRateCounters;
/// # fn registry() -> ToolRegistry { ToolRegistry::default() }
/// let controller = ToolController::new(registry(), ToolPolicy::default())
///     .with_approval_store(SqliteApprovalStore::open("toolgate.db")?)
///     .with_rate_counters(SqliteRateCounters::open("toolgate.db", "agent-7")?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SqliteRateCounters {
    connection: Mutex<Connection>,
    session: String,
    file: super::opened_file::OpenedFile,
}

impl SqliteRateCounters {
    /// Opens (or creates) the counters in the SQLite file at `path` for `session`: processes
    /// passing the same session share their counts, including `"per": "session"` ones.
    ///
    /// # Errors
    ///
    /// [`CounterError::Store`] if the file cannot be opened or is not a SQLite database.
    pub fn open(path: impl AsRef<Path>, session: impl Into<String>) -> Result<Self, CounterError> {
        let path = path.as_ref();
        let mut connection = Connection::open(path).map_err(CounterError::store)?;
        connection
            .busy_timeout(crate::sqlite_busy::BUSY_TIMEOUT)
            .map_err(CounterError::store)?;
        // Retried as a whole while another process holds the lock: see `sqlite_busy`.
        crate::sqlite_busy::retry_while_busy(
            || create(&mut connection),
            crate::sqlite_busy::is_busy,
        )
        .map_err(CounterError::store)?;
        // The file SQLite opened, as SQLite names it (absolute; a `file:` URI read), beside the
        // path given (see `OpenedFile`).
        let opened = connection
            .path()
            .filter(|name| !name.is_empty())
            .map(std::path::PathBuf::from);
        Ok(Self {
            connection: Mutex::new(connection),
            session: session.into(),
            file: super::opened_file::OpenedFile::at(path, opened.as_deref()),
        })
    }

    /// Deletes this session's counts, `"per": "session"` ones included.
    ///
    /// # Errors
    ///
    /// [`CounterError::Store`] if the file cannot be written.
    pub fn forget_session(&self) -> Result<(), CounterError> {
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Compared as bytes: `substr` of text counts characters (and a NUL ends it), so a
        // session named `é` would have deleted nothing.
        let prefix = self.prefix();
        connection
            .execute(
                "DELETE FROM toolgate_rate_events
                 WHERE substr(CAST(bucket AS BLOB), 1, ?2) = CAST(?1 AS BLOB)",
                params![prefix, as_sql(prefix.len() as u64)],
            )
            .map_err(CounterError::store)?;
        Ok(())
    }

    /// Every bucket of this session starts with the session's length and name, so no session's
    /// name can be a prefix of another's buckets.
    fn prefix(&self) -> String {
        format!("{}:{}/", self.session.len(), self.session)
    }
}

/// WAL mode and the table, created in one `IMMEDIATE` transaction: it waits for the lock like
/// every write, where a deferred one would fail at once on becoming a writer.
fn create(connection: &mut Connection) -> rusqlite::Result<()> {
    let _mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    transaction.execute_batch(
        "CREATE TABLE IF NOT EXISTS toolgate_rate_events (
             bucket TEXT NOT NULL,
             at_ms INTEGER NOT NULL,
             expires_ms INTEGER
         );
         CREATE INDEX IF NOT EXISTS toolgate_rate_events_bucket
             ON toolgate_rate_events (bucket, at_ms);
         CREATE INDEX IF NOT EXISTS toolgate_rate_events_expiry
             ON toolgate_rate_events (expires_ms) WHERE expires_ms IS NOT NULL;",
    )?;
    // Files made before weights (sums, flow rules) existed: every call they hold weighed 1.
    let has_weight: bool = transaction.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('toolgate_rate_events') WHERE name = 'weight'",
        [],
        |row| row.get(0),
    )?;
    if !has_weight {
        transaction.execute_batch(
            "ALTER TABLE toolgate_rate_events ADD COLUMN weight INTEGER NOT NULL DEFAULT 1",
        )?;
    }
    transaction.commit()
}

impl RateCounters for SqliteRateCounters {
    fn take(&self, takes: &[Take<'_>], now_ms: u64) -> Result<Taken, CounterError> {
        self.file.still_there()?;
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(CounterError::store)?;
        // Each statement is prepared once a connection (`prepare_cached`): parsing one cost
        // more than running it (a decision by one provenance condition took 8 µs, now 3 µs).
        transaction
            .prepare_cached(
                "DELETE FROM toolgate_rate_events WHERE expires_ms IS NOT NULL AND expires_ms <= ?1",
            )
            .and_then(|mut statement| statement.execute([swept_until(now_ms)]))
            .map_err(CounterError::store)?;
        let prefix = self.prefix();
        let buckets: Vec<String> = takes
            .iter()
            .map(|take| super::bucket_name(&prefix, take))
            .collect();
        let mut totals = Vec::with_capacity(takes.len());
        for (take, bucket) in takes.iter().zip(&buckets) {
            if !take.enforce || take.refuses == Refuses::Never {
                totals.push(0);
                continue;
            }
            let since = since_ms(take, now_ms);
            let total: i64 = transaction
                .prepare_cached(
                    "SELECT COALESCE(SUM(weight), 0) FROM toolgate_rate_events
                     WHERE bucket = ?1 AND (?2 IS NULL OR at_ms > ?2)",
                )
                .and_then(|mut statement| {
                    statement.query_row(params![bucket, since], |row| row.get(0))
                })
                .map_err(CounterError::store)?;
            totals.push(u64::try_from(total).unwrap_or(0));
        }
        if let Some(index) = super::first_refusal(takes, &totals) {
            // Dropping the transaction rolls back: the refused call records nothing.
            return Ok(Taken::Full(index));
        }
        let recorded: Vec<(&Take<'_>, &str)> = takes
            .iter()
            .zip(&buckets)
            .filter(|(take, _)| take.weight > 0)
            .map(|(take, bucket)| (take, bucket.as_str()))
            .collect();
        if written_together(recorded.iter().map(|&(_, bucket)| bucket)) {
            record_together(&transaction, &recorded, now_ms).map_err(CounterError::store)?;
        } else {
            for &(take, bucket) in &recorded {
                record_one(&transaction, take, bucket, now_ms).map_err(CounterError::store)?;
            }
        }
        transaction.commit().map_err(CounterError::store)?;
        Ok(Taken::All)
    }
}

/// Records `take` in `bucket`: a time, or the one time of a counter that replaces its records.
fn record_one(
    transaction: &Transaction<'_>,
    take: &Take<'_>,
    bucket: &str,
    now_ms: u64,
) -> rusqlite::Result<()> {
    let now = as_sql(now_ms);
    let mut at = now;
    if take.replaces {
        // The later of the two times: a clock stepped back never shortens a window.
        let last: Option<i64> = transaction
            .prepare_cached("SELECT MAX(at_ms) FROM toolgate_rate_events WHERE bucket = ?1")?
            .query_row([bucket], |row| row.get(0))?;
        at = last.map_or(now, |last| last.max(now));
        transaction
            .prepare_cached("DELETE FROM toolgate_rate_events WHERE bucket = ?1")?
            .execute([bucket])?;
    }
    transaction
        .prepare_cached(
            "INSERT INTO toolgate_rate_events (bucket, at_ms, expires_ms, weight)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            bucket,
            at,
            expires_ms(take, now_ms),
            as_sql(take.weight)
        ])?;
    Ok(())
}

/// [`record_one`] of every take of `recorded` (each counter once), in three statements over
/// JSON arrays: the replaced counters' last times read, their records deleted, every record
/// inserted. JSON carries every name unchanged, a NUL included (a test writes names of every
/// kind both ways).
fn record_together(
    transaction: &Transaction<'_>,
    recorded: &[(&Take<'_>, &str)],
    now_ms: u64,
) -> rusqlite::Result<()> {
    let now = as_sql(now_ms);
    let replaced: Vec<&str> = recorded
        .iter()
        .filter(|(take, _)| take.replaces)
        .map(|&(_, bucket)| bucket)
        .collect();
    let mut last: HashMap<String, i64> = HashMap::new();
    if !replaced.is_empty() {
        let replaced = serde_json::Value::from(replaced).to_string();
        let mut read = transaction.prepare_cached(
            "SELECT bucket, MAX(at_ms) FROM toolgate_rate_events
             WHERE bucket IN (SELECT value FROM json_each(?1)) GROUP BY bucket",
        )?;
        let rows = read.query_map([&replaced], |row| Ok((row.get(0)?, row.get(1)?)))?;
        for row in rows {
            let (bucket, at): (String, i64) = row?;
            last.insert(bucket, at);
        }
        transaction
            .prepare_cached(
                "DELETE FROM toolgate_rate_events
                 WHERE bucket IN (SELECT value FROM json_each(?1))",
            )?
            .execute([&replaced])?;
    }
    let rows: Vec<serde_json::Value> = recorded
        .iter()
        .map(|&(take, bucket)| {
            // Only replaced counters have a last time read (each counter is taken once here).
            let at = last.get(bucket).map_or(now, |&last| last.max(now));
            serde_json::json!([bucket, at, expires_ms(take, now_ms), as_sql(take.weight)])
        })
        .collect();
    transaction
        .prepare_cached(
            "INSERT INTO toolgate_rate_events (bucket, at_ms, expires_ms, weight)
             SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?1)",
        )?
        .execute([serde_json::Value::from(rows).to_string()])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_made_before_weights_counts_each_of_its_calls_once() {
        let dir =
            std::env::temp_dir().join(format!("toolgate-counters-old-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE toolgate_rate_events (bucket TEXT NOT NULL, at_ms INTEGER NOT NULL, expires_ms INTEGER);
             INSERT INTO toolgate_rate_events VALUES ('1:s/cap', 10, NULL), ('1:s/cap', 20, NULL);",
        )
        .unwrap();
        drop(old);
        let counters = SqliteRateCounters::open(&path, "s").unwrap();
        let cap = |max| [Take::limit("cap", None, max)];
        assert_eq!(counters.take(&cap(2), 30).unwrap(), Taken::Full(0));
        assert_eq!(counters.take(&cap(3), 30).unwrap(), Taken::All);
        // Opening again finds the column there.
        drop(counters);
        assert!(SqliteRateCounters::open(&path, "s").is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
