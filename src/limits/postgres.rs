//! Counters in PostgreSQL (feature `postgres`) — the approval store's server, typically — so
//! that several servers share their limits.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use postgres::{Client, Config, NoTls};

use super::{CounterError, RateCounters, Refuses, Take, Taken};

/// Counts kept in PostgreSQL, shared by every process that connects with the same session.
///
/// # Guarantees
///
/// - A take is one transaction holding a transaction-scoped advisory lock on each counter it
///   enforces (taken in a fixed order, so takes cannot deadlock): counting and recording are one
///   step for every server, so servers under a cap of `n` authorize `n` calls between them.
/// - A refused call records nothing; a failed take (connection lost) records nothing and denies
///   the call; the next take reconnects.
/// - Windows are judged by the controllers' clocks (see [`Clock`](crate::clock::Clock)), not the
///   database server's: servers sharing counters should keep their clocks in step (NTP); a skew
///   of `s` milliseconds moves a window's edge by at most `s`.
/// - Call times are deleted a day after they were taken (the longest window); `"per": "session"`
///   times stay until [`forget_session`](Self::forget_session).
pub struct PostgresRateCounters {
    config: Config,
    client: Mutex<Option<Client>>,
    session: String,
}

impl fmt::Debug for PostgresRateCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The configuration holds the password: only the session is shown.
        f.debug_struct("PostgresRateCounters")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

const CREATE: &str = "CREATE TABLE IF NOT EXISTS toolgate_rate_events (
        bucket TEXT NOT NULL,
        at_ms BIGINT NOT NULL,
        expires_ms BIGINT
    );
    CREATE INDEX IF NOT EXISTS toolgate_rate_events_bucket ON toolgate_rate_events (bucket, at_ms);
    CREATE INDEX IF NOT EXISTS toolgate_rate_events_expiry ON toolgate_rate_events (expires_ms)
        WHERE expires_ms IS NOT NULL;
    ALTER TABLE toolgate_rate_events ADD COLUMN IF NOT EXISTS weight BIGINT NOT NULL DEFAULT 1;";

impl PostgresRateCounters {
    /// Connects to the server at `url` (a `postgresql://` URL or `key=value` string) and creates
    /// the counters' table if it is missing; processes passing the same `session` share counts.
    ///
    /// # Errors
    ///
    /// [`CounterError::Store`] if the URL does not parse, the server cannot be reached, or the
    /// table cannot be created.
    pub fn connect(url: &str, session: impl Into<String>) -> Result<Self, CounterError> {
        let config: Config = url.parse().map_err(CounterError::store)?;
        let mut client = config.connect(NoTls).map_err(CounterError::store)?;
        // Two servers starting together may both try to create the table: one waits for the other.
        let mut transaction = client.transaction().map_err(CounterError::store)?;
        transaction
            .execute("SELECT pg_advisory_xact_lock(7270617465)", &[])
            .map_err(CounterError::store)?;
        transaction
            .batch_execute(CREATE)
            .map_err(CounterError::store)?;
        transaction.commit().map_err(CounterError::store)?;
        Ok(Self {
            config,
            client: Mutex::new(Some(client)),
            session: session.into(),
        })
    }

    /// Deletes this session's counts, `"per": "session"` ones included.
    ///
    /// # Errors
    ///
    /// [`CounterError::Store`] if the server cannot be reached.
    pub fn forget_session(&self) -> Result<(), CounterError> {
        let prefix = self.prefix();
        self.with_client(|client| {
            client.execute(
                "DELETE FROM toolgate_rate_events WHERE left(bucket, char_length($1)) = $1",
                &[&prefix],
            )?;
            Ok(())
        })
    }

    fn prefix(&self) -> String {
        format!("{}:{}/", self.session.len(), self.session)
    }

    /// Runs `work` on the connection, reconnecting first if the last one was lost. A failed
    /// operation drops the connection, so a half-dead one is never reused.
    fn with_client<T>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, CounterError> {
        let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.as_ref().is_none_or(Client::is_closed) {
            *slot = Some(self.config.connect(NoTls).map_err(CounterError::store)?);
        }
        let Some(client) = slot.as_mut() else {
            unreachable!("connected just above")
        };
        work(client).map_err(|error| {
            *slot = None;
            CounterError::store(error)
        })
    }
}

/// Times past `i64::MAX` ms are clamped (PostgreSQL's `BIGINT` is signed).
fn as_sql(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl RateCounters for PostgresRateCounters {
    fn take(&self, takes: &[Take<'_>], now_ms: u64) -> Result<Taken, CounterError> {
        let prefix = self.prefix();
        let buckets: Vec<String> = takes
            .iter()
            .map(|take| super::bucket_name(&prefix, take))
            .collect();
        let mut locked: Vec<&String> = buckets.iter().collect();
        locked.sort();
        locked.dedup();
        let now = as_sql(now_ms);
        self.with_client(|client| {
            let mut transaction = client.transaction()?;
            for bucket in &locked {
                transaction.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                    &[bucket],
                )?;
            }
            // Every counter's passed times, not only these: a counter never taken again is
            // emptied too. Deleting a passed time changes no count, so no lock is needed for it.
            transaction.execute(
                "DELETE FROM toolgate_rate_events WHERE expires_ms <= $1",
                &[&now],
            )?;
            let mut totals = Vec::with_capacity(takes.len());
            for (take, bucket) in takes.iter().zip(&buckets) {
                if !take.enforce || take.refuses == Refuses::Never {
                    totals.push(0);
                    continue;
                }
                // Counted by the window in force now (a replaced policy may have changed it); a
                // time's own expiry only decides when it is deleted.
                let since = take
                    .window_ms
                    .map(|window| as_sql(now_ms.saturating_sub(window)));
                let total: i64 = transaction
                    .query_one(
                        "SELECT COALESCE(SUM(weight), 0)::BIGINT FROM toolgate_rate_events
                         WHERE bucket = $1 AND ($2::BIGINT IS NULL OR at_ms > $2)",
                        &[bucket, &since],
                    )?
                    .get(0);
                totals.push(u64::try_from(total).unwrap_or(0));
            }
            if let Some(index) = super::first_refusal(takes, &totals) {
                // Dropping the transaction rolls back: the refused call records nothing.
                return Ok(Taken::Full(index));
            }
            for (take, bucket) in takes.iter().zip(&buckets) {
                if take.weight == 0 {
                    continue;
                }
                let mut at = now;
                if take.replaces {
                    // The later of the two times: a clock stepped back never shortens a window.
                    let last: Option<i64> = transaction
                        .query_one(
                            "SELECT MAX(at_ms) FROM toolgate_rate_events WHERE bucket = $1",
                            &[bucket],
                        )?
                        .get(0);
                    at = last.map_or(now, |last| last.max(now));
                    transaction.execute(
                        "DELETE FROM toolgate_rate_events WHERE bucket = $1",
                        &[bucket],
                    )?;
                }
                // Kept for the longest window, whatever this one: see `LONGEST_WINDOW_MS`.
                let expires = take
                    .window_ms
                    .map(|_| as_sql(now_ms.saturating_add(super::LONGEST_WINDOW_MS)));
                transaction.execute(
                    "INSERT INTO toolgate_rate_events (bucket, at_ms, expires_ms, weight)
                     VALUES ($1, $2, $3, $4)",
                    &[bucket, &at, &expires, &as_sql(take.weight)],
                )?;
            }
            transaction.commit()?;
            Ok(Taken::All)
        })
    }
}
