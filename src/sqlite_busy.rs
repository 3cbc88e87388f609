//! Opening a SQLite file that other processes open at the same moment.
//!
//! The busy timeout makes SQLite wait for a lock inside one statement, but not everywhere: a
//! journal-mode change, and a deferred transaction that must become a writer while another
//! process writes, fail at once with "database is locked" (SQLite gives up rather than risk a
//! deadlock). Creating a new file's schema hits both when several processes start together, so
//! those steps are retried, as a whole, until the same deadline a statement would wait for.

use std::time::{Duration, Instant};

/// How long setup steps are retried: the busy timeout every connection sets.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `error` is SQLite saying another connection holds the lock.
pub(crate) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Runs `step` until it succeeds, fails for another reason than a lock, or [`BUSY_TIMEOUT`]
/// has passed (then its last error). `busy` tells a lock error from the others. A step started
/// just before the deadline may itself wait up to the busy timeout inside a statement, so an open
/// that never gets the lock gives up after at most about twice `BUSY_TIMEOUT`.
pub(crate) fn retry_while_busy<T, E>(
    mut step: impl FnMut() -> Result<T, E>,
    busy: impl Fn(&E) -> bool,
) -> Result<T, E> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match step() {
            Err(error) if busy(&error) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: std::ffi::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn only_lock_errors_are_busy() {
        assert!(is_busy(&sqlite(rusqlite::ffi::SQLITE_BUSY)));
        assert!(is_busy(&sqlite(rusqlite::ffi::SQLITE_LOCKED)));
        for other in [
            rusqlite::ffi::SQLITE_NOTADB,
            rusqlite::ffi::SQLITE_CORRUPT,
            rusqlite::ffi::SQLITE_READONLY,
        ] {
            assert!(!is_busy(&sqlite(other)), "{other}");
        }
        assert!(!is_busy(&rusqlite::Error::QueryReturnedNoRows));
    }

    #[test]
    fn a_step_is_retried_while_busy_and_not_after_another_error() {
        // Busy three times, then done: four steps, the result of the last.
        let mut steps = 0;
        let done = retry_while_busy(
            || {
                steps += 1;
                if steps < 4 { Err("busy") } else { Ok(steps) }
            },
            |error| *error == "busy",
        );
        assert_eq!((done, steps), (Ok(4), 4));
        // Another error ends it at once.
        let mut steps = 0;
        let failed: Result<(), &str> = retry_while_busy(
            || {
                steps += 1;
                Err("corrupt")
            },
            |error| *error == "busy",
        );
        assert_eq!((failed, steps), (Err("corrupt"), 1));
    }
}
