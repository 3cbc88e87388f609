//! The hash-chained JSON Lines file sink: one writer at a time, and a recovery for torn writes
//! that keeps the torn bytes as evidence.

use std::fs::{OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::group_commit;
use super::verify::{self, AuditVerifyError};
use super::{AuditError, AuditEvent, AuditSink};
use super::{salts, torn};

mod reserve;
mod writer;

use writer::Inner;

/// A JSON Lines audit file where each entry carries its sequence number, the previous entry's
/// hash and its own.
///
/// # Guarantees
///
/// - **Tamper evidence.** Editing, deleting or reordering an entry breaks the chain at that entry,
///   and each line has exactly one accepted spelling; [`verify_audit_file`](crate::audit::verify_audit_file)
///   reports the first bad line. A file that does not verify is not appended to. (Cutting whole
///   entries off the end leaves a valid, shorter chain: keep the last [`ChainTip`](crate::audit::ChainTip)
///   elsewhere to detect that.)
/// - **One writer.** The sink holds an exclusive lock on the file (`File::try_lock`: `flock` on
///   Unix, `LockFileEx` on Windows) from before it reads the chain's tip until it is dropped. A
///   second sink on the same file — in this process or another — fails to open with
///   [`AuditOpenError::Locked`] instead of forking the chain; open it again once the first is
///   dropped. The lock is advisory on Unix (it binds writers that use this type, not `echo >>`),
///   and on Windows it also keeps other handles from reading the file while the sink lives. A
///   child process started while a sink is open shares its lock until the child execs (Rust opens
///   files close-on-exec), so a reopen right after dropping a sink can briefly see `Locked`: retry.
///   Network filesystems may not honour the lock.
/// - **Crashes.** Entries are written as whole lines, the lines waiting at one moment with one
///   `write_all` (their salts first, to the salts file). If the process dies mid-write the file
///   ends in a partial line (before any zeros reserved ahead); [`verify_audit_file`](crate::audit::verify_audit_file) reports that
///   as [`AuditVerifyError::TornTail`], not as tampering, and [`open`](Self::open) refuses it so
///   nothing changes silently. If a write fails while the process lives, the partial lines are cut
///   off again where possible and the sink refuses every later record (later entries would chain
///   onto the lost ones): reopen it, with [`open_recovering`](Self::open_recovering) if the cut
///   failed too.
/// - **Durable before it counts.** [`record`](AuditSink::record) returns only after its entry —
///   and every entry before it — is written and `fdatasync`ed. Writers do not queue for their own
///   syncs: a record waits for the sync in flight and at most one more, whose leader writes every
///   entry waiting and syncs them together (group commit); before it syncs, the leader waits for
///   the writers the last sync released to come back, at most as long as that sync took and never
///   more than 1 ms, so that writers making one call after another share each sync.
///   [`record_deferred`](AuditSink::record_deferred) does not wait for a sync: its entry is in the
///   file when it returns — written by this thread, or by a live one writing or about to sync it —
///   and durable when the next `record` returns, at [`sync`](AuditSink::sync), when the sink is
///   dropped, or within 50 ms by a background thread. A failed `fdatasync` is final: the sink
///   refuses every later record (the kernel may have dropped the unsynced pages).
/// - **Not guaranteed:** protection from a writer that ignores the lock.
///
/// # Space reserved ahead (opt-in)
///
/// By default every batch of lines is appended. With [`with_reserve`](Self::with_reserve), a
/// background thread keeps that many bytes of zeros written and `fdatasync`ed past the last line
/// (in steps of 256 KiB), and lines are written over them. Why: an append changes the file's
/// size, so its `fdatasync` must also commit that metadata (on ext4, a journal commit); a write
/// over blocks already written only writes the data. Measured on ext4 here: 10 kB `fdatasync`ed
/// in 117–217 µs over zeros, 366–554 µs appended; audited calls from 8 threads, 1.5–1.8× as
/// many (see the guide's figures). The price: while the sink lives, and after a crash until the
/// log is opened again, the file ends in a run of NUL bytes — `jq` stumbles on them, and
/// `tail -f` and log shippers, which follow a file by its size, never see the lines written over
/// them. Read a live log with this crate's readers instead:
/// [`verify_audit_file`](crate::audit::verify_audit_file) and every reader take the NUL run as
/// reserved space (no entry holds a NUL byte), a line cut short before it as a torn tail, and
/// complete lines after a NUL byte as a broken log (see
/// [`verify_audit_file`](crate::audit::verify_audit_file)), which recovery refuses.
/// Dropping the sink, and opening the log, cut the zeros off: a log let go ends in its last
/// line. If zeros cannot be written (a full disk), the sink appends meanwhile and tries again a
/// second later; after a failed write it writes no more zeros. Under a file size limit
/// (`ulimit -f`) the zeros reach it before the lines would: reserve nothing there.
///
/// # Recovering a torn tail
///
/// [`open_recovering`](Self::open_recovering) takes the lock, verifies the chain, and if — and only
/// if — the file ends in a torn line after valid entries, copies the torn bytes to
/// `<path>.torn-<offset>` (created exclusively and `fsync`ed), cuts the log back to its last
/// complete entry, `fsync`s it and continues the chain from there.
/// [`recovered_tail`](Self::recovered_tail) says what was moved. A broken chain is never
/// "recovered": it stays an error.
///
/// # Examples
///
/// ```
/// use toolgate::audit::{AuditOpenError, AuditVerifyError, JsonlAuditSink, verify_audit_file};
///
/// let path = std::env::temp_dir().join(format!("toolgate-doc-sink-{}.jsonl", std::process::id()));
/// # let _ = std::fs::remove_file(&path);
/// let sink = JsonlAuditSink::open(&path)?;
/// // A second writer is refused while the first lives.
/// assert!(matches!(JsonlAuditSink::open(&path), Err(AuditOpenError::Locked { .. })));
/// drop(sink);
///
/// // A crash mid-write leaves a torn line; `open` refuses it, `open_recovering` moves it aside.
/// std::fs::write(&path, b"{\"seq\":0,\"pr")?;
/// assert!(matches!(
///     JsonlAuditSink::open(&path),
///     Err(AuditOpenError::Verify(AuditVerifyError::TornTail { .. }))
/// ));
/// let sink = JsonlAuditSink::open_recovering(&path)?;
/// let torn = sink.recovered_tail().expect("a torn tail was moved");
/// assert_eq!(std::fs::read(&torn.evidence)?, b"{\"seq\":0,\"pr");
/// assert_eq!(verify_audit_file(&path)?.entries, 0);
/// # std::fs::remove_file(&torn.evidence)?;
/// # drop(sink);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct JsonlAuditSink {
    recovered: Option<RecoveredTail>,
    inner: Arc<Inner>,
}

