//! One hash-chained audit log in PostgreSQL for every node (feature `postgres`), and its check.

use std::fmt;
use std::io::{self, Read};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator as _;
use postgres::{Client, Config, NoTls};

use super::verify::{self, AuditEntryProblem, AuditVerifyError, ChainTip, GENESIS, line_hash};
use super::{AuditError, AuditEvent, AuditSink};
use crate::postgres_error::connection_lost;

mod tree;

/// How long an append whose connection was lost before its commit keeps reconnecting (as the
/// approval store does), and the longest pause between two tries.
const RECONNECT_FOR: Duration = Duration::from_secs(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(500);

/// The layout this version writes and reads.
const SCHEMA_VERSION: i64 = 1;

/// Version 1: the entries, and one row naming the chain's tip. Appending locks the tip row, so
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

/// An audit log in a PostgreSQL table that every node appends to: one hash chain for all of them.
///
/// # Guarantees
///
/// - **One chain, however many writers.** An append reads the chain's tip with `SELECT … FOR
///   UPDATE`, so appends from every thread, process and node are serialized by the database:
///   entry *n* names entry *n − 1*'s hash, with no fork and no gap.
/// - **An event is in the chain, or its step did not happen.** `record` returns only after its
///   transaction committed (the server's `synchronous_commit` decides how durable that is). If
///   the commit fails or goes unanswered, `record` fails and the controller does not take the
///   step; the event may then be in the chain for a step that did not happen, never the reverse.
///   A connection lost *before* the commit is replaced and the append tried again (for up to
///   10 s while the server is away; [`with_reconnect_window`](Self::with_reconnect_window)).
/// - **Tamper evidence**, as for [`JsonlAuditSink`](crate::audit::JsonlAuditSink): each entry's hash
///   covers its sequence number, the previous hash and the event in canonical JSON, computed by
///   the same function; [`verify`](Self::verify) reports the first bad entry, and a tip row that
///   disagrees with the entries (entries cut off the end, or the tip edited).
/// - **A versioned schema**, created on first use in the connection's current schema (tables
///   `toolgate_audit` and `toolgate_audit_tip`, version in `toolgate_meta`); a newer one is refused.
///
/// Not guaranteed: protection from someone who can rewrite both the table and its tip with
/// recomputed hashes (as with a file, keep a [`ChainTip`] elsewhere to detect that).
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
    config: Config,
    // One connection per sink: appends are serialized by the tip lock anyway. `None` after the
    // connection was lost, until the next append reconnects.
    client: Mutex<Option<Client>>,
    // How long an append waits for an absent server (`RECONNECT_FOR` unless set).
    reconnect_for: Duration,
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
}

fn audit_error(what: &str, error: postgres::Error) -> AuditError {
    AuditError::caused_by(format!("{what}: {error}"), error)
}

/// Why one append attempt failed.
enum AppendError {
    BeforeCommit(postgres::Error),
    AtCommit(postgres::Error),
}

impl From<postgres::Error> for AppendError {
    fn from(error: postgres::Error) -> Self {
        AppendError::BeforeCommit(error)
    }
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
    pub fn connect_with(mut config: Config) -> Result<Self, AuditError> {
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("toolgate-audit");
        }
        let mut client = config
            .connect(NoTls)
            .map_err(|error| audit_error("cannot connect to the audit database", error))?;
        create_or_check(&mut client)?;
        Ok(Self {
            config,
            client: Mutex::new(Some(client)),
            reconnect_for: RECONNECT_FOR,
        })
    }

    /// The same sink, waiting at most `window` (10 s unless set) for an absent server when an
    /// append lost its connection before its commit; past it the append fails (and the step it
    /// records does not happen). `Duration::ZERO` fails such an append at once.
    #[must_use]
    pub fn with_reconnect_window(mut self, window: Duration) -> Self {
        self.reconnect_for = window;
        self
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
        let mut client = self
            .config
            .connect(NoTls)
            .map_err(|error| PostgresAuditVerifyError::Unreadable(audit_error("connect", error)))?;
        verify_chain(&mut client)
    }

    /// The last `limit` events in the chain, oldest first (for an approval page, say). Read on a
    /// connection of its own; a row whose event does not parse is skipped (`verify` names it).
    ///
    /// # Errors
    ///
    /// [`AuditError`] if the table cannot be read.
    pub fn recent(&self, limit: usize) -> Result<Vec<super::AuditEvent>, AuditError> {
        let mut client = self
            .config
            .connect(NoTls)
            .map_err(|error| audit_error("connect", error))?;
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
            .filter_map(|row| serde_json::from_str(row.get::<_, &str>(0)).ok())
            .collect())
    }

    fn append(client: &mut Client, event: &str) -> Result<(), AppendError> {
        let mut transaction = client.transaction()?;
        let tip = transaction.query_one(
            "SELECT entries, last_hash FROM toolgate_audit_tip FOR UPDATE",
            &[],
        )?;
        let (seq, prev): (i64, String) = (tip.get(0), tip.get(1));
        let hash = line_hash(u64::try_from(seq).unwrap_or(0), &prev, event);
        transaction.execute(
            "INSERT INTO toolgate_audit (seq, prev, event, hash) VALUES ($1, $2, $3, $4)",
            &[&seq, &prev, &event, &hash],
        )?;
        transaction.execute(
            "UPDATE toolgate_audit_tip SET entries = $1, last_hash = $2",
            &[&(seq + 1), &hash],
        )?;
        transaction.commit().map_err(AppendError::AtCommit)
    }
}

