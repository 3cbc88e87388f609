//! Which file a SQLite store's path named when it was opened. A file removed (or replaced) while a
//! process counts in it leaves that process counting alone: a process opening the path afterwards
//! gets a new, empty file, and a cap of three let six calls through between two of them (an
//! independent attack). A take first checks the path still names the file it counts in, and
//! fails closed if not.

use std::path::{Path, PathBuf};

/// The path a store was opened at, and the file it named then (device and inode; `None` where
/// the platform does not say, or the path names no file, as `:memory:`).
#[derive(Debug)]
pub(super) struct OpenedFile {
    path: PathBuf,
    identity: Option<(u64, u64)>,
}

impl OpenedFile {
    pub(super) fn at(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            identity: identity(path),
        }
    }

    /// `Err` naming the path if it no longer names the file opened.
    pub(super) fn still_there(&self) -> Result<(), super::CounterError> {
        match self.identity {
            Some(opened) if identity(&self.path) != Some(opened) => {
                Err(super::CounterError::Store {
                    message: format!(
                        "the counters' file {} was removed or replaced since it was opened: its counts would be apart from every process that opens the path now",
                        self.path.display()
                    ),
                    source: None,
                })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(unix)]
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path)
        .ok()
        .map(|metadata| (metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
fn identity(_: &Path) -> Option<(u64, u64)> {
    None
}
