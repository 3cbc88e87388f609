//! What the page shows of the audit log: recent events and whether the chain verifies.

use std::io::Read as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::audit::verify::{LineEnd, read_line};
use crate::audit::{AuditEvent, AuditVerifyError, verify_audit_file};

/// Recent audit events, newest last, and the state of their hash chain.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AuditSnapshot {
    /// The most recent events, oldest first.
    pub events: Vec<AuditEvent>,
    /// Whether the whole log verifies.
    pub verified: bool,
    /// What verifying found: how many entries and the last hash, or the first problem.
    pub chain: String,
}

impl AuditSnapshot {
    /// A snapshot of `events` whose chain is described by `chain` (`verified` when it holds).
    pub fn new(events: Vec<AuditEvent>, verified: bool, chain: impl Into<String>) -> Self {
        Self {
            events,
            verified,
            chain: chain.into(),
        }
    }
}

/// A source of [`AuditSnapshot`]s for the page; it is read on a blocking thread.
pub trait AuditView: Send + Sync + 'static {
    /// The last `limit` events and the chain's state.
    ///
    /// # Errors
    ///
    /// Why the log could not be read.
    fn snapshot(&self, limit: usize) -> Result<AuditSnapshot, String>;
}

/// The audit view of a JSON Lines log ([`JsonlAuditSink`](crate::audit::JsonlAuditSink)): the
/// whole file is verified on each read (`verify_audit_file`) and the last events are shown.
#[derive(Debug, Clone)]
pub struct JsonlAuditView {
    path: PathBuf,
}

impl JsonlAuditView {
    /// The view of the log at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

/// One line of the log, as far as the view reads it.
#[derive(serde::Deserialize)]
struct Entry {
    event: AuditEvent,
}

impl AuditView for JsonlAuditView {
    fn snapshot(&self, limit: usize) -> Result<AuditSnapshot, String> {
        // How far to read: the entries, not the zeros a sink may keep reserved past them (up to
        // a gigabyte) nor a torn tail; in a broken log, up to its first NUL byte.
        let (verified, chain, entries_end) = match verify_audit_file(&self.path) {
            Ok(tip) => (
                true,
                format!(
                    "{} entries verify; last hash {}",
                    tip.entries, tip.last_hash
                ),
                tip.bytes,
            ),
            Err(problem) => {
                let end = match &problem {
                    AuditVerifyError::TornTail { tail_offset, .. } => *tail_offset,
                    _ => u64::MAX,
                };
                (false, problem.to_string(), end)
            }
        };
        let file = std::fs::File::open(&self.path)
            .map_err(|error| format!("cannot read {}: {error}", self.path.display()))?;
        let mut events = std::collections::VecDeque::with_capacity(limit);
        if limit == 0 {
            return Ok(AuditSnapshot::new(Vec::new(), verified, chain));
        }
        let mut reader = std::io::BufReader::new(file.take(entries_end));
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut reader, &mut line) {
                Ok(LineEnd::Newline) => {}
                Ok(LineEnd::File) if !line.is_empty() => {}
                Ok(LineEnd::File | LineEnd::Nul) | Err(_) => break,
            }
            let Ok(entry) = serde_json::from_slice::<Entry>(&line) else {
                continue;
            };
            if events.len() == limit {
                events.pop_front();
            }
            events.push_back(entry.event);
        }
        Ok(AuditSnapshot::new(events.into(), verified, chain))
    }
}

/// The audit view of a PostgreSQL chain: verified whole on each read, its last events shown.
#[cfg(feature = "postgres")]
impl AuditView for crate::audit::PostgresAuditSink {
    fn snapshot(&self, limit: usize) -> Result<AuditSnapshot, String> {
        let (verified, chain) = match self.verify() {
            Ok(tip) => (
                true,
                format!(
                    "{} entries verify; last hash {}",
                    tip.entries, tip.last_hash
                ),
            ),
            Err(problem) => (false, problem.to_string()),
        };
        let events = self.recent(limit).map_err(|error| error.to_string())?;
        Ok(AuditSnapshot::new(events, verified, chain))
    }
}