impl AuditSink for PostgresAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        let event = serde_json::to_value(event)
            .map(|event| crate::canonical::canonical_json(&event))
            .map_err(|error| AuditError::caused_by(error.to_string(), error))?;
        let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        let deadline = Instant::now() + self.reconnect_for;
        let mut pause = Duration::ZERO;
        loop {
            let client = match slot.as_mut() {
                Some(client) => client,
                None => match self.config.connect(NoTls) {
                    Ok(client) => slot.insert(client),
                    // The server is away (down, restarting): wait for it, a while.
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
            match Self::append(client, &event) {
                Ok(()) => return Ok(()),
                Err(AppendError::BeforeCommit(error)) => {
                    let lost = connection_lost(&error);
                    if lost {
                        *slot = None;
                    }
                    // Nothing committed: append again on a new connection, at once the first
                    // time, then with pauses.
                    if lost && Instant::now() + pause < deadline {
                        std::thread::sleep(pause);
                        pause = (pause * 2).clamp(Duration::from_millis(50), LONGEST_PAUSE);
                        continue;
                    }
                    return Err(audit_error("cannot append to the audit table", error));
                }
                Err(AppendError::AtCommit(error)) => {
                    if connection_lost(&error) {
                        *slot = None;
                    }
                    return Err(audit_error(
                        "the audit append's commit was not confirmed",
                        error,
                    ));
                }
            }
        }
    }
}

fn create_or_check(client: &mut Client) -> Result<(), AuditError> {
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
            transaction
                .execute(
                    "INSERT INTO toolgate_meta (key, value) VALUES ('audit_schema_version', $1)",
                    &[&SCHEMA_VERSION],
                )
                .map_err(at)?;
            transaction.batch_execute(CREATE_V1).map_err(at)?;
            transaction
                .execute(
                    "INSERT INTO toolgate_audit_tip (entries, last_hash) VALUES (0, $1)",
                    &[&GENESIS],
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

/// Reads the table in order as the JSON Lines a file sink would hold and checks it with the file
/// format's own check, so both sinks are verified by one definition.
fn verify_chain(client: &mut Client) -> Result<ChainTip, PostgresAuditVerifyError> {
    verify_chain_into(client, None)
}

/// [`verify_chain`], each entry also made a leaf of `tree` when one is given.
fn verify_chain_into(
    client: &mut Client,
    tree: Option<&mut super::merkle::MerkleTree>,
) -> Result<ChainTip, PostgresAuditVerifyError> {
    let unreadable = |error| PostgresAuditVerifyError::Unreadable(audit_error("read", error));
    let mut transaction = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(unreadable)?;
    let tip = transaction
        .query_one("SELECT entries, last_hash FROM toolgate_audit_tip", &[])
        .map_err(unreadable)?;
    let (tip_entries, tip_hash): (i64, String) = (tip.get(0), tip.get(1));
    let rows = transaction
        .query_raw(
            "SELECT seq, prev, event, hash FROM toolgate_audit ORDER BY seq",
            std::iter::empty::<i64>(),
        )
        .map_err(unreadable)?;
    let mut lines = Lines {
        rows,
        buffer: Vec::new(),
        at: 0,
        failed: None,
        tree,
    };
    let scanned = verify::scan(&mut lines, Path::new("toolgate_audit"));
    if let Some(error) = lines.failed {
        return Err(unreadable(error));
    }
    let chain = match scanned {
        Ok(scan) => scan.tip,
        Err(AuditVerifyError::Broken { line, problem }) => {
            return Err(PostgresAuditVerifyError::Broken {
                seq: line - 1,
                problem,
            });
        }
        // Every line this reader yields ends in a newline, and it does no I/O of its own; an
        // event holding a raw newline reads as a broken entry above.
        Err(other) => {
            return Err(PostgresAuditVerifyError::Unreadable(AuditError::caused_by(
                "the audit table does not read as a chain",
                other,
            )));
        }
    };
    let tip_entries = u64::try_from(tip_entries).unwrap_or(u64::MAX);
    if chain.entries != tip_entries || chain.last_hash != tip_hash {
        return Err(PostgresAuditVerifyError::TipMismatch {
            entries: chain.entries,
            tip_entries,
        });
    }
    Ok(chain)
}

/// The rows of the audit table spelled as JSON Lines entries, read one row at a time.
struct Lines<'a> {
    rows: postgres::RowIter<'a>,
    buffer: Vec<u8>,
    at: usize,
    /// The database error that ended the rows early, if one did.
    failed: Option<postgres::Error>,
    /// Where each entry is made a leaf, when the tree is wanted.
    tree: Option<&'a mut super::merkle::MerkleTree>,
}

impl Read for Lines<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buffer.len() {
            self.buffer.clear();
            self.at = 0;
            match self.rows.next() {
                Ok(Some(row)) => {
                    let (seq, prev, event, hash): (i64, &str, &str, &str) =
                        (row.get(0), row.get(1), row.get(2), row.get(3));
                    let seq = u64::try_from(seq).unwrap_or(u64::MAX);
                    self.buffer = verify::entry_line(seq, prev, event, hash).into_bytes();
                    if let Some(tree) = self.tree.as_deref_mut() {
                        let entry = self.buffer.strip_suffix(b"\n").unwrap_or(&self.buffer);
                        tree.push(super::merkle::leaf_hash(entry));
                    }
                }
                Ok(None) => return Ok(0),
                Err(error) => {
                    self.failed = Some(error);
                    return Ok(0);
                }
            }
        }
        let n = out.len().min(self.buffer.len() - self.at);
        out[..n].copy_from_slice(&self.buffer[self.at..n + self.at]);
        self.at += n;
        Ok(n)
    }
}
