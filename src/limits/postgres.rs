//! Counters in PostgreSQL (feature `postgres`) — the approval store's server, typically — so
//! that several servers share their limits.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use postgres::{Client, Config, NoTls};

use super::sql::{
    FEW, KEPT_PAST_EXPIRY_MS, as_sql, expires_ms, since_ms, swept_until, written_together,
};
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

impl RateCounters for PostgresRateCounters {
    fn take(&self, takes: &[Take<'_>], now_ms: u64) -> Result<Taken, CounterError> {
        let prefix = self.prefix();
        let buckets: Vec<String> = takes
            .iter()
            .map(|take| super::bucket_name(&prefix, take))
            .collect();
        let mut locked: Vec<&str> = buckets.iter().map(String::as_str).collect();
        locked.sort_unstable();
        locked.dedup();
        self.with_client(|client| {
            let mut transaction = client.transaction()?;
            // Every lock in one statement, taken in the sorted order every take locks in (no two
            // takes wait on each other in a circle). A result's values are a hundred counters or
            // more: one round trip each made recording a page take 85 ms.
            if locked.len() > FEW {
                transaction.execute(LOCK_IN_ORDER, &[&locked])?;
            } else {
                for bucket in &locked {
                    transaction.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                        &[bucket],
                    )?;
                }
            }
            // Every counter's passed times, not only these: a counter never taken again is
            // emptied too. Deleting a passed time changes no count, so no lock is needed for it
            // — and none is waited for: a passed time another take holds (replacing its
            // counter) is left to a later take, where waiting for it could close a circle with
            // that take (PostgreSQL: `deadlock detected`, the call denied).
            // Up to the earlier of this node's time and the server's (each less a day): a node
            // whose clock runs ahead deletes no record the others still count.
            transaction.execute(
                "DELETE FROM toolgate_rate_events WHERE ctid IN (
                     SELECT ctid FROM toolgate_rate_events
                     WHERE expires_ms <= LEAST($1::BIGINT,
                         (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT - $2::BIGINT)
                     FOR UPDATE SKIP LOCKED)",
                &[&swept_until(now_ms), &as_sql(KEPT_PAST_EXPIRY_MS)],
            )?;
            let totals = totals(&mut transaction, takes, &buckets, now_ms)?;
            if let Some(index) = super::first_refusal(takes, &totals) {
                // Dropping the transaction rolls back: the refused call records nothing.
                return Ok(Taken::Full(index));
            }
            record(&mut transaction, takes, &buckets, now_ms)?;
            transaction.commit()?;
            Ok(Taken::All)
        })
    }
}

/// Locks each counter of `$1` (sorted), in the array's order: volatile functions are evaluated
/// after the sort that `ORDER BY` names.
const LOCK_IN_ORDER: &str = "SELECT pg_advisory_xact_lock(hashtextextended(bucket, 0))
     FROM unnest($1::TEXT[]) WITH ORDINALITY AS locked(bucket, position)
     ORDER BY position";

