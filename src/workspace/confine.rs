//! Opening a workspace path one name at a time, so that what the policy judged is what is opened.
//!
//! Every name is inspected without following it (`symlink_metadata`), then opened, then the opened
//! handle is checked to be the very object inspected (same device and inode). A symlink, a
//! hard-linked file or a special file is refused at any name; one swapped in between the check and
//! the open is refused as changed. Opens carry `O_NONBLOCK` so a FIFO swapped in cannot make the
//! open wait for a writer, and reads stop one byte past the cap whatever the metadata says.

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, ErrorKind, Read, Write};
use std::path::{Component, Path};

use cap_std::fs::{Dir, FileType, FileTypeExt, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};
use rustix::fs::OFlags;
use rustix::io::Errno;

use super::MAX_READ_BYTES;

/// Why a workspace path was refused or could not be used. Rendered for the model at the handler's
/// edge, after the path the model gave; it never holds file contents.
#[derive(Debug)]
pub(super) enum Refusal {
    /// The path is absolute or has a `..` component.
    NotRelative,
    /// A file path ends in `/` or `/.`, so it cannot name a file.
    TrailingSlash,
    /// A name on the way is a symbolic link.
    Symlink,
    /// The file is a regular file with more than one hard link.
    HardLink,
    /// The file is not a regular file; the text says what it is.
    NotRegular(&'static str),
    /// A name on the way (or `list_dir`'s target) is not a directory.
    NotADirectory,
    /// `read_file` or `write_file` was given a directory.
    IsADirectory,
    /// The object at a name changed between its check and its open.
    Changed,
    /// The file holds more than [`MAX_READ_BYTES`].
    TooLarge,
    /// The file is not UTF-8 text.
    NotUtf8,
    /// The operating system refused or failed.
    Io(io::Error),
}

impl From<io::Error> for Refusal {
    fn from(error: io::Error) -> Self {
        // `O_NOFOLLOW` on a symlink swapped in after the check fails with ELOOP.
        if error.raw_os_error() == Some(Errno::LOOP.raw_os_error()) {
            Self::Symlink
        } else {
            Self::Io(error)
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotRelative => f.write_str(
                "absolute paths and `..` are refused; give a path inside the workspace without `..`",
            ),
            Self::TrailingSlash => f.write_str("ends with `/`, so it does not name a file"),
            Self::Symlink => f.write_str("is or passes through a symbolic link; symbolic links are refused"),
            Self::HardLink => {
                f.write_str("has more than one hard link; hard-linked files are refused")
            }
            Self::NotRegular(what) => write!(f, "is {what}, not a regular file; refused"),
            Self::NotADirectory => f.write_str("is not a directory"),
            Self::IsADirectory => f.write_str("is a directory"),
            Self::Changed => f.write_str("changed while being opened; refused"),
            Self::TooLarge => write!(
                f,
                "file has more than the {MAX_READ_BYTES} bytes read_file returns"
            ),
            Self::NotUtf8 => f.write_str("is not UTF-8 text"),
            Self::Io(error) => match error.kind() {
                ErrorKind::NotFound => f.write_str("not found"),
                ErrorKind::PermissionDenied => f.write_str(
                    "outside the workspace or not permitted (absolute paths, `..` and symlinks are refused)",
                ),
                ErrorKind::IsADirectory => f.write_str("is a directory"),
                ErrorKind::NotADirectory => f.write_str("is not a directory"),
                // The operating system's text (e.g. "No space left on device (os error 28)"):
                // std and cap-std never put a path in it.
                _ => write!(f, "{error}"),
            },
        }
    }
}

/// The text of the regular file at `path`, at most [`MAX_READ_BYTES`] bytes.
pub(super) fn read_text(workspace: &Dir, path: &str) -> Result<String, Refusal> {
    let (parents, name) = file_names(path)?;
    in_dir(workspace, &parents, |dir| {
        let seen = dir.symlink_metadata(name)?;
        regular_single_link(&seen)?;
        let file = dir.open_with(name, guarded(OpenOptions::new().read(true)))?;
        let opened = file.metadata()?;
        same_object(&seen, &opened)?;
        regular_single_link(&opened)?;
        if opened.len() > MAX_READ_BYTES {
            return Err(Refusal::TooLarge);
        }
        let bytes = read_bounded(file, MAX_READ_BYTES)?;
        String::from_utf8(bytes).map_err(|_| Refusal::NotUtf8)
    })
}

/// Creates the file at `path`, or replaces the contents of the regular single-link file there.
pub(super) fn write_text(workspace: &Dir, path: &str, content: &str) -> Result<(), Refusal> {
    let (parents, name) = file_names(path)?;
    in_dir(workspace, &parents, |dir| {
        // O_CREAT | O_EXCL never opens what exists and never follows a symlink: a planted link,
        // dangling or not, lands in the `AlreadyExists` arm and is refused there.
        let create = guarded(OpenOptions::new().write(true).create_new(true)).clone();
        let file = match dir.open_with(name, &create) {
            Ok(file) => file,
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                let seen = dir.symlink_metadata(name)?;
                regular_single_link(&seen)?;
                // No O_TRUNC: nothing is cut before the opened handle passes its checks.
                let file = dir.open_with(name, guarded(OpenOptions::new().write(true)))?;
                same_object(&seen, &file.metadata()?)?;
                file
            }
            Err(error) => return Err(error.into()),
        };
        regular_single_link(&file.metadata()?)?;
        file.set_len(0)?;
        (&file).write_all(content.as_bytes())?;
        Ok(())
    })
}

