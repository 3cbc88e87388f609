//! Reading a file a person configured: a regular file, of bounded size, as UTF-8 text.
//!
//! A path that names a FIFO waits forever for a writer, and one that names a device (`/dev/zero`)
//! or a file grown by mistake is read into memory without end: an independent attack pointed
//! the gateway's policy layer at each (a `check` that never ended; 19.7 GB in 30 s). Policies,
//! configs and key files are read through [`read_text`], which refuses them with a reason, and
//! reads a file that says it is empty (a kernel's pseudo-file, as `/proc/kmsg`) as empty.

use std::io::Read;
use std::path::Path;

/// The most a policy file is read for: 16 MiB (a policy of 10,000 rules is about 2 MB).
pub const MAX_POLICY_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The text of the regular file at `path`, at most `max_bytes` long.
///
/// # Errors
///
/// The file cannot be opened or read, is not a regular file (a FIFO, a socket, a device or a
/// directory — checked before it is opened, so a FIFO is never waited on), is longer than
/// `max_bytes`, or is not UTF-8; the error says which.
///
/// # Examples
///
/// ```
/// let error = toolgate::files::read_text("/dev/null", 1024).unwrap_err();
/// assert!(error.to_string().contains("not a regular file"));
/// ```
pub fn read_text(path: impl AsRef<Path>, max_bytes: u64) -> std::io::Result<String> {
    let path = path.as_ref();
    let refuse = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    if !std::fs::metadata(path)?.is_file() {
        return Err(refuse("not a regular file".to_owned()));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Opened without waiting: a path swapped for a FIFO since the check above must not block the
    // open (Linux's `O_NONBLOCK`; a regular file reads as it would).
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(0o4000);
    }
    let file = options.open(path)?;
    // Again on what was opened: the path may have been replaced in between.
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(refuse("not a regular file".to_owned()));
    }
    // A file that says it is empty is read as empty: a kernel's pseudo-file (`/proc/kmsg`) says
    // so, and reading it may wait for ever.
    if metadata.len() == 0 {
        return Ok(String::new());
    }
    let Some(bytes) = bounded_bytes(file, max_bytes)? else {
        return Err(refuse(format!("longer than {max_bytes} bytes")));
    };
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text".to_owned())
    })
}

/// At most `limit` bytes from `reader`, or `None` when it has more: the bound holds while
/// reading, whatever length a file's metadata claimed (one byte past it is read, no more).
pub(crate) fn bounded_bytes(reader: impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok(u64::try_from(bytes.len())
        .is_ok_and(|read| read <= limit)
        .then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::read_text;

    #[test]
    fn only_a_regular_file_within_its_bound_is_read() {
        let dir = std::env::temp_dir().join(format!("toolgate-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("policy.json");
        std::fs::write(&file, "0123456789").unwrap();
        assert_eq!(read_text(&file, 10).unwrap(), "0123456789");
        let long = read_text(&file, 9).unwrap_err();
        assert!(long.to_string().contains("longer than 9 bytes"), "{long}");
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        assert!(
            read_text(&file, 10)
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );
        let directory = read_text(&dir, 10).unwrap_err();
        assert!(directory.to_string().contains("not a regular file"));
        assert!(read_text(dir.join("missing"), 10).is_err());
        #[cfg(target_os = "linux")]
        {
            // A pseudo-file saying it is empty is read as empty, never waited on.
            assert_eq!(read_text("/proc/self/status", 10).unwrap(), "");
        }
        #[cfg(unix)]
        {
            let zero = read_text("/dev/zero", 10).unwrap_err();
            assert!(zero.to_string().contains("not a regular file"));
            // A FIFO nobody writes to: refused at once, never waited on.
            let fifo = dir.join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.is_ok_and(|status| status.success()) {
                let refused = read_text(&fifo, 10).unwrap_err();
                assert!(refused.to_string().contains("not a regular file"));
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
