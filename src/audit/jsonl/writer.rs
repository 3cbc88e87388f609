//! The write end of a JSON Lines audit file: entries join the chain under a short lock, one
//! thread at a time writes every line waiting, and one `fdatasync` covers every line written.
//!
//! Why combine writes: a `write` to the page cache costs about as much as building the entry, and
//! when many threads record at once (every waiter of a finished sync wakes together) each paid for
//! its own two — the log line and its salt. Now the thread that finds no write running writes
//! everything waiting, and keeps writing until nothing is; the others add their lines and go on (a
//! deferred record) or wait until their line is in the file (a record that will wait for its
//! sync). A line is in the file before any sync counts it durable, and within one write of its
//! record returning — the writing thread is alive and working on it. The writing thread's loop
//! ends: writing a line to the page cache costs far less than making one (serializing, hashing),
//! so each batch is smaller than the last while writers keep coming.

use std::fs::File;
use std::io::Write as _;
use std::mem;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::super::group_commit::{self, GroupCommit};
use super::super::verify::{self, line_hash};
use super::super::{AuditError, AuditEvent, salts};
use super::reserve::{self, Reserve};

/// The longest an entry recorded with [`AuditSink::record_deferred`](super::AuditSink::record_deferred)
/// waits for its `fdatasync` when no waiting record comes to carry it.
const DEFERRED_WITHIN: Duration = Duration::from_millis(50);

/// The most zeros written per tick, in [`reserve`] steps of 256 KiB: 4 MiB every 50 ms, 80 MB/s,
/// several times what the log writes at 20,000 calls a second.
const FILL_STEPS_PER_TICK: usize = 16;

/// What the sink and its background syncer share.
#[derive(Debug)]
pub(super) struct Inner {
    pub(super) path: PathBuf,
    /// The chain's tip and the lines not yet written. Held briefly, never across a write.
    state: Mutex<Chain>,
    /// Signalled whenever lines reach the files, or a write fails.
    written: Condvar,
    /// The files. Taken by the one thread writing (`Chain::writing`) and by `forget_salt`.
    files: Mutex<Files>,
    /// Tickets in file order; a commit is one `fdatasync` of the log.
    group: GroupCommit,
    /// The same open log, synced without any lock so writers go on meanwhile.
    sync_file: File,
    /// An `fdatasync` failed: what it should have made durable may be gone from the page cache,
    /// so nothing more is written or reported durable.
    sync_failed: AtomicBool,
    /// Held around each `fdatasync` of the log and the flag its failure sets. The kernel reports
    /// a writeback error to one sync per open file only: a commit's sync that ran beside the
    /// background thread's must not return success after the other one was told of the error.
    syncing: Mutex<()>,
}

#[derive(Debug)]
struct Files {
    // Invariant: holds the log's exclusive lock for as long as the sink lives. Written only at
    // stated offsets: lines at `reserve.end()`, zeros past the file's end.
    log: File,
    /// The salts side file (`<path>.salts`); a batch's salts are written before its lines.
    salts: File,
    /// Where the lines end, and the zeros kept ahead of them.
    reserve: Reserve,
}

/// The chain as entries join it.
#[derive(Debug)]
struct Chain {
    /// The next entry's sequence number and the last entry's hash, counting pending lines.
    seq: u64,
    prev: String,
    /// Lines that joined the chain and are not written yet, in order, and their salts.
    pending: String,
    pending_salts: String,
    /// The ticket of the last entry that joined the chain.
    last_ticket: u64,
    /// Every ticket through this one is in the file.
    written: u64,
    /// A thread is writing: lines added meanwhile are written by it before it stops.
    writing: bool,
    /// A write failed: the lines it carried are lost and later ones would chain onto them, so
    /// nothing more is accepted. Why, for every later writer.
    broken: Option<String>,
}

impl Inner {
    /// A writer for the log `file` (locked, ending in its last line at `tip.bytes`, entry
    /// `tip.entries - 1`) and its salts file.
    pub(super) fn new(
        path: &Path,
        log: File,
        salts: File,
        sync_file: File,
        tip: &verify::ChainTip,
    ) -> Self {
        Self {
            path: path.to_owned(),
            state: Mutex::new(Chain {
                seq: tip.entries,
                prev: tip.last_hash.clone(),
                pending: String::new(),
                pending_salts: String::new(),
                last_ticket: 0,
                written: 0,
                writing: false,
                broken: None,
            }),
            written: Condvar::new(),
            files: Mutex::new(Files {
                log,
                salts,
                reserve: Reserve::new(tip.bytes),
            }),
            group: GroupCommit::gathering(),
            sync_file,
            sync_failed: AtomicBool::new(false),
            syncing: Mutex::new(()),
        }
    }

    fn chain(&self) -> MutexGuard<'_, Chain> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn files(&self) -> MutexGuard<'_, Files> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refused(&self, why: &str) -> AuditError {
        AuditError::new(format!(
            "{}: {why}; nothing more is written: reopen the log",
            self.path.display()
        ))
    }

