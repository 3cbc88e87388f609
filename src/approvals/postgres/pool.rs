//! A small pool of connections to one server, and the one rule for trying an operation again:
//! only when the connection was lost before anything could have committed.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use postgres::{Client, Config, NoTls, Statement};

use crate::approvals::{ApprovalError, StoreError};
use crate::postgres_error::connection_lost;

/// How long a caller waits for a connection when all are lent out.
const WAIT_FOR_CONNECTION: Duration = Duration::from_secs(30);

/// How long an operation whose connection was lost before anything committed keeps reconnecting
/// (a server restart takes about a second), and the longest pause between two tries.
const RECONNECT_FOR: Duration = Duration::from_secs(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(500);

/// One connection with the statements it has prepared (a statement belongs to its connection).
pub(super) struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    /// A connection-level error was seen: the connection is not given back to the pool.
    broken: bool,
}

impl Conn {
    /// The prepared form of `sql` on this connection, prepared on first use.
    pub(super) fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// The client, for transactions and one-off statements.
    pub(super) fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// Why an operation on a connection failed.
pub(super) enum OpError {
    /// A statement before the commit failed: nothing the operation did is committed.
    Db(postgres::Error),
    /// The commit itself failed or went unanswered: whether it committed is unknown.
    AtCommit(postgres::Error),
    /// The store refused (not pending, over the cap, a newer schema): final.
    Refused(ApprovalError),
}

impl From<postgres::Error> for OpError {
    fn from(error: postgres::Error) -> Self {
        OpError::Db(error)
    }
}

/// A failure caused by a PostgreSQL error, which stays reachable as its source.
pub(super) fn store_error(what: &str, error: postgres::Error) -> ApprovalError {
    ApprovalError::Store(StoreError::caused_by(format!("{what}: {error}"), error))
}

/// Connections to one server: at most `max` open at once, idle ones kept for reuse.
pub(super) struct Pool {
    config: Config,
    max: usize,
    state: Mutex<Slots>,
    freed: Condvar,
}

struct Slots {
    // Invariant: `open` counts idle and lent connections; `idle` holds connections outside any
    // transaction, none known to be broken.
    open: usize,
    idle: Vec<Conn>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The config may hold a password: only the size is printed.
        f.debug_struct("Pool").field("max", &self.max).finish()
    }
}

impl Pool {
    pub(super) fn new(config: Config, max: usize) -> Self {
        Self {
            config,
            max: max.max(1),
            state: Mutex::new(Slots {
                open: 0,
                idle: Vec::new(),
            }),
            freed: Condvar::new(),
        }
    }

    pub(super) fn config(&self) -> &Config {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        // Only counters and idle connections are changed under the lock, each consistently.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection: an idle one unless `fresh`, else a new one. `Ok(Err(_))`: connecting failed.
    fn get(&self, fresh: bool) -> Result<Result<Conn, postgres::Error>, ApprovalError> {
        let mut slots = self.lock();
        loop {
            if fresh {
                // Whatever sits idle was opened before the loss just seen: drop it all.
                let dropped = slots.idle.len();
                slots.idle.clear();
                slots.open -= dropped;
            } else if let Some(conn) = slots.idle.pop() {
                return Ok(Ok(conn));
            }
            if slots.open < self.max {
                slots.open += 1;
                drop(slots);
                return match self.config.connect(NoTls) {
                    Ok(client) => Ok(Ok(Conn {
                        client,
                        statements: HashMap::new(),
                        broken: false,
                    })),
                    Err(error) => {
                        self.release(None);
                        Ok(Err(error))
                    }
                };
            }
            let (next, timeout) = self
                .freed
                .wait_timeout(slots, WAIT_FOR_CONNECTION)
                .unwrap_or_else(PoisonError::into_inner);
            slots = next;
            if timeout.timed_out() && slots.open >= self.max && slots.idle.is_empty() {
                return Err(ApprovalError::Store(StoreError::new(format!(
                    "all {} database connections stayed busy for {}s",
                    self.max,
                    WAIT_FOR_CONNECTION.as_secs()
                ))));
            }
        }
    }

    /// Gives a connection back, or (`None`, or broken) closes its slot.
    fn release(&self, conn: Option<Conn>) {
        let mut slots = self.lock();
        match conn {
            Some(conn) if !conn.broken && !conn.client.is_closed() => slots.idle.push(conn),
            _ => slots.open -= 1,
        }
        drop(slots);
        self.freed.notify_one();
    }

    /// Runs `op` on a connection. If the connection turns out to be lost before anything could
    /// have committed (a server restart, a terminated backend), `op` runs again on a new
    /// connection — at once, then with growing pauses, for up to [`RECONNECT_FOR`]. A failed or
    /// unanswered commit is never retried: its outcome is unknown, so the caller gets an error
    /// and, for an answer, nothing runs.
    pub(super) fn run<T>(
        &self,
        what: &str,
        op: impl FnMut(&mut Conn) -> Result<T, OpError>,
    ) -> Result<T, ApprovalError> {
        self.run_within(what, RECONNECT_FOR, op)
    }

    /// As [`run`](Self::run), reconnecting for at most `window` (zero: not at all).
    pub(super) fn run_within<T>(
        &self,
        what: &str,
        window: Duration,
        mut op: impl FnMut(&mut Conn) -> Result<T, OpError>,
    ) -> Result<T, ApprovalError> {
        let deadline = Instant::now() + window;
        let mut fresh = false;
        let mut pause = Duration::ZERO;
        loop {
            let conn = match self.get(fresh)? {
                Ok(conn) => conn,
                // The server is away (down, restarting, starting up): wait for it, a while.
                Err(error) if connection_lost(&error) && Instant::now() + pause < deadline => {
                    pause = (pause * 2).clamp(Duration::from_millis(50), LONGEST_PAUSE);
                    std::thread::sleep(pause);
                    fresh = true;
                    continue;
                }
                Err(error) => {
                    return Err(store_error(
                        "cannot connect to the approval database",
                        error,
                    ));
                }
            };
            // An answer's `admit` check runs between `get` and `release`: if it panics, the guard
            // gives the connection back as broken (its transaction is in an unknown state).
            let mut lent = Lent {
                pool: self,
                conn: Some(conn),
            };
            let result = op(lent.conn.as_mut().expect("lent until released"));
            let mut conn = lent.conn.take().expect("lent until released");
            if let Err(OpError::Db(error) | OpError::AtCommit(error)) = &result {
                conn.broken |= connection_lost(error);
            }
            let lost = conn.broken;
            self.release(Some(conn));
            match result {
                Ok(value) => return Ok(value),
                Err(OpError::Refused(error)) => return Err(error),
                Err(OpError::Db(error)) => {
                    if lost && Instant::now() + pause < deadline {
                        // Nothing committed: try again on a new connection, at once the first
                        // time (a single dropped connection), then with pauses.
                        std::thread::sleep(pause);
                        pause = (pause * 2).clamp(Duration::from_millis(50), LONGEST_PAUSE);
                        fresh = true;
                        continue;
                    }
                    return Err(store_error(what, error));
                }
                Err(OpError::AtCommit(error)) => {
                    return Err(store_error(
                        &format!("{what}: the commit was not confirmed"),
                        error,
                    ));
                }
            }
        }
    }
}

/// A connection lent to one operation: given back as broken if the operation unwinds.
struct Lent<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            conn.broken = true;
            self.pool.release(Some(conn));
        }
    }
}
