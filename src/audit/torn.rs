//! Recovering a torn tail: the bytes a crash left after the last complete entry are copied to a
//! side file, durably, and only then cut off the log.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use super::{AuditOpenError, RecoveredTail};

/// Copies the `torn_bytes` after the last complete entry to `<path>.torn-<offset>`, then cuts
/// the log back to that entry (and with it any reserved space after the torn bytes). The copy is
/// durable before the cut, so a crash in between loses nothing: the next recovery finds the same
/// tail and an identical (or partially written) side file, and finishes.
pub(super) fn move_torn_tail(
    file: &mut File,
    path: &Path,
    tip: &crate::audit::ChainTip,
    torn_bytes: u64,
) -> Result<RecoveredTail, AuditOpenError> {
    let offset = tip.bytes;
    let mut name = OsString::from(path.as_os_str());
    name.push(format!(".torn-{offset}"));
    let evidence = PathBuf::from(name);
    let log_error = |source| AuditOpenError::Io {
        path: path.to_owned(),
        source,
    };
    let evidence_error = |source| AuditOpenError::Io {
        path: evidence.clone(),
        source,
    };

    let mut torn = Vec::new();
    file.seek(SeekFrom::Start(offset)).map_err(log_error)?;
    file.take(torn_bytes)
        .read_to_end(&mut torn)
        .map_err(log_error)?;

    let mut side = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&evidence)
    {
        Ok(side) => side,
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            let existing = std::fs::read(&evidence).map_err(evidence_error)?;
            // Only an interrupted recovery of this very tail leaves a prefix of it there.
            if !torn.starts_with(&existing) {
                return Err(AuditOpenError::EvidenceExists { path: evidence });
            }
            OpenOptions::new()
                .write(true)
                .open(&evidence)
                .map_err(evidence_error)?
        }
        Err(error) => return Err(evidence_error(error)),
    };
    side.write_all(&torn)
        .and_then(|()| side.sync_all())
        .map_err(evidence_error)?;
    sync_parent(&evidence).map_err(evidence_error)?;

    file.set_len(offset)
        .and_then(|()| file.sync_all())
        .map_err(log_error)?;
    Ok(RecoveredTail {
        evidence,
        offset,
        bytes: torn.len() as u64,
        entries: tip.entries,
    })
}

/// Makes a new file's directory entry durable (Unix; elsewhere directories cannot be opened).
pub(super) fn sync_parent(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    if let Some(parent) = path.parent() {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        File::open(parent)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}