/// The names in the directory at `path` (`.` or empty is the workspace), directories marked `/`.
pub(super) fn list_names(workspace: &Dir, path: &str) -> Result<Vec<String>, Refusal> {
    let names = names(path)?;
    in_dir(workspace, &names, |dir| {
        let mut listed = Vec::new();
        for entry in dir.entries()? {
            let entry = entry?;
            let mut name = entry.file_name().to_string_lossy().into_owned();
            // The entry's own type: a symlink to a directory is not marked, it cannot be entered.
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                name.push('/');
            }
            listed.push(name);
        }
        listed.sort();
        Ok(listed)
    })
}

/// The names of a relative path, in order; `.` components vanish.
fn names(path: &str) -> Result<Vec<&OsStr>, Refusal> {
    let mut names = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            // `..` is refused even when it stays inside: after a symlink or a renamed directory
            // the kernel's `..` and the policy's lexical `..` part ways.
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Refusal::NotRelative);
            }
        }
    }
    Ok(names)
}

/// The directories on the way to a file and the file's own name.
fn file_names(path: &str) -> Result<(Vec<&OsStr>, &OsStr), Refusal> {
    let mut names = names(path)?;
    let name = names.pop().ok_or(Refusal::IsADirectory)?;
    // `Path::components` drops a trailing `/` or `/.`; the kernel would read them as "directory".
    if !path.as_bytes().ends_with(name.as_encoded_bytes()) {
        return Err(Refusal::TrailingSlash);
    }
    Ok((names, name))
}

/// Runs `then` in the directory reached through `names` from `workspace`, never through a symlink.
fn in_dir<T>(
    workspace: &Dir,
    names: &[&OsStr],
    then: impl FnOnce(&Dir) -> Result<T, Refusal>,
) -> Result<T, Refusal> {
    let Some((first, rest)) = names.split_first() else {
        return then(workspace);
    };
    let mut dir = open_subdir(workspace, first)?;
    for name in rest {
        dir = open_subdir(&dir, name)?;
    }
    then(&dir)
}

fn open_subdir(parent: &Dir, name: &OsStr) -> Result<Dir, Refusal> {
    let seen = parent.symlink_metadata(name)?;
    let kind = seen.file_type();
    if kind.is_symlink() {
        return Err(Refusal::Symlink);
    }
    if !kind.is_dir() {
        return Err(Refusal::NotADirectory);
    }
    // `open_dir` would follow a symlink swapped in since the check (staying inside the
    // workspace); the identity check below refuses what it reached then.
    let dir = parent.open_dir(name)?;
    same_object(&seen, &dir.dir_metadata()?)?;
    Ok(dir)
}

/// Refuses anything but a regular file with exactly one name.
fn regular_single_link(metadata: &Metadata) -> Result<(), Refusal> {
    let kind = metadata.file_type();
    if kind.is_symlink() {
        Err(Refusal::Symlink)
    } else if kind.is_dir() {
        Err(Refusal::IsADirectory)
    } else if !kind.is_file() {
        Err(Refusal::NotRegular(describe(kind)))
    } else if metadata.nlink() > 1 {
        // Another name may sit outside the workspace or under a path the policy denies.
        Err(Refusal::HardLink)
    } else {
        Ok(())
    }
}

fn describe(kind: FileType) -> &'static str {
    if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

/// The handle is the object that was inspected by name: no swap happened in between.
fn same_object(seen: &Metadata, opened: &Metadata) -> Result<(), Refusal> {
    if seen.dev() == opened.dev() && seen.ino() == opened.ino() {
        Ok(())
    } else {
        Err(Refusal::Changed)
    }
}

/// `options` plus the flags every open here carries.
fn guarded(options: &mut OpenOptions) -> &mut OpenOptions {
    // NONBLOCK: a FIFO swapped in after the check fails or returns at once instead of waiting for
    // its other end. NOFOLLOW: the kernel refuses a final-name symlink where cap-std lets it
    // (`openat2`); elsewhere the identity check catches it. NOCTTY: a terminal swapped in does not
    // become the process's controlling terminal.
    let flags = OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY;
    options.custom_flags(flags.bits().cast_signed())
}

/// At most `limit` bytes from `reader`, or [`Refusal::TooLarge`] when it has more: the bound holds
/// while reading, whatever length the metadata claimed.
fn read_bounded(reader: impl Read, limit: u64) -> Result<Vec<u8>, Refusal> {
    crate::files::bounded_bytes(reader, limit)?.ok_or(Refusal::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_reader_is_cut_one_byte_past_the_cap() {
        assert!(matches!(
            read_bounded(io::repeat(b'a'), 16),
            Err(Refusal::TooLarge)
        ));
        assert_eq!(read_bounded(&[b'a'; 16][..], 16).unwrap().len(), 16);
        assert!(matches!(
            read_bounded(&[b'a'; 17][..], 16),
            Err(Refusal::TooLarge)
        ));
    }

    #[test]
    fn paths_with_dotdot_root_or_a_trailing_slash_are_refused_lexically() {
        for path in ["..", "a/../b", "/etc/passwd", "a/.."] {
            assert!(matches!(names(path), Err(Refusal::NotRelative)), "{path}");
        }
        for path in ["a/", "a/.", "sub/a//"] {
            assert!(
                matches!(file_names(path), Err(Refusal::TrailingSlash)),
                "{path}"
            );
        }
        for path in ["", ".", "./"] {
            assert!(
                matches!(file_names(path), Err(Refusal::IsADirectory)),
                "{path}"
            );
        }
        let (parents, name) = file_names("./a//b/./c.txt").unwrap();
        assert_eq!(parents, [OsStr::new("a"), OsStr::new("b")]);
        assert_eq!(name, "c.txt");
    }
}
