//! Approvals shared by several servers, in PostgreSQL (feature `postgres`): one consumption per
//! request across every node, expiry by the database's clock, and changes published to all nodes.
//!
//! `pool` holds the connections and the retry rule, `schema` the tables, `changes` the
//! subscription to published changes.

mod changes;
mod pool;
mod schema;

pub use changes::{ApprovalChange, ApprovalChanges};

use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::Config;

use self::pool::{OpError, Pool, store_error};
use crate::approvals::{
    ApprovalError, ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore, ExecutionOutcome,
    StoreError, Transition, store::Admit,
};

/// How many connections a store opens at most, unless told otherwise.
const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// The longest time to live stored; anything longer is stored as this (a century).
const MAX_TIME_TO_LIVE_MS: u64 = 100 * 365 * 24 * 3600 * 1000;

const INSERT_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtext('toolgate pending ' || current_schema()))";
const COUNT_WAITING: &str = "SELECT count(*) FROM toolgate_approvals
     WHERE state = 'pending' AND (expires_at IS NULL OR expires_at > now())";
const INSERT: &str = "INSERT INTO toolgate_approvals (id, request, state, expires_at)
     VALUES ($1, $2, 'pending', now() + $3::float8 * interval '1 millisecond')";
// One statement decides expiry and consumes: of concurrent updates to one row, PostgreSQL lets
// one through and re-checks `state = 'pending'` for the others once it committed, so they match
// nothing.
const TAKE: &str = "UPDATE toolgate_approvals
     SET state = CASE WHEN expires_at <= now() THEN 'expired' ELSE $2 END, answered_at = now()
     WHERE id = $1 AND state = 'pending'
     RETURNING request, state = 'expired'";
const WAITING: &str = "SELECT request FROM toolgate_approvals
     WHERE state = 'pending' AND (expires_at IS NULL OR expires_at > now()) ORDER BY seq";
const WAITING_ONE: &str = "SELECT request FROM toolgate_approvals
     WHERE id = $1 AND state = 'pending' AND (expires_at IS NULL OR expires_at > now())";
const RECORD_OUTCOME: &str =
    "UPDATE toolgate_approvals SET outcome = $1 WHERE id = $2 AND state = 'approved'";
pub(super) const STATE: &str = "SELECT state, outcome FROM toolgate_approvals WHERE id = $1";

/// Approval requests in a PostgreSQL database that several agent servers share: a request made
/// on one node is listed, answered and consumed on any node.
///
/// # Guarantees
///
/// - **Exactly once across nodes.** Answering is one conditional `UPDATE … WHERE state =
///   'pending'` in a transaction: of any number of answers from any number of threads, processes
///   or machines, exactly one moves a request out of `pending`, and it is committed as approved
///   *before* the handler runs — a node that dies afterwards leaves it approved with an unknown
///   outcome, never pending again.
/// - **Fail closed.** If the commit fails or its answer is lost, the answer returns
///   [`ApprovalError::Store`] and nothing runs. An operation is tried again on a new connection
///   only when the connection was lost *before* the commit (nothing committed then): a
///   terminated backend or a restarted server costs a reconnect — retried for up to 10 s while
///   the server is away — never a second run.
/// - **One clock.** Expiry is decided by the database server's clock (`now()`), never a node's:
///   the `now_ms` the [`ApprovalStore`] methods receive is used only to recover the time to live
///   (`expires_ms - now_ms`, which is the same on every clock), so nodes whose clocks disagree
///   agree on what has expired.
/// - **The same limits as the other stores**: `max_pending` counts unexpired pending requests of
///   all nodes, checked under a lock so two nodes cannot both take the last place.
/// - **A versioned schema**, created in the connection's current schema on first use (tables
///   `toolgate_meta` and `toolgate_approvals`); a newer version is refused, nothing is approved
///   from it. A stored request whose call no longer matches its digest is denied when answered.
/// - **Changes are published** (`LISTEN`/`NOTIFY` on the channel `toolgate_approvals`, sent when
///   the change commits): [`subscribe`](Self::subscribe) follows them, and
///   [`wait_for_answer`](Self::wait_for_answer) waits for one request's answer without polling.
///
/// The client speaks PostgreSQL without TLS: reach the server over a Unix socket, loopback, or a
/// tunnel. The store is a cheap handle: clones share one pool of connections.
///
/// # Examples
///
/// ```no_run
/// use toolgate::*;
/// use toolgate::approvals::{ApprovalError, ApprovalId};
/// use toolgate::approvals::PostgresApprovalStore;
/// # fn registry() -> ToolRegistry { ToolRegistry::default() }
/// let store = PostgresApprovalStore::connect("postgresql://toolgate@%2Frun%2Fpostgresql/agents")?;
/// let controller = ToolController::new(registry(), ToolPolicy::default())
///     .with_approval_store(store.clone());
/// // Any node over the same database lists and answers the same requests; this one can wait:
/// # let id: ApprovalId = "0123456789abcdef0123456789abcdef".parse().unwrap();
/// let state = store.wait_for_answer(id, std::time::Duration::from_secs(30))?;
/// # Ok::<(), ApprovalError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PostgresApprovalStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: Pool,
    /// The schema the tables live in (`current_schema()` at connect): published changes from
    /// other schemas of the same database are not ours.
    schema: String,
}

