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
    pub(super) fn at(given: &Path, opened: Option<&Path>) -> Self {
        // Both: SQLite's name is absolute with links resolved (a `file:` URI, a working
        // directory that changes), the given one follows a link repointed later (an independent
        // attack: `current -> releases/N` repointed, a process kept counting in the old file).
        // The given path made absolute (not resolved): a working directory changed later must
        // not make it name another file.
        let given = std::path::absolute(given).unwrap_or_else(|_| given.to_owned());
        // `:memory:` and a `file:` URI name no file as written, whatever a file of that name in
        // the working directory is (a stray one, removed later, failed every take).
        let named = given
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name != ":memory:")
            && !given.to_string_lossy().contains("file:");
        let given = named.then_some(given);
        let paths = given
            .as_deref()
            .into_iter()
            .chain(opened)
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

#[cfg(test)]
mod tests {
    use super::OpenedFile;

    /// `:memory:` and a `file:` URI name no file as written: a file of that name (a stray one,
    /// removed later) is never checked; a plain path is.
    #[cfg(unix)]
    #[test]
    fn only_a_path_naming_a_file_is_checked() {
        let dir = std::env::temp_dir().join(format!("toolgate-opened-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in [":memory:", "file:counters.db", "plain.db"] {
            let path = dir.join(name);
            std::fs::write(&path, "x").unwrap();
            let opened = OpenedFile::at(&path, None);
            std::fs::remove_file(&path).unwrap();
            assert_eq!(opened.still_there().is_err(), name == "plain.db", "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
