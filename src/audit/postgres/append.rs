//! Appending: events queue in the sink, and one transaction commits every queued event to the
//! shared queue table (group commit within a process; across processes the inserts take no common
//! lock, and the server's own group commit batches their WAL flushes).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use postgres::{Client, Config, NoTls, Statement};

use super::{LONGEST_PAUSE, audit_error};
use crate::audit::AuditError;
use crate::audit::group_commit::{Committed, GroupCommit};
use crate::postgres_error::connection_lost;

/// An event waiting for its commit. (No `Debug`: it holds a salt.)
pub(super) struct Queued {
    ticket: u64,
    key: String,
    event: String,
    salt: Option<String>,
    /// A commit that held this event failed: it may have landed all the same (a commit that went
    /// unanswered), so it is stored only where its key is not stored yet.
    retried: bool,
}

/// The sink's side of appending: its queue, its tickets and the connection its commits use.
pub(super) struct Appender {
    pub(super) config: Config,
    /// `None` after the connection was lost, until the next commit reconnects; with it, the
    /// append statement once prepared on it (planned once, not on every commit).
    client: Mutex<Option<(Client, Option<Statement>)>>,
    queue: Mutex<Vec<Queued>>,
    pub(super) group: GroupCommit,
    /// Unique to this sink: 128 random bits, then a counter, make each entry's key.
    key_prefix: String,
    next_key: AtomicU64,
    /// How long a commit waits for an absent server, in milliseconds.
    pub(super) reconnect_for_ms: AtomicU64,
    /// How often the background thread commits and integrates, in milliseconds.
    pub(super) integrate_every_ms: AtomicU64,
    /// The background thread's own connection, for integrating.
    pub(super) integrator: Mutex<Option<Client>>,
}

impl Appender {
    pub(super) fn new(
        config: Config,
        client: Client,
        reconnect_for_ms: u64,
        integrate_every_ms: u64,
    ) -> Result<Self, AuditError> {
        let mut random = [0_u8; 16];
        getrandom::fill(&mut random)
            .map_err(|_| AuditError::new("no randomness for the sink's entry keys"))?;
        Ok(Self {
            config,
            client: Mutex::new(Some((client, None))),
            queue: Mutex::new(Vec::new()),
            group: GroupCommit::default(),
            key_prefix: crate::canonical::hex_lower(&random),
            next_key: AtomicU64::new(0),
            reconnect_for_ms: AtomicU64::new(reconnect_for_ms),
            integrate_every_ms: AtomicU64::new(integrate_every_ms),
            integrator: Mutex::new(None),
        })
    }

    /// Queues one event (canonical JSON) and its salt; returns its ticket.
    pub(super) fn enqueue(&self, event: String, salt: Option<String>) -> u64 {
        let key = format!(
            "{}-{}",
            self.key_prefix,
            self.next_key.fetch_add(1, Ordering::Relaxed)
        );
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        // Issued under the queue's lock: tickets follow the queue's order.
        let ticket = self.group.issue();
        queue.push(Queued {
            ticket,
            key,
            event,
            salt,
            retried: false,
        });
        ticket
    }

    /// One group commit: every queued event in one transaction. Events of a commit that fails go
    /// back to the front of the queue (their writers are told; the next commit tries them again),
    /// so none is dropped while the process lives.
    pub(super) fn commit(&self, _issued: u64) -> Committed {
        let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        let batch = std::mem::take(&mut *self.queue.lock().unwrap_or_else(PoisonError::into_inner));
        let Some(through) = batch.last().map(|queued| queued.ticket) else {
            // Nothing queued: every ticket issued is committed already (commits take turns).
            return Ok(0);
        };
        match self.commit_with_retries(&mut slot, &batch) {
            Ok(()) => Ok(through),
            Err(error) => {
                let mut batch = batch;
                for queued in &mut batch {
                    queued.retried = true;
                }
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                let later = std::mem::replace(&mut *queue, batch);
                queue.extend(later);
                Err(error)
            }
        }
    }