impl PostgresApprovalStore {
    /// Connects with a libpq-style URL or key-value string (`postgresql://user@host/db`, a Unix
    /// socket directory as a percent-encoded host, `?options=-csearch_path%3Dname` for another
    /// schema), creating or checking the tables.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the string does not parse, the server cannot be reached, or
    /// the tables are of a newer version.
    pub fn connect(url: &str) -> Result<Self, ApprovalError> {
        let config: Config = url
            .parse()
            .map_err(|error| store_error("invalid connection string", error))?;
        Self::connect_with(config, DEFAULT_MAX_CONNECTIONS)
    }

    /// As [`connect`](Self::connect), with a client configuration and at most
    /// `max_connections` connections open at once (callers beyond it wait up to 30 s).
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub fn connect_with(mut config: Config, max_connections: usize) -> Result<Self, ApprovalError> {
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("toolgate");
        }
        let pool = Pool::new(config, max_connections);
        // A node starting up is told at once that the server is unreachable.
        let schema = pool.run_within(
            "cannot create the approval tables",
            Duration::ZERO,
            |conn| {
                schema::create_or_check(conn)?;
                let row = conn.client().query_one("SELECT current_schema()", &[])?;
                Ok(row.get::<_, String>(0))
            },
        )?;
        Ok(Self {
            inner: Arc::new(Inner { pool, schema }),
        })
    }

    /// The database schema holding the tables.
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// Claims the tables for the deployment named `owners[0]` — a name its instances share and
    /// no other deployment has (the gateway derives one from its request-state key) —, or checks
    /// they are its: one of `owners` holds them (the others are the deployment's earlier names,
    /// replaced by the first), or nobody does. Every instance of a deployment claims at start.
    /// An empty `owners` claims nothing.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] when another deployment holds the tables — two deployments on one
    /// schema listed, answered and ran each other's held calls —, or the database fails.
    pub fn claim(&self, owners: &[String]) -> Result<(), ApprovalError> {
        self.inner
            .pool
            .run(
                "cannot claim the approval tables",
                |conn| match crate::postgres_owner::claim(conn.client(), "approval", owners) {
                    Ok(()) => Ok(()),
                    Err(crate::postgres_owner::ClaimError::Db(error)) => Err(OpError::Db(error)),
                    Err(crate::postgres_owner::ClaimError::Taken { schema }) => {
                        Err(OpError::Refused(ApprovalError::Store(StoreError::new(
                            crate::postgres_owner::ClaimError::taken_message("approval", &schema),
                        ))))
                    }
                },
            )
    }

    /// Follows changes from every node: each new request and each answer, expiry, revocation or
    /// recorded outcome, as it commits. Opens a connection of its own for as long as it lives.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the server cannot be reached.
    pub fn subscribe(&self) -> Result<ApprovalChanges, ApprovalError> {
        ApprovalChanges::listen(self.inner.pool.config(), self.inner.schema.clone())
    }

    /// Waits up to `timeout` for a request to leave `pending` — answered, revoked or expired
    /// on any node — and returns where it stands: still [`ApprovalState::Pending`] after the
    /// timeout, `None` for an unknown id. Woken by the published change, not by polling (it
    /// listens before it reads, so an answer in between is not missed); what it returns is read
    /// from the request's row, never taken from a notification, which any connection can send.
    ///
    /// A request whose time to live runs out while nobody answers stays `pending` in the table
    /// until answered (and is then denied as expired); this waits for an answer, not for that.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the server cannot be reached or the connection is lost.
    pub fn wait_for_answer(
        &self,
        approval_id: ApprovalId,
        timeout: Duration,
    ) -> Result<Option<ApprovalState>, ApprovalError> {
        let deadline = Instant::now() + timeout;
        let mut changes = self.subscribe()?;
        match self.state(approval_id)? {
            Some(ApprovalState::Pending) => {}
            other => return Ok(other),
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Some(ApprovalState::Pending));
            }
            match changes.next_within(left)? {
                // A change is a wake-up: what is reported is the row's state, read now.
                Some(change) if change.approval_id == approval_id => {
                    match self.state(approval_id)? {
                        Some(ApprovalState::Pending) => {}
                        other => return Ok(other),
                    }
                }
                Some(_) => {}
                None => return Ok(Some(ApprovalState::Pending)),
            }
        }
    }
}

