//! One hash-chained audit log in PostgreSQL for every node (feature `postgres`), and its check.
//!
//! Appends commit concurrently to a queue table (`append`); integration moves queued entries into
//! the chain in batches (`integrate`); `schema` creates and migrates the tables; `tree` reads the
//! chain as a Merkle tree.

use std::fmt;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Once, PoisonError};
use std::time::Duration;

use postgres::{Client, Config, NoTls};

use super::group_commit::{self, Background};
use super::verify::{AuditEntryProblem, ChainTip};
use super::{AuditError, AuditEvent, AuditSink};

mod append;
mod chain;
mod export;
mod integrate;
mod read_only;
mod salts;
mod schema;
mod tree;

use append::Appender;
use chain::{Taps, verify_chain, verify_chain_into};
use integrate::Wait;

/// How long an append whose connection was lost before its commit keeps reconnecting (as the
/// approval store does), and the longest pause between two tries.
const RECONNECT_FOR: Duration = Duration::from_secs(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(500);

/// How often each sink commits what was recorded without waiting, and integrates the queue.
const INTEGRATE_EVERY: Duration = Duration::from_millis(50);

/// An audit log in a PostgreSQL table that every node appends to: one hash chain for all of them.
///
/// # Guarantees
///
/// - **One chain, however many writers — without one lock per append.** An append commits the
///   event to a queue table (no shared row is locked: appends from every thread, process and
///   node commit concurrently, and the events of a process's concurrent records share one
///   transaction — group commit). Integration moves queued entries into the chain in batches,
///   under the chain tip's row lock (`SELECT … FOR UPDATE`): entry *n* names entry *n − 1*'s
///   hash, with no fork and no gap. Each sink integrates every 50 ms (skipping while another
///   node does), and before [`verify`](Self::verify), [`tree_head`](Self::tree_head),
///   [`receipt`](Self::receipt) and [`recent`](Self::recent) read the chain.
/// - **An event is stored, or its step did not happen.** `record` returns only after the
///   transaction holding its event committed (the server's `synchronous_commit` decides how
///   durable that is). If the commit fails, `record` fails and the controller does not take the
///   step. A connection lost before or at the commit is replaced and the append tried again (for
///   up to 10 s while the server is away; [`with_reconnect_window`](Self::with_reconnect_window));
///   every event has a key unique across queue and chain, so a retry after a commit that went
///   unanswered stores each event once. Events recorded with
///   [`record_deferred`](AuditSink::record_deferred) commit with the next `record`, or within
///   50 ms; a batch that fails stays queued in the sink for the next commit.
/// - **Crashes.** A process that dies after its commit and before integration loses nothing: its
///   entries wait in the queue table for the next integration by any sink. An integration cut off
///   mid-batch (crash, server restart) rolls back whole.
/// - **Tamper evidence**, as for [`JsonlAuditSink`](crate::audit::JsonlAuditSink): each entry's hash
///   covers its sequence number, the previous hash and the event in canonical JSON, computed by
///   the same function; [`verify`](Self::verify) reports the first bad entry, and a tip row that
///   disagrees with the entries (entries cut off the end, or the tip edited).
/// - **A versioned schema**, created on first use in the connection's current schema (tables
///   `toolgate_audit`, `toolgate_audit_tip`, `toolgate_audit_queue` and `toolgate_audit_salts`,
///   version in `toolgate_meta`); a version 1 schema (one lock per append) is migrated in place,
///   its entries kept as they are; a newer one is refused.
///
/// Not guaranteed, precisely — against anyone who can write to the database (the role the sinks
/// connect as, or a superuser):
/// - **Queued events.** Between an append's commit and the next integration (within 50 ms while a
///   sink runs; until the next sink starts if none does) an event waits in
///   `toolgate_audit_queue` as plain text with no signature or key of its writer. A database
///   writer can edit, delete or insert queue rows then, and what it leaves is integrated and
///   verifies as part of the chain: nothing distinguishes a forged queued event from a real one.
///   The sink that appended does not read its events back, so it does not notice either.
/// - **The chain.** Entries already integrated can be rewritten together with every later hash
///   and the tip. Both are detected only against a tree head or signed checkpoint kept outside
///   the database ([`ChainTip`], `audit checkpoint`): a checkpoint taken after an event was
///   integrated proves that event as it was then.
///
/// A database writer is trusted as much as the gateways themselves; give other roles read access
/// only.
///
/// # Examples
///
/// ```no_run
/// use toolgate::*;
/// use toolgate::audit::PostgresAuditSink;
/// # fn registry() -> ToolRegistry { ToolRegistry::default() }
/// let sink = PostgresAuditSink::connect("postgresql://toolgate@%2Frun%2Fpostgresql/agents")?;
/// let controller = ToolController::new(registry(), ToolPolicy::default()).with_audit_sink(sink);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PostgresAuditSink {
    appender: Arc<Appender>,
    /// The background thread starts with the first record.
    background: Once,
    /// Opened with [`connect_read_only`](Self::connect_read_only): reads what is integrated,
    /// writes nothing.
    read_only: bool,
}