/// What [`JsonlAuditSink::open_recovering`] moved out of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveredTail {
    /// The side file holding the torn bytes, exactly as they were: `<path>.torn-<offset>`.
    pub evidence: PathBuf,
    /// Where the torn bytes started in the log; the log is now this long.
    pub offset: u64,
    /// How many bytes were moved.
    pub bytes: u64,
    /// How many complete entries the log kept.
    pub entries: u64,
}

/// An audit file could not be opened for writing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditOpenError {
    /// The file (or a side file) could not be opened, read, written or locked: the operator's
    /// storage is at fault.
    #[error("audit file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// Another [`JsonlAuditSink`] — in this process or another — holds the file's exclusive lock.
    /// Open it again after that sink is dropped; two writers would fork the chain.
    #[error(
        "audit file {} is locked by another writer (exclusive file lock held by another sink)",
        path.display()
    )]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The file does not verify. A [`AuditVerifyError::TornTail`] is a crash mid-write: recover it
    /// with [`JsonlAuditSink::open_recovering`]. Anything else is tampering and is not appended to.
    #[error(transparent)]
    Verify(#[from] AuditVerifyError),
    /// Recovery found its side file already there with bytes that are not the torn tail's: someone
    /// else wrote it. Nothing was changed; move that file away and look at both.
    #[error("evidence file {} exists with other content", path.display())]
    EvidenceExists {
        /// The side file.
        path: PathBuf,
    },
}