/// The time to live the node meant: the same whatever its clock says.
fn time_to_live_ms(expires_ms: Option<u64>, now_ms: u64) -> Option<f64> {
    // At most a century, exactly representable as f64.
    expires_ms.map(|expires| expires.saturating_sub(now_ms).min(MAX_TIME_TO_LIVE_MS) as f64)
}

fn unreadable(approval_id: &str, error: serde_json::Error) -> ApprovalError {
    ApprovalError::Store(StoreError::caused_by(
        format!("stored request {approval_id} is unreadable: {error}"),
        error,
    ))
}

/// Reads a stored state and outcome back.
pub(super) fn parse_state(state: &str, outcome: Option<&str>) -> Option<ApprovalState> {
    ApprovalState::from_columns(state, outcome)
}

impl ApprovalStore for PostgresApprovalStore {
    /// Stores the request with its expiry on the server's clock: `now()` plus the time to live
    /// (`expires_ms - now_ms`).
    fn insert(
        &self,
        request: &ApprovalRequest,
        expires_ms: Option<u64>,
        max_pending: usize,
        now_ms: u64,
    ) -> Result<(), ApprovalError> {
        let text = serde_json::to_string(request).map_err(|error| {
            ApprovalError::Store(StoreError::caused_by(error.to_string(), error))
        })?;
        let id = request.approval_id.to_string();
        let time_to_live = time_to_live_ms(expires_ms, now_ms);
        self.inner.pool.run("cannot hold the request", |conn| {
            let (lock, count, insert) = (
                conn.statement(INSERT_LOCK)?,
                conn.statement(COUNT_WAITING)?,
                conn.statement(INSERT)?,
            );
            let mut transaction = conn.client().transaction()?;
            transaction.execute(&lock, &[])?;
            let waiting: i64 = transaction.query_one(&count, &[])?.get(0);
            if usize::try_from(waiting).unwrap_or(usize::MAX) >= max_pending {
                return Err(OpError::Refused(ApprovalError::TooManyPending {
                    limit: max_pending,
                }));
            }
            transaction.execute(&insert, &[&id, &text, &time_to_live])?;
            transaction.commit().map_err(OpError::AtCommit)
        })
    }