    /// Adds one entry to the chain and returns its ticket. With `durable`, the entry is left for
    /// the commit its writer waits for, which writes every waiting line before it syncs. Without,
    /// it is written before this returns, unless a live thread will write it first: one writing
    /// now, or a leader gathering writers for its commit.
    pub(super) fn write(&self, event: &AuditEvent, durable: bool) -> Result<u64, AuditError> {
        let salt = event.salt().copied();
        let event = super::super::event_json::canonical_event(event)
            .map_err(|error| AuditError::caused_by(error.to_string(), error))?;
        let mut chain = self.chain();
        if let Some(why) = &chain.broken {
            return Err(self.refused(why));
        }
        if self.sync_failed.load(Ordering::Acquire) {
            return Err(self.refused("an earlier fdatasync failed"));
        }
        let chain_ref = &mut *chain;
        if let Some(salt) = &salt {
            // Before the entry's line, in the same batch: a line whose salt is missing could
            // never be disclosed.
            salts::push_salt_line(&mut chain_ref.pending_salts, chain_ref.seq, salt);
        }
        let hash = line_hash(chain_ref.seq, &chain_ref.prev, &event);
        verify::push_entry_line(
            &mut chain_ref.pending,
            chain_ref.seq,
            &chain_ref.prev,
            &event,
            &hash,
        );
        chain_ref.seq += 1;
        chain_ref.prev = hash;
        // Issued under the chain's lock: tickets follow the file's order.
        let ticket = self.group.issue();
        chain.last_ticket = ticket;
        if durable || chain.writing || self.group.is_gathering() {
            return Ok(ticket);
        }
        self.write_through(chain, ticket)?;
        Ok(ticket)
    }