    fn commit_with_retries(
        &self,
        slot: &mut Option<(Client, Option<Statement>)>,
        batch: &[Queued],
    ) -> Result<(), AuditError> {
        let window = Duration::from_millis(self.reconnect_for_ms.load(Ordering::Relaxed));
        let deadline = Instant::now() + window;
        let mut pause = Duration::ZERO;
        // After a commit that went unanswered the batch may be stored already: from then on each
        // try stores only the entries whose keys are in neither the queue nor the chain.
        let mut maybe_stored = batch.iter().any(|queued| queued.retried);
        loop {
            let (client, prepared) = match slot.as_mut() {
                Some(connection) => connection,
                None => match self.config.connect(NoTls) {
                    Ok(client) => slot.insert((client, None)),
                    Err(error) if connection_lost(&error) && Instant::now() + pause < deadline => {
                        pause = (pause * 2).clamp(Duration::from_millis(50), LONGEST_PAUSE);
                        std::thread::sleep(pause);
                        continue;
                    }
                    Err(error) => {
                        return Err(audit_error("cannot connect to the audit database", error));
                    }
                },
            };
            let error = match insert(client, prepared, batch, maybe_stored) {
                Ok(()) => return Ok(()),
                Err(Insert::NotStored(error)) => error,
                Err(Insert::Unknown(error)) => {
                    maybe_stored = true;
                    error
                }
            };
            if !connection_lost(&error) {
                return Err(audit_error("cannot append to the audit queue", error));
            }
            *slot = None;
            if Instant::now() + pause >= deadline {
                return Err(audit_error(
                    if maybe_stored {
                        "the audit append's commit was not confirmed"
                    } else {
                        "cannot append to the audit queue"
                    },
                    error,
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).clamp(Duration::from_millis(50), LONGEST_PAUSE);
        }
    }
}

/// The first try at storing a batch: events and salts in one statement.
const APPEND: &str = "WITH queued AS (
        INSERT INTO toolgate_audit_queue (entry_key, event)
        SELECT k, e FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(k, e, n)
        ORDER BY n
    ), salted AS (
        INSERT INTO toolgate_audit_salts (entry_key, salt)
        SELECT * FROM unnest($3::text[], $4::text[])
    )
    SELECT 1";

/// Why one insert attempt failed.
enum Insert {
    /// Nothing of the batch was stored.
    NotStored(postgres::Error),
    /// The batch may have been stored: the connection went while its commit could have landed.
    Unknown(postgres::Error),
}

impl From<postgres::Error> for Insert {
    fn from(error: postgres::Error) -> Self {
        Insert::NotStored(error)
    }
}

/// Stores a batch. First try: one statement in its own implicit transaction (one round trip; the
/// salts in the same statement). `maybe_stored` (a try before may have committed): in a
/// transaction that share-locks the tip (no integration moves entries meanwhile) and skips entries
/// already in the queue or the chain.
fn insert(
    client: &mut Client,
    prepared: &mut Option<Statement>,
    batch: &[Queued],
    maybe_stored: bool,
) -> Result<(), Insert> {
    let keys: Vec<&str> = batch.iter().map(|queued| queued.key.as_str()).collect();
    let events: Vec<&str> = batch.iter().map(|queued| queued.event.as_str()).collect();
    let salted: Vec<&str> = batch
        .iter()
        .filter(|queued| queued.salt.is_some())
        .map(|queued| queued.key.as_str())
        .collect();
    let salts: Vec<&str> = batch
        .iter()
        .filter_map(|queued| queued.salt.as_deref())
        .collect();
    if !maybe_stored {
        let statement = match prepared {
            Some(statement) => statement.clone(),
            None => prepared.insert(client.prepare(APPEND)?).clone(),
        };
        // A statement the server may have committed before the connection went: unknown.
        return client
            .execute(&statement, &[&keys, &events, &salted, &salts])
            .map(drop)
            .map_err(Insert::Unknown);
    }
    let mut transaction = client.transaction()?;
    transaction.query_one("SELECT 1 FROM toolgate_audit_tip FOR SHARE", &[])?;
    // Salts only for the entries this try stores: a salt forgotten since the first try landed
    // must not come back.
    transaction.execute(
        "WITH stored AS (
             INSERT INTO toolgate_audit_queue (entry_key, event)
             SELECT k, e FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(k, e, n)
             WHERE NOT EXISTS (SELECT 1 FROM toolgate_audit a WHERE a.entry_key = t.k)
             ORDER BY n
             ON CONFLICT (entry_key) DO NOTHING
             RETURNING entry_key
         )
         INSERT INTO toolgate_audit_salts (entry_key, salt)
         SELECT k, s FROM unnest($3::text[], $4::text[]) AS t(k, s)
         WHERE k IN (SELECT entry_key FROM stored)
         ON CONFLICT (entry_key) DO NOTHING",
        &[&keys, &events, &salted, &salts],
    )?;
    transaction.commit().map_err(Insert::Unknown)
}