    /// Consumes the request; expiry is judged by the server's clock, `now_ms` is not used.
    fn take(
        &self,
        approval_id: ApprovalId,
        transition: Transition,
        admit: Admit<'_>,
        _now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError> {
        let id = approval_id.to_string();
        let settled = transition.settled(false).column();
        self.inner.pool.run("cannot answer the request", |conn| {
            let take = conn.statement(TAKE)?;
            let mut transaction = conn.client().transaction()?;
            let Some(row) = transaction.query_opt(&take, &[&id, &settled])? else {
                return Err(OpError::Refused(ApprovalError::NotPending { approval_id }));
            };
            let (text, expired): (String, bool) = (row.get(0), row.get(1));
            // A row that does not parse is left pending: the transaction is rolled back.
            let request: ApprovalRequest = serde_json::from_str(&text)
                .map_err(|error| OpError::Refused(unreadable(&id, error)))?;
            // A refused answer rolls the update back: the request stays pending.
            transition
                .settle(&request, expired, admit)
                .map_err(OpError::Refused)?;
            transaction.commit().map_err(OpError::AtCommit)?;
            Ok((request, expired))
        })
    }

    /// The request if it waits unexpired by the server's clock; `now_ms` is not used.
    fn waiting(
        &self,
        approval_id: ApprovalId,
        _now_ms: u64,
    ) -> Result<Option<ApprovalRequest>, ApprovalError> {
        let id = approval_id.to_string();
        let row = self.inner.pool.run("cannot read the request", |conn| {
            let waiting = conn.statement(WAITING_ONE)?;
            Ok(conn.client().query_opt(&waiting, &[&id])?)
        })?;
        row.map(|row| {
            let text: &str = row.get(0);
            serde_json::from_str(text).map_err(|error| unreadable(&id, error))
        })
        .transpose()
    }

    /// The unexpired pending requests by the server's clock, oldest first; `now_ms` is not used.
    fn pending(&self, _now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        let rows = self
            .inner
            .pool
            .run("cannot list waiting requests", |conn| {
                let waiting = conn.statement(WAITING)?;
                Ok(conn.client().query(&waiting, &[])?)
            })?;
        rows.iter()
            .map(|row| {
                let text: &str = row.get(0);
                serde_json::from_str(text).map_err(|error| unreadable("(listed)", error))
            })
            .collect()
    }

    fn record_outcome(
        &self,
        approval_id: ApprovalId,
        outcome: ExecutionOutcome,
    ) -> Result<(), ApprovalError> {
        let outcome = outcome.column();
        let id = approval_id.to_string();
        // Setting the same outcome twice changes nothing: safe to try again after a lost connection.
        self.inner.pool.run("cannot record the outcome", |conn| {
            let record = conn.statement(RECORD_OUTCOME)?;
            conn.client().execute(&record, &[&outcome, &id])?;
            Ok(())
        })
    }

    fn state(&self, approval_id: ApprovalId) -> Result<Option<ApprovalState>, ApprovalError> {
        let id = approval_id.to_string();
        let row = self.inner.pool.run("cannot read the request", |conn| {
            let state = conn.statement(STATE)?;
            Ok(conn.client().query_opt(&state, &[&id])?)
        })?;
        let Some(row) = row else {
            return Ok(None);
        };
        let (state, outcome): (&str, Option<&str>) = (row.get(0), row.get(1));
        parse_state(state, outcome).map(Some).ok_or_else(|| {
            ApprovalError::Store(StoreError::new(format!(
                "unknown state {state:?} in the approval table"
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::time_to_live_ms;

    #[test]
    fn times_to_live_are_kept_as_meant_up_to_a_century() {
        assert_eq!(time_to_live_ms(None, 5), None);
        assert_eq!(time_to_live_ms(Some(1_000), 400), Some(600.0));
        // Already past (a clock stepped back): nothing left, never negative.
        assert_eq!(time_to_live_ms(Some(400), 1_000), Some(0.0));
        // 100 × 365 days of 86,400,000 ms, exactly, for anything longer.
        let century = 3_153_600_000_000.0;
        assert_eq!(time_to_live_ms(Some(3_153_600_000_000), 0), Some(century));
        assert_eq!(time_to_live_ms(Some(3_153_600_000_001), 0), Some(century));
        assert_eq!(time_to_live_ms(Some(u64::MAX), 7), Some(century));
    }
}
