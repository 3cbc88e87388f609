//! Zero-filled space kept ahead of the log's lines, when asked for, so that a commit's
//! `fdatasync` only writes data.
//!
//! Why: appending changes the file's size, and `fdatasync` must then make the new size durable
//! too — on ext4 a journal commit, with its own writes and cache flush, on every sync. Writing
//! over blocks that are already allocated, written and synced changes no metadata a read needs,
//! so the sync writes the data and flushes once. Measured on this project's test machine (ext4 on
//! a virtual disk): 10 kB written and `fdatasync`ed, 366–554 µs appended, 175–217 µs over
//! zeros written earlier. Databases do the same with their write-ahead logs (PostgreSQL fills
//! each WAL segment with zeros before it is used).
//!
//! The cost, and why it is not the default: the space is written twice (zeros, then lines); while
//! the sink lives the file ends in NUL bytes, so tools that read a live log line by line (`jq`)
//! stumble on them and tools that follow it by its size (`tail -f`, log shippers) never see lines
//! written over them; a log whose writer died keeps them until it is opened again.
//! [`verify_audit_file`](crate::audit::verify_audit_file) reads a run of NUL bytes at the end as
//! reserved space, not as entries; a sink that is dropped cuts it off.

use std::fs::File;
use std::io;
use std::time::{Duration, Instant};

/// The most zeros a sink keeps ahead: more is a mistake that would fill the disk.
pub(super) const MAX_AHEAD: u64 = 1 << 30;

/// The zeros written at a time, under the files' lock: writers wait for at most one step.
const STEP: usize = 256 << 10;

/// After a fill fails (a full disk), when to try again: meanwhile the log appends, which is
/// slower and as safe.
const RETRY_AFTER: Duration = Duration::from_secs(1);

static ZEROS: [u8; STEP] = [0; STEP];

/// Where the log's lines end and how far the file reaches past them.
#[derive(Debug)]
pub(super) struct Reserve {
    /// The end of the lines written: where the next batch goes.
    end: u64,
    /// The file's length: lines, then zeros. Never less than `end`.
    reserved: u64,
    /// How far ahead of `end` to keep zeros; 0 keeps none.
    ahead: u64,
    /// The sink is letting the file go: no more zeros.
    closed: bool,
    /// A fill failed: not before this.
    retry_at: Option<Instant>,
}

impl Reserve {
    /// The lines of an open log, and the file, end at `end` (a sink opens a log cut back to its
    /// last line).
    pub(super) fn new(end: u64) -> Self {
        Self {
            end,
            reserved: end,
            ahead: 0,
            closed: false,
            retry_at: None,
        }
    }

    /// Keeps `bytes` of zeros ahead of the lines from the next fill on, [`MAX_AHEAD`] at most.
    pub(super) fn set_ahead(&mut self, bytes: u64) {
        self.ahead = bytes.min(MAX_AHEAD);
    }

    /// Where the next batch of lines is written.
    pub(super) fn end(&self) -> u64 {
        self.end
    }

    /// A batch of lines was written through `end` (past the zeros, if they ran out).
    pub(super) fn wrote_through(&mut self, end: u64) {
        self.end = end;
        self.reserved = self.reserved.max(end);
    }

    /// A write failed and the file was cut back to `len` (or tried to be): lines end there, and
    /// no more zeros are written — they could land over the bytes of a cut that failed, which a
    /// reopen must find and report.
    pub(super) fn cut_to(&mut self, len: u64) {
        self.end = len;
        self.reserved = len;
        self.closed = true;
    }

    /// Writes the next step of zeros after the file's end, if the zeros ahead are short of
    /// what it should be. Returns whether it wrote any; on failure the file is cut back to where
    /// the zeros began and no fill is tried for a while.
    pub(super) fn fill_step(&mut self, log: &File) -> bool {
        let now = Instant::now();
        if self.closed
            || self.reserved - self.end >= self.ahead
            || self.retry_at.is_some_and(|at| now < at)
        {
            return false;
        }
        match write_all_at(log, &ZEROS, self.reserved) {
            Ok(()) => {
                self.reserved += STEP as u64;
                self.retry_at = None;
                true
            }
            Err(_) => {
                // Best effort: zeros past the lines read as reserved space if they stay.
                let _ = log.set_len(self.reserved);
                self.retry_at = Some(now + RETRY_AFTER);
                false
            }
        }
    }