impl fmt::Debug for PostgresAuditSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The config may hold a password.
        f.debug_struct("PostgresAuditSink").finish_non_exhaustive()
    }
}

/// Why a PostgreSQL audit log does not verify.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresAuditVerifyError {
    /// The table could not be read: the database, not the log, is at fault.
    #[error("cannot read the audit table")]
    Unreadable(#[source] AuditError),
    /// An entry is not the one the chain expects at its place: edited, deleted or moved. Treat
    /// it as tampering.
    #[error("audit table broken at entry {seq}: {problem}")]
    Broken {
        /// The 0-based sequence number the first bad entry sits at.
        seq: u64,
        /// What is wrong with it.
        problem: AuditEntryProblem,
    },
    /// Every entry verifies, but the tip row names another end: entries were cut off the end (or
    /// the tip row was edited).
    #[error("the audit chain has {entries} entries but its tip row says {tip_entries}")]
    TipMismatch {
        /// How many entries verify.
        entries: u64,
        /// How many the tip row records.
        tip_entries: u64,
    },
    /// The chain verifies but does not extend a tree head kept earlier
    /// ([`verify_extends`](PostgresAuditSink::verify_extends)): cut off or rewritten.
    #[error(transparent)]
    NotExtending(super::AuditExtendError),
    /// [`export`](PostgresAuditSink::export) could not write where it was told to: what was
    /// written is incomplete.
    #[error("cannot write the export")]
    Unwritable(#[source] io::Error),
}

fn audit_error(what: &str, error: postgres::Error) -> AuditError {
    AuditError::caused_by(format!("{what}: {error}"), error)
}

impl PostgresAuditSink {
    /// Connects with a libpq-style URL (as
    /// [`PostgresApprovalStore::connect`](crate::approvals::PostgresApprovalStore::connect)),
    /// creating or checking the tables.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if the string does not parse, the server cannot be reached, or the tables
    /// are of a newer version.
    pub fn connect(url: &str) -> Result<Self, AuditError> {
        let config: Config = url
            .parse()
            .map_err(|error| audit_error("invalid connection string", error))?;
        Self::connect_with(config)
    }

    /// As [`connect`](Self::connect), with a client configuration.
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub fn connect_with(config: Config) -> Result<Self, AuditError> {
        Self::open(config, "toolgate-audit", false)
    }

    /// Connects with `config` (a 10 s connect timeout and `application` as its name unless it
    /// names its own), creates or checks the tables — or, `read_only`, only checks them — and
    /// makes the sink.
    fn open(mut config: Config, application: &str, read_only: bool) -> Result<Self, AuditError> {
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name(application);
        }
        let mut client = config
            .connect(NoTls)
            .map_err(|error| audit_error("cannot connect to the audit database", error))?;
        if read_only {
            schema::check_only(&mut client)?;
        } else {
            schema::create_or_check(&mut client)?;
        }
        Ok(Self {
            appender: Arc::new(Appender::new(
                config,
                client,
                duration_ms(RECONNECT_FOR),
                duration_ms(INTEGRATE_EVERY),
            )?),
            background: Once::new(),
            read_only,
        })
    }

    /// The same sink, waiting at most `window` (10 s unless set) for an absent server when an
    /// append lost its connection before its commit was confirmed; past it the append fails (and
    /// the step it records does not happen). `Duration::ZERO` fails such an append at once.
    #[must_use]
    pub fn with_reconnect_window(self, window: Duration) -> Self {
        self.appender
            .reconnect_for_ms
            .store(duration_ms(window), Ordering::Relaxed);
        self
    }

    /// The same sink, committing what was recorded without waiting and integrating the queue
    /// every `period` (50 ms unless set) instead. Readers integrate before they read, whatever
    /// this is.
    #[must_use]
    pub fn with_integration_every(self, period: Duration) -> Self {
        self.appender
            .integrate_every_ms
            .store(duration_ms(period), Ordering::Relaxed);
        self
    }

    /// Moves every queued entry — this sink's and every other node's — into the chain now;
    /// returns how many it moved. Waits while another node integrates.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if the database cannot be reached or the batch did not commit (its entries
    /// then stay queued).
    pub fn integrate(&self) -> Result<u64, AuditError> {
        self.sync()?;
        let mut client = self
            .appender
            .config
            .connect(NoTls)
            .map_err(|error| audit_error("connect", error))?;
        integrate::integrate(&mut client, Wait::ForTheLock)
            .map_err(|error| audit_error("cannot integrate the audit queue", error))
    }

    /// Claims the tables for the deployment named `owners[0]`, or checks they are its, as
    /// [`PostgresApprovalStore::claim`](crate::approvals::PostgresApprovalStore::claim) does:
    /// two deployments appending to one schema wrote one chain. An empty `owners` claims nothing.
    ///
    /// # Errors
    ///
    /// [`AuditError`] when another deployment holds the tables, or the database fails.
    pub fn claim(&self, owners: &[String]) -> Result<(), AuditError> {
        let mut client = self
            .appender
            .config
            .connect(NoTls)
            .map_err(|error| audit_error("connect", error))?;
        match crate::postgres_owner::claim(&mut client, "audit", owners) {
            Ok(()) => Ok(()),
            Err(crate::postgres_owner::ClaimError::Db(error)) => {
                Err(audit_error("cannot claim the audit tables", error))
            }
            Err(crate::postgres_owner::ClaimError::Taken { schema }) => Err(AuditError::new(
                crate::postgres_owner::ClaimError::taken_message("audit", &schema),
            )),
        }
    }

    fn start_background(&self) {
        self.background.call_once(|| {
            group_commit::run_in_background(&self.appender, "toolgate-audit-integrate");
        });
    }

    /// Checks the whole chain in the table, entry by entry, and that the tip row names its end.
    ///
    /// Each entry must be exactly what the sink wrote: its event in canonical JSON with unique
    /// keys, its sequence number its place, its `prev` the previous hash, its hash recomputed.
    /// Safe to run while nodes append (it reads one snapshot).
    ///
    /// # Errors
    ///
    /// [`PostgresAuditVerifyError`]: unreadable, broken at an entry, or a tip that disagrees.
    pub fn verify(&self) -> Result<ChainTip, PostgresAuditVerifyError> {
        let mut client = self.integrated()?;
        verify_chain(&mut client)
    }

    /// A new connection, after committing this sink's deferred events and integrating every
    /// entry queued so far (so a reader sees every event recorded through this sink and every
    /// event whose `record` returned on any node).
    fn integrated(&self) -> Result<Client, PostgresAuditVerifyError> {
        let unreadable =
            |what, error| PostgresAuditVerifyError::Unreadable(audit_error(what, error));
        if self.read_only {
            // What the writers integrated (each within 50 ms of its record); nothing moved.
            return self
                .appender
                .config
                .connect(NoTls)
                .map_err(|error| unreadable("connect", error));
        }
        self.sync().map_err(PostgresAuditVerifyError::Unreadable)?;
        let mut client = self
            .appender
            .config
            .connect(NoTls)
            .map_err(|error| unreadable("connect", error))?;
        integrate::integrate(&mut client, Wait::ForTheLock)
            .map_err(|error| unreadable("integrate the audit queue", error))?;
        Ok(client)
    }

    /// The last `limit` events in the chain, oldest first (for an approval page, say), after
    /// integrating what is queued. Read on a connection of its own; a row whose event does not
    /// parse is skipped (`verify` names it).
    ///
    /// # Errors
    ///
    /// [`AuditError`] if the table cannot be read.
    pub fn recent(&self, limit: usize) -> Result<Vec<super::AuditEvent>, AuditError> {
        let mut client = self.integrated().map_err(|error| match error {
            PostgresAuditVerifyError::Unreadable(error) => error,
            other => AuditError::caused_by("read", other),
        })?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(
                "SELECT event FROM toolgate_audit ORDER BY seq DESC LIMIT $1",
                &[&limit],
            )
            .map_err(|error| audit_error("read", error))?;
        Ok(rows
            .iter()
            .rev()
            .filter_map(|row| {
                row.try_get::<_, &str>(0)
                    .ok()
                    .and_then(|event| serde_json::from_str(event).ok())
            })
            .collect())
    }

    /// Queues one event with its salt; returns its ticket.
    fn enqueue(&self, event: &AuditEvent) -> Result<u64, AuditError> {
        if self.read_only {
            return Err(AuditError::new(
                "this PostgreSQL audit log was opened read-only: nothing is recorded",
            ));
        }
        let text = super::event_json::canonical_event(event)
            .map_err(|error| AuditError::caused_by(error.to_string(), error))?;
        self.start_background();
        let salt = event.salt().map(super::ArgumentSalt::to_hex);
        Ok(self.appender.enqueue(text, salt))
    }
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl AuditSink for PostgresAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        let ticket = self.enqueue(event)?;
        self.appender
            .group
            .wait_for(ticket, |issued| self.appender.commit(issued))
    }

    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        self.enqueue(event).map(drop)
    }

    fn sync(&self) -> Result<(), AuditError> {
        self.appender
            .group
            .wait_for_all(|issued| self.appender.commit(issued))
    }
}

impl Drop for PostgresAuditSink {
    fn drop(&mut self) {
        // What was recorded without waiting is committed before the sink goes (it may wait for an
        // absent server up to the reconnect window), and a sink that recorded integrates what is
        // queued, so a reader opened read-only after the writers stopped sees every entry; a
        // failure has no one left to tell (the next writer integrates it).
        if !self.read_only && self.background.is_completed() {
            let _ = self.integrate();
        } else {
            let _ = self.sync();
        }
    }
}

impl Background for Appender {
    fn period(&self) -> Duration {
        Duration::from_millis(self.integrate_every_ms.load(Ordering::Relaxed))
    }

    fn tick(&self) {
        if self.group.behind() {
            // A failure is reported to the next writer that waits.
            let _ = self.group.wait_for_all(|issued| self.commit(issued));
        }
        let mut slot = self
            .integrator
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = self.config.connect(NoTls).ok();
        }
        if let Some(client) = slot.as_mut()
            && let Err(error) = integrate::integrate(client, Wait::Skip)
            && crate::postgres_error::connection_lost(&error)
        {
            // Reconnect next time; the batch rolled back and stays queued.
            *slot = None;
        }
    }
}
