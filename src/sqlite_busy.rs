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
