//! The JSON Lines log's salts, in a side file of their own (`<log>.salts`): one line
//! `{"index":N,"salt":"<32 hex>"}` per entry, written just before the entry. The log's hashes and
//! proofs never cover this file, so a salt can be deleted (a person's data erased) without
//! touching a proof; with it gone, nothing can be confirmed about that entry's arguments.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::commitment::{self, ArgumentSalt, Disclosure};
use super::{AuditOpenError, AuditVerifyError};

/// The salts file beside the log `log` names: beside the file itself, whatever name (a symbolic
/// link, a relative path) reaches it, so a writer, `disclose` and `forget` agree on one file. A
/// log not made yet is named by its directory's real path.
pub(super) fn salts_path(log: &Path) -> PathBuf {
    let real =
        std::fs::canonicalize(log).unwrap_or_else(|_| match (log.parent(), log.file_name()) {
            (Some(parent), Some(file)) => {
                let parent = if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                };
                std::fs::canonicalize(parent)
                    .map(|parent| parent.join(file))
                    .unwrap_or_else(|_| log.to_owned())
            }
            _ => log.to_owned(),
        });
    let mut name = OsString::from(real.as_os_str());
    name.push(".salts");
    PathBuf::from(name)
}

/// Refuses a log reached by one of several hard links: its salts file lies beside one of the
/// names, and which one the writer used cannot be told from here.
fn one_name(log: &File, path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let links = log.metadata()?.nlink();
        if links > 1 {
            return Err(io::Error::other(format!(
                "{} has {links} hard links: its salts file lies beside the name its writer used, which cannot be told from here; give that name, or remove the other links",
                path.display()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = (log, path);
    Ok(())
}

/// Opens the salts file for appending (creating it). A last line a crash left without its
/// newline is ended first, so the next salt does not run into it.
pub(super) fn open_for_append(log: &Path) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(salts_path(log))?;
    let len = file.metadata()?.len();
    if len > 0 {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut last = [0_u8];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(file)
}

/// Appends the line recording `salt` for entry `index` to `out`.
pub(super) fn push_salt_line(out: &mut String, index: u64, salt: &ArgumentSalt) {
    out.push_str("{\"index\":");
    crate::canonical::push_unsigned(out, index);
    out.push_str(",\"salt\":\"");
    out.push_str(&salt.to_hex());
    out.push_str("\"}\n");
}

/// Every salt in the file, by entry index; the last line for an index wins (a salt written for
/// an entry whose own write then failed is followed by the next entry's at the same index). Lines
/// that do not parse — a torn last line after a crash — are skipped.
fn read_salts(log: &Path) -> io::Result<HashMap<u64, ArgumentSalt>> {
    let file = match File::open(salts_path(log)) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(error) => return Err(error),
    };
    let mut salts = HashMap::new();
    for line in BufReader::new(file).lines() {
        let line = line?;
        let Ok(record) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let index = record.get("index").and_then(Value::as_u64);
        let salt = record
            .get("salt")
            .and_then(Value::as_str)
            .and_then(|salt| salt.parse::<ArgumentSalt>().ok());
        if let (Some(index), Some(salt)) = (index, salt) {
            salts.insert(index, salt);
        }
    }
    Ok(salts)
}

/// Why arguments could not be shown against an entry of a JSON Lines log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditDiscloseError {
    /// The log does not verify; nothing is disclosed against a log that may have been altered.
    #[error(transparent)]
    Verify(#[from] AuditVerifyError),
    /// The log has no entry at this index.
    #[error("the audit log has {entries} entries; there is no entry {index}")]
    NoEntry {
        /// The index asked for.
        index: u64,
        /// How many entries the log has.
        entries: u64,
    },
    /// The salts file could not be read or rewritten.
    #[error("audit salts file {}: {source}", path.display())]
    Io {
        /// The salts file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A sink holds the log: forget the salt through it
    /// ([`JsonlAuditSink::forget_salt`](super::JsonlAuditSink::forget_salt)), or once it is closed.
    #[error(transparent)]
    Open(#[from] AuditOpenError),
}

/// Shows `arguments` against entry `index` of the JSON Lines log at `path`: whether the entry's
/// salted commitment opens to them with its salt, or the salt was erased. The log is verified
/// first (a broken or torn log is an error).
///
/// # Errors
///
/// [`AuditDiscloseError`]: the log does not verify, has no such entry, or the salts file cannot
/// be read.
pub fn disclose_audit_arguments(
    path: impl AsRef<Path>,
    index: u64,
    arguments: &Value,
) -> Result<Disclosure, AuditDiscloseError> {
    let path = path.as_ref();
    let event = entry_event(path, index)?;
    let salts = read_salts(path).map_err(|source| AuditDiscloseError::Io {
        path: salts_path(path),
        source,
    })?;
    Ok(commitment::disclose(
        &event,
        salts.get(&index).copied(),
        arguments,
    ))
}

/// The event of entry `index`, from a log that verifies.
fn entry_event(path: &Path, index: u64) -> Result<Value, AuditDiscloseError> {
    let tip = super::verify_audit_file(path)?;
    if index >= tip.entries {
        return Err(AuditDiscloseError::NoEntry {
            index,
            entries: tip.entries,
        });
    }
    let unreadable = |source| AuditVerifyError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(unreadable)?;
    let mut lines = BufReader::new(file).lines();
    let line = lines
        .nth(usize::try_from(index).unwrap_or(usize::MAX))
        .transpose()
        .map_err(unreadable)?
        .unwrap_or_default();
    let entry: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    Ok(entry.get("event").cloned().unwrap_or(Value::Null))
}

/// Deletes entry `index`'s salt from the salts file of the log at `path`, which no sink may hold
/// open (its lock is taken for the rewrite). Returns whether there was one. The log is untouched:
/// every hash, proof and checkpoint over it still verifies.
///
/// # Errors
///
/// [`AuditDiscloseError::Open`] with [`AuditOpenError::Locked`] while a sink holds the log;
/// [`AuditDiscloseError::Io`] if the salts file cannot be rewritten.
pub fn forget_audit_salt(path: impl AsRef<Path>, index: u64) -> Result<bool, AuditDiscloseError> {
    let path = path.as_ref();
    let log = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|source| AuditOpenError::Io {
            path: path.to_owned(),
            source,
        })?;
    match log.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(AuditOpenError::Locked {
                path: path.to_owned(),
            }
            .into());
        }
        Err(TryLockError::Error(source)) => {
            return Err(AuditOpenError::Io {
                path: path.to_owned(),
                source,
            }
            .into());
        }
    }
    let salts = salts_path(path);
    let io = |source| AuditDiscloseError::Io {
        path: salts.clone(),
        source,
    };
    one_name(&log, path).map_err(io)?;
    if !salts.exists() {
        // "No salt to erase" would read as done: without the file nothing was erased anywhere.
        return Err(io(io::Error::new(
            io::ErrorKind::NotFound,
            "no salts file beside the log: nothing was erased (is this the log its writer wrote?)",
        )));
    }
    rewrite_without(path, index).map_err(io)
}

/// Rewrites the salts file without entry `index`'s lines: to a new file, synced, renamed over the
/// old one, the directory synced — a crash leaves the old file or the new one, whole. The caller
/// holds the log's lock.
pub(super) fn rewrite_without(log: &Path, index: u64) -> io::Result<bool> {
    let salts = salts_path(log);
    let file = match File::open(&salts) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    };
    let mut kept = Vec::new();
    let mut found = false;
    for line in BufReader::new(file).lines() {
        let line = line?;
        let index_of = serde_json::from_str::<Value>(&line)
            .ok()
            .and_then(|record| record.get("index").and_then(Value::as_u64));
        if index_of == Some(index) {
            found = true;
        } else {
            kept.extend_from_slice(line.as_bytes());
            kept.push(b'\n');
        }
    }
    let mut name = OsString::from(salts.as_os_str());
    name.push(".rewrite");
    let rewrite = PathBuf::from(name);
    let mut out = File::create(&rewrite)?;
    out.write_all(&kept)?;
    out.sync_all()?;
    std::fs::rename(&rewrite, &salts)?;
    super::torn::sync_parent(&salts)?;
    Ok(found)
}