/// Each take's total in its window before the call, in one query for every take that can refuse
/// (0 for the others: their totals decide nothing).
fn totals(
    transaction: &mut postgres::Transaction<'_>,
    takes: &[Take<'_>],
    buckets: &[String],
    now_ms: u64,
) -> Result<Vec<u64>, postgres::Error> {
    let mut totals = vec![0; takes.len()];
    let judged: Vec<usize> = (0..takes.len())
        .filter(|&index| takes[index].enforce && takes[index].refuses != Refuses::Never)
        .collect();
    if judged.is_empty() {
        return Ok(totals);
    }
    if judged.len() <= FEW {
        for index in judged {
            let since = since_ms(&takes[index], now_ms);
            let total: i64 = transaction
                .query_one(
                    "SELECT COALESCE(SUM(weight), 0)::BIGINT FROM toolgate_rate_events
                     WHERE bucket = $1 AND ($2::BIGINT IS NULL OR at_ms > $2)",
                    &[&buckets[index], &since],
                )?
                .get(0);
            totals[index] = u64::try_from(total).unwrap_or(0);
        }
        return Ok(totals);
    }
    let names: Vec<&str> = judged
        .iter()
        .map(|&index| buckets[index].as_str())
        .collect();
    let since: Vec<Option<i64>> = judged
        .iter()
        .map(|&index| since_ms(&takes[index], now_ms))
        .collect();
    let rows = transaction.query(
        "SELECT asked.position, COALESCE(SUM(event.weight), 0)::BIGINT
         FROM unnest($1::TEXT[], $2::BIGINT[]) WITH ORDINALITY AS asked(bucket, since, position)
         LEFT JOIN toolgate_rate_events event
           ON event.bucket = asked.bucket AND (asked.since IS NULL OR event.at_ms > asked.since)
         GROUP BY asked.position",
        &[&names, &since],
    )?;
    for row in rows {
        let position: i64 = row.get(0);
        let total: i64 = row.get(1);
        let index = usize::try_from(position - 1).map_or(usize::MAX, |at| judged[at]);
        totals[index] = u64::try_from(total).unwrap_or(0);
    }
    Ok(totals)
}

/// Records every take of weight at `now_ms`: in two statements when more than [`FEW`] are and no
/// counter is written twice (one for the records that replace a counter's, one for the others),
/// else one by one, in order, as a take that replaces must see the record written before it.
fn record(
    transaction: &mut postgres::Transaction<'_>,
    takes: &[Take<'_>],
    buckets: &[String],
    now_ms: u64,
) -> Result<(), postgres::Error> {
    let now = as_sql(now_ms);
    let written: Vec<usize> = (0..takes.len())
        .filter(|&index| takes[index].weight > 0)
        .collect();
    if !written_together(written.iter().map(|&index| buckets[index].as_str())) {
        for &index in &written {
            record_one(transaction, &takes[index], &buckets[index], now_ms)?;
        }
        return Ok(());
    }
    let (replacing, adding): (Vec<usize>, Vec<usize>) =
        written.iter().partition(|&&index| takes[index].replaces);
    for (indices, statement) in [(replacing, REPLACE_ALL), (adding, ADD_ALL)] {
        if indices.is_empty() {
            continue;
        }
        let names: Vec<&str> = indices
            .iter()
            .map(|&index| buckets[index].as_str())
            .collect();
        let expires: Vec<Option<i64>> = indices
            .iter()
            .map(|&index| expires_ms(&takes[index], now_ms))
            .collect();
        let weights: Vec<i64> = indices
            .iter()
            .map(|&index| as_sql(takes[index].weight))
            .collect();
        transaction.execute(statement, &[&names, &expires, &weights, &now])?;
    }
    Ok(())
}

/// Replaces each counter's records of `$1` by one at the later of `$4` and its last record's time
/// (a clock stepped back never shortens a window).
const REPLACE_ALL: &str = "WITH written AS (
         SELECT * FROM unnest($1::TEXT[], $2::BIGINT[], $3::BIGINT[])
             AS written(bucket, expires_ms, weight)
     ), replaced AS (
         DELETE FROM toolgate_rate_events event USING written
         WHERE event.bucket = written.bucket
         RETURNING event.bucket, event.at_ms
     )
     INSERT INTO toolgate_rate_events (bucket, at_ms, expires_ms, weight)
     SELECT written.bucket,
            GREATEST($4::BIGINT, COALESCE(
                (SELECT MAX(replaced.at_ms) FROM replaced WHERE replaced.bucket = written.bucket),
                $4::BIGINT)),
            written.expires_ms, written.weight
     FROM written";

/// Adds a record at `$4` to each counter of `$1`.
const ADD_ALL: &str = "INSERT INTO toolgate_rate_events (bucket, at_ms, expires_ms, weight)
     SELECT bucket, $4::BIGINT, expires_ms, weight
     FROM unnest($1::TEXT[], $2::BIGINT[], $3::BIGINT[]) AS written(bucket, expires_ms, weight)";

/// Records `take` alone (what [`record`] does when a counter is written twice in one call).
fn record_one(
    transaction: &mut postgres::Transaction<'_>,
    take: &Take<'_>,
    bucket: &str,
    now_ms: u64,
) -> Result<(), postgres::Error> {
    let now = as_sql(now_ms);
    let mut at = now;
    if take.replaces {
        // The later of the two times: a clock stepped back never shortens a window.
        let last: Option<i64> = transaction
            .query_one(
                "SELECT MAX(at_ms) FROM toolgate_rate_events WHERE bucket = $1",
                &[&bucket],
            )?
            .get(0);
        at = last.map_or(now, |last| last.max(now));
        transaction.execute(
            "DELETE FROM toolgate_rate_events WHERE bucket = $1",
            &[&bucket],
        )?;
    }
    transaction.execute(
        "INSERT INTO toolgate_rate_events (bucket, at_ms, expires_ms, weight)
         VALUES ($1, $2, $3, $4)",
        &[
            &bucket,
            &at,
            &expires_ms(take, now_ms),
            &as_sql(take.weight),
        ],
    )?;
    Ok(())
}
