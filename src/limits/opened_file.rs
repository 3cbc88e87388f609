//! Which file a SQLite store's path named when it was opened. A file removed (or replaced) while a
//! process counts in it leaves that process counting alone: a process opening the path afterwards
//! gets a new, empty file, and a cap of three let six calls through between two of them (an
//! independent attack). A take first checks the path still names the file it counts in, and
//! fails closed if not.

use std::path::{Path, PathBuf};

/// The paths a store was opened by — as given, and as SQLite names the file it opened — each
/// with the file it named then (device and inode). A path that names no file (`:memory:`, a
/// `file:` URI as given) or a platform that does not say is not checked.
#[derive(Debug)]
pub(super) struct OpenedFile {
    paths: Vec<(PathBuf, (u64, u64))>,
}

impl OpenedFile {
    /// The file `given` and `opened` (SQLite's name for it) name now.
    pub(super) fn at(given: &Path, opened: &Path) -> Self {
        // Both: SQLite's name is absolute with links resolved (a `file:` URI, a working
        // directory that changes), the given one follows a link repointed later (an independent
        // attack: `current -> releases/N` repointed, a process kept counting in the old file).
        // The given path made absolute (not resolved): a working directory changed later must
        // not make it name another file.
        let given = std::path::absolute(given).unwrap_or_else(|_| given.to_owned());
        let paths = [given.as_path(), opened]
            .into_iter()
            .filter_map(|path| identity(path).map(|named| (path.to_owned(), named)))
            .collect();
        Self { paths }
    }

    /// `Err` naming the path if one no longer names the file opened.
    pub(super) fn still_there(&self) -> Result<(), super::CounterError> {
        match self
            .paths
            .iter()
            .find(|(path, opened)| identity(path) != Some(*opened))
        {
            Some((path, _)) => Err(super::CounterError::Store {
                message: format!(
                    "the counters' file {} was removed or replaced since it was opened: its counts would be apart from every process that opens the path now",
                    path.display()
                ),
                source: None,
            }),
            None => Ok(()),
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