    /// Returns once every ticket through `ticket` is in the file: writes the waiting lines if no
    /// other thread is writing them, and goes on while more arrive; otherwise waits for the one
    /// that is.
    fn write_through<'a>(
        &'a self,
        mut chain: MutexGuard<'a, Chain>,
        ticket: u64,
    ) -> Result<(), AuditError> {
        loop {
            if !chain.writing && !chain.pending.is_empty() && chain.broken.is_none() {
                chain = self.write_batch(chain)?;
                continue;
            }
            if chain.written >= ticket {
                return Ok(());
            }
            if let Some(why) = &chain.broken {
                return Err(self.refused(why));
            }
            chain = self
                .written
                .wait(chain)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Writes every waiting line (salts first), without holding the chain's lock meanwhile.
    fn write_batch<'a>(
        &'a self,
        mut chain: MutexGuard<'a, Chain>,
    ) -> Result<MutexGuard<'a, Chain>, AuditError> {
        chain.writing = true;
        let lines = mem::take(&mut chain.pending);
        let salts = mem::take(&mut chain.pending_salts);
        let through = chain.last_ticket;
        drop(chain);
        let result = self.write_files(&lines, &salts);
        let mut chain = self.chain();
        chain.writing = false;
        self.written.notify_all();
        match result {
            Ok(()) => {
                chain.written = through;
                // Keep the buffers' capacity for the next batch.
                if chain.pending.is_empty() {
                    chain.pending = recycled(lines);
                    chain.pending_salts = recycled(salts);
                }
                Ok(chain)
            }
            Err(error) => {
                chain.broken = Some(format!("an earlier write failed: {}", error.message));
                Err(error)
            }
        }
    }

    fn write_files(&self, lines: &str, salts: &str) -> Result<(), AuditError> {
        let mut files = self.files();
        let start = files.reserve.end();
        if let Err(error) = files.salts.write_all(salts.as_bytes()) {
            // End a partly written line, so a later salt does not run into it.
            let _ = files.salts.write_all(b"\n");
            return Err(AuditError::caused_by(
                format!("{}: {error}", salts::salts_path(&self.path).display()),
                error,
            ));
        }
        if let Err(error) = reserve::write_all_at(&files.log, lines.as_bytes(), start) {
            // Cut the partial batch off, so the file ends in whole entries (a reopen continues
            // from there; if this fails too, the reopen reports the torn tail).
            let _ = files.log.set_len(start);
            files.reserve.cut_to(start);
            return Err(AuditError::caused_by(
                format!("{}: {error}", self.path.display()),
                error,
            ));
        }
        files.reserve.wrote_through(start + lines.len() as u64);
        Ok(())
    }

    /// Fills zeros ahead of the lines (a step at a time, so writers wait for one step at most)
    /// and syncs them, so that later commits write over allocated, synced blocks.
    /// At most [`FILL_STEPS_PER_TICK`] steps a tick: a commit meanwhile flushes the zeros not
    /// yet synced with its lines, so filling a little at a time keeps commits short.
    fn reserve_ahead(&self) {
        if self.sync_failed.load(Ordering::Acquire) {
            return;
        }
        let mut filled = false;
        for _ in 0..FILL_STEPS_PER_TICK {
            let mut guard = self.files();
            let files = &mut *guard;
            if !files.reserve.fill_step(&files.log) {
                break;
            }
            filled = true;
        }
        if filled {
            // A failure is the next writer's to hear, as a commit's is.
            let _ = self.sync_log();
        }
    }

    /// One `fdatasync` of the log; a failure is final (see `syncing`).
    fn sync_log(&self) -> std::io::Result<()> {
        let _one_at_a_time = self.syncing.lock().unwrap_or_else(PoisonError::into_inner);
        if self.sync_failed.load(Ordering::Acquire) {
            return Err(std::io::Error::other("an earlier fdatasync failed"));
        }
        let synced = self.sync_file.sync_data();
        if synced.is_err() {
            // After a failed fdatasync the kernel may have dropped the dirty pages: a later sync
            // could succeed without them. Refuse everything from here on.
            self.sync_failed.store(true, Ordering::Release);
        }
        synced
    }

    /// Keeps `bytes` of zeros ahead of the lines from the next fill on.
    pub(super) fn set_reserve_ahead(&self, bytes: u64) {
        self.files().reserve.set_ahead(bytes);
    }

    /// Cuts the reserved zeros off, once every entry is durable: a log let go ends in its last
    /// line.
    pub(super) fn let_go(&self) -> std::io::Result<()> {
        let mut guard = self.files();
        let files = &mut *guard;
        if files.reserve.trim(&files.log)? {
            files.log.sync_all()?;
        }
        Ok(())
    }

    /// One group commit: every line that joined the chain before it started is written, then
    /// made durable with one `fdatasync`. Returns through which ticket.
    fn commit(&self) -> Result<u64, AuditError> {
        if self.sync_failed.load(Ordering::Acquire) {
            return Err(self.refused("an earlier fdatasync failed"));
        }
        let chain = self.chain();
        let last = chain.last_ticket;
        self.write_through(chain, last)?;
        match self.sync_log() {
            Ok(()) => Ok(last),
            Err(error) => Err(AuditError::caused_by(
                format!("{}: fdatasync: {error}", self.path.display()),
                error,
            )),
        }
    }

    /// Returns once entry `ticket` and every one before it is durable.
    pub(super) fn wait_durable(&self, ticket: u64) -> Result<(), AuditError> {
        self.group.wait_for(ticket, |_| self.commit())
    }

    /// Writes and makes durable every entry that joined the chain so far.
    pub(super) fn sync_all(&self) -> Result<(), AuditError> {
        let last = self.chain().last_ticket;
        self.wait_durable(last)
    }

    /// Syncs the salts file (without holding any lock meanwhile).
    pub(super) fn sync_salts(&self) -> std::io::Result<()> {
        let salts = self.files().salts.try_clone()?;
        salts.sync_data()
    }

    /// Deletes entry `index`'s salt: every salt reaches the file, then the file is rewritten
    /// without it and reopened, with no write running meanwhile.
    pub(super) fn forget_salt(&self, index: u64) -> Result<bool, AuditError> {
        let salts_path = salts::salts_path(&self.path);
        let failed = |error: std::io::Error| {
            AuditError::caused_by(format!("{}: {error}", salts_path.display()), error)
        };
        let mut chain = self.chain();
        // Until nothing waits to be written and no thread writes: then holding the chain's lock
        // keeps every writer out for the rewrite.
        while chain.writing || !chain.pending.is_empty() {
            let last = chain.last_ticket;
            self.write_through(chain, last)?;
            chain = self.chain();
        }
        let mut files = self.files();
        files.salts.sync_data().map_err(failed)?;
        let rewritten = salts::rewrite_without(&self.path, index);
        // Reopened whatever the rewrite did: once renamed, the old handle names a deleted file.
        match salts::open_for_append(&self.path) {
            Ok(salts) => files.salts = salts,
            Err(error) => {
                chain.broken = Some("the salts file could not be reopened".to_owned());
                return Err(failed(error));
            }
        }
        rewritten.map_err(failed)
    }
}

fn recycled(mut buffer: String) -> String {
    buffer.clear();
    buffer
}

impl group_commit::Background for Inner {
    fn period(&self) -> Duration {
        DEFERRED_WITHIN
    }

    fn tick(&self) {
        if self.group.behind() {
            // A failure is reported to the next writer that waits (and every later one).
            let _ = self.sync_all();
        }
        // Salts are synced here, not with each entry: a power cut can lose the salts of the last
        // entries (which then cannot be disclosed), never an entry or a proof.
        let _ = self.sync_salts();
        // After the entries: filling zeros must not delay the 50 ms bound of deferred ones.
        self.reserve_ahead();
    }
}

#[cfg(test)]
mod tests;