impl JsonlAuditSink {
    /// Opens (or creates) the file, takes its lock and continues its chain.
    ///
    /// # Errors
    ///
    /// [`AuditOpenError::Locked`] while another sink has the file; [`AuditOpenError::Verify`] if
    /// its chain does not verify — torn at the end (see [`open_recovering`](Self::open_recovering))
    /// or broken; [`AuditOpenError::Io`] if it cannot be opened or read.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, AuditOpenError> {
        Self::open_with(path.as_ref(), false)
    }

    /// Like [`open`](Self::open), but a torn tail after valid entries is moved to a side file and
    /// cut off (see the type's docs); [`recovered_tail`](Self::recovered_tail) reports it. Running
    /// it again after a crash during recovery completes that recovery.
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open), except for the torn tail; [`AuditOpenError::EvidenceExists`] if
    /// the side file is there with other bytes.
    pub fn open_recovering(path: impl AsRef<Path>) -> Result<Self, AuditOpenError> {
        Self::open_with(path.as_ref(), true)
    }

    fn open_with(path: &Path, recover: bool) -> Result<Self, AuditOpenError> {
        let io_error = |source| AuditOpenError::Io {
            path: path.to_owned(),
            source,
        };
        // Not in append mode: lines are written at the end of the last one, over the zeros
        // reserved past it (see `reserve`), and cutting a torn tail needs write access. With the
        // lock held this sink is the only writer.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_error)?;
        // The lock comes before reading the tip, so no other writer can move it afterwards.
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(AuditOpenError::Locked {
                    path: path.to_owned(),
                });
            }
            Err(TryLockError::Error(source)) => return Err(io_error(source)),
        }
        let scan = verify::scan(&file, path)?;
        let recovered = match scan.torn_bytes {
            0 => None,
            torn_bytes if recover => Some(torn::move_torn_tail(
                &mut file, path, &scan.tip, torn_bytes,
            )?),
            tail_bytes => {
                return Err(AuditVerifyError::TornTail {
                    valid_entries: scan.tip.entries,
                    tail_offset: scan.tip.bytes,
                    tail_bytes,
                }
                .into());
            }
        };
        // Zeros a writer that died had reserved past its lines (see `reserve`) are cut off: the
        // log starts from a file that ends in its last line, as after a clean close.
        if file.metadata().map_err(io_error)?.len() > scan.tip.bytes {
            file.set_len(scan.tip.bytes)
                .and_then(|()| file.sync_all())
                .map_err(io_error)?;
        }
        let sync_file = file.try_clone().map_err(io_error)?;
        let salts = salts::open_for_append(path).map_err(|source| AuditOpenError::Io {
            path: salts::salts_path(path),
            source,
        })?;
        let inner = Arc::new(Inner::new(path, file, salts, sync_file, &scan.tip));
        group_commit::run_in_background(&inner, "toolgate-audit-sync");
        Ok(Self { recovered, inner })
    }

    /// Keeps `bytes` of zeros written ahead of the log's lines (see *Space reserved ahead* in
    /// the type's docs; 16 MiB covers more than half a second at 20,000 calls/s); 0, the
    /// default, keeps none and every write appends; more than 1 GiB is taken as 1 GiB. Worth it where a write over allocated blocks
    /// is made durable without a metadata commit (ext4, XFS) and nothing follows the live file
    /// by its size; on copy-on-write filesystems (Btrfs, ZFS) a write never lands in place, and
    /// reserving only writes each block twice.
    #[must_use]
    pub fn with_reserve(self, bytes: u64) -> Self {
        self.inner.set_reserve_ahead(bytes);
        self
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The torn tail [`open_recovering`](Self::open_recovering) moved aside, if there was one.
    pub fn recovered_tail(&self) -> Option<&RecoveredTail> {
        self.recovered.as_ref()
    }
}

impl JsonlAuditSink {
    /// Deletes entry `index`'s salt from the salts file (rewritten whole, then renamed over the
    /// old one) while the sink writes on; returns whether there was one. The log is untouched:
    /// every hash, proof and checkpoint over it still verifies, and nothing can be confirmed about
    /// that entry's arguments any more.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if the salts file cannot be rewritten or reopened.
    pub fn forget_salt(&self, index: u64) -> Result<bool, AuditError> {
        self.inner.forget_salt(index)
    }
}

impl Drop for JsonlAuditSink {
    fn drop(&mut self) {
        // Entries recorded without waiting are made durable before the file is let go; a failure
        // here has no one left to tell (the entries are written, only not known durable).
        if self.inner.sync_all().is_ok() {
            let _ = self.inner.let_go();
        }
        let _ = self.inner.sync_salts();
    }
}

impl AuditSink for JsonlAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        let ticket = self.inner.write(event, true)?;
        self.inner.wait_durable(ticket)
    }

    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        self.inner.write(event, false).map(drop)
    }

    fn sync(&self) -> Result<(), AuditError> {
        self.inner.sync_all()
    }
}