    /// Cuts the zeros off (the sink is dropped, its lines synced) and fills no more. Returns
    /// whether the file was cut.
    pub(super) fn trim(&mut self, log: &File) -> io::Result<bool> {
        self.closed = true;
        if self.reserved == self.end {
            return Ok(false);
        }
        log.set_len(self.end)?;
        self.reserved = self.end;
        Ok(true)
    }
}

/// Writes all of `bytes` at `offset`. Every write to the log says where it goes, so filling
/// zeros ahead and writing lines never depend on a shared file position.
pub(super) fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
    }
    #[cfg(windows)]
    {
        let (mut bytes, mut offset) = (bytes, offset);
        while !bytes.is_empty() {
            match std::os::windows::fs::FileExt::seek_write(file, bytes, offset) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(written) => {
                    bytes = &bytes[written..];
                    offset += written as u64;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
    #[cfg(not(any(unix, windows)))]
    {
        use std::io::{Seek as _, SeekFrom, Write as _};
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        file.write_all(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!(
            "toolgate-reserve-{name}-{}.bin",
            std::process::id()
        ));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        (path, file)
    }

    #[test]
    fn fills_in_steps_up_to_what_is_asked_and_never_past_a_gigabyte() {
        let (path, file) = scratch("steps");
        write_all_at(&file, b"line\n", 0).unwrap();
        let mut reserve = Reserve::new(5);
        assert!(!reserve.fill_step(&file), "nothing asked: nothing filled");
        reserve.set_ahead(STEP as u64 + 1);
        assert!(reserve.fill_step(&file));
        assert!(reserve.fill_step(&file), "one step short of what was asked");
        assert!(!reserve.fill_step(&file));
        assert_eq!(file.metadata().unwrap().len(), 5 + 2 * STEP as u64);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..5], b"line\n");
        assert!(bytes[5..].iter().all(|byte| *byte == 0));
        reserve.set_ahead(u64::MAX);
        assert_eq!(reserve.ahead, MAX_AHEAD);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn lines_past_the_zeros_move_the_end_and_a_trim_cuts_back_to_the_lines() {
        let (path, file) = scratch("trim");
        let mut reserve = Reserve::new(0);
        reserve.set_ahead(1);
        assert!(reserve.fill_step(&file));
        write_all_at(&file, b"a\n", 0).unwrap();
        reserve.wrote_through(2);
        assert_eq!(reserve.end(), 2);
        // A batch longer than the zeros: the file grows with it.
        let long = vec![b'x'; STEP + 10];
        write_all_at(&file, &long, 2).unwrap();
        reserve.wrote_through(2 + long.len() as u64);
        assert_eq!(reserve.reserved, reserve.end());
        assert!(reserve.fill_step(&file));
        assert!(reserve.trim(&file).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), reserve.end());
        assert!(!reserve.fill_step(&file), "let go: no more zeros");
        assert!(!reserve.trim(&file).unwrap(), "nothing left to cut");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn after_a_failed_write_is_cut_back_no_zeros_are_written() {
        let (path, file) = scratch("cut");
        let mut reserve = Reserve::new(0);
        reserve.set_ahead(1);
        write_all_at(&file, b"a\npartial", 0).unwrap();
        reserve.wrote_through(2);
        assert!(reserve.fill_step(&file));
        // The cut of the partial batch failed (or not): either way no zeros land over it.
        reserve.cut_to(2);
        assert_eq!((reserve.end(), reserve.reserved), (2, 2));
        assert!(!reserve.fill_step(&file));
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            2 + STEP as u64,
            "nothing written since"
        );
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_fill_that_fails_is_not_tried_again_for_a_while() {
        let (path, _) = scratch("fails");
        let read_only = File::open(&path).unwrap();
        let mut reserve = Reserve::new(0);
        reserve.set_ahead(1);
        assert!(!reserve.fill_step(&read_only));
        assert!(reserve.retry_at.is_some());
        assert_eq!(reserve.reserved, 0, "nothing counted as reserved");
        let writable = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert!(!reserve.fill_step(&writable), "too soon to try again");
        reserve.retry_at = Some(Instant::now());
        assert!(reserve.fill_step(&writable));
        assert_eq!(reserve.retry_at, None);
        std::fs::remove_file(path).unwrap();
    }
}
