//! Group commit: many writers wait for one commit (an `fdatasync`, a database transaction) that
//! covers all their entries, instead of each paying for its own.
//!
//! Every entry gets a ticket, in the order the sink stores it. A writer that must know its entry
//! is durable waits for its ticket: if no commit is running it runs one itself (the leader),
//! covering every ticket handed out so far; otherwise it waits for the running one, and if that
//! did not cover it, leads the next. The wait is bounded by the commit in flight and one more:
//! while one commit runs, the entries of every other writer gather for the next.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread;
use std::time::Duration;

use super::AuditError;

/// What a sink's commit did: how many tickets it made durable, all of them from the first.
pub(super) type Committed = Result<u64, AuditError>;

#[derive(Debug, Default)]
struct Tickets {
    /// Tickets handed out: entries stored, durable or not.
    issued: u64,
    /// Tickets known durable: every ticket up to this one.
    committed: u64,
    /// A commit is running (its leader does not hold the lock while it runs).
    committing: bool,
    /// The last commit that failed, and the tickets it was meant to cover: their writers who were
    /// waiting when it failed are told.
    failed: Option<(u64, AuditError)>,
    /// How many commits have failed: a waiter is told only of failures after it began to wait,
    /// and commits again past an older one.
    failures: u64,
}

/// The tickets of one sink and the commit that makes them durable.
#[derive(Debug, Default)]
pub(super) struct GroupCommit {
    tickets: Mutex<Tickets>,
    finished: Condvar,
}

impl GroupCommit {
    fn lock(&self) -> MutexGuard<'_, Tickets> {
        self.tickets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands out the next ticket. Call it where the entry takes its place in the log (under the
    /// sink's own writer lock), so tickets follow the log's order.
    pub(super) fn issue(&self) -> u64 {
        let mut tickets = self.lock();
        tickets.issued += 1;
        tickets.issued
    }

    /// Whether some ticket is not known durable yet.
    pub(super) fn behind(&self) -> bool {
        let tickets = self.lock();
        tickets.committed < tickets.issued
    }

    /// Returns once `ticket` is durable, running `commit` (at most once) if no running commit
    /// covers it. `commit` is given the tickets issued when it starts; it makes durable at least
    /// every entry stored before it was called and returns through which ticket it did.
    ///
    /// # Errors
    ///
    /// The commit's error, when the commit meant to cover `ticket` failed.
    pub(super) fn wait_for(
        &self,
        ticket: u64,
        commit: impl FnOnce(u64) -> Committed,
    ) -> Result<(), AuditError> {
        let mut commit = Some(commit);
        let mut tickets = self.lock();
        let failures_before = tickets.failures;
        loop {
            if tickets.committed >= ticket {
                return Ok(());
            }
            if tickets.failures > failures_before
                && let Some((through, error)) = &tickets.failed
                && *through >= ticket
            {
                return Err(error.clone());
            }
            if tickets.committing {
                tickets = self
                    .finished
                    .wait(tickets)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            let Some(commit) = commit.take() else {
                // Our own commit ran and neither covered nor failed this ticket: a sink bug.
                return Err(AuditError::new("a commit did not cover its own entries"));
            };
            tickets.committing = true;
            let target = tickets.issued;
            drop(tickets);
            // Should the commit panic, the guard ends it as a failure: no waiter waits forever.
            let mut running = Running {
                group: self,
                target,
                done: false,
            };
            let result = commit(target);
            running.done = true;
            tickets = self.lock();
            tickets.committing = false;
            match result {
                Ok(through) => tickets.committed = tickets.committed.max(through),
                Err(error) => {
                    tickets.failed = Some((target, error));
                    tickets.failures += 1;
                }
            }
            self.finished.notify_all();
        }
    }

    /// Makes every ticket issued so far durable (see [`wait_for`](Self::wait_for)).
    pub(super) fn wait_for_all(
        &self,
        commit: impl FnOnce(u64) -> Committed,
    ) -> Result<(), AuditError> {
        let issued = self.lock().issued;
        self.wait_for(issued, commit)
    }
}

/// Ends a commit whose closure panicked as a failed one, waking its waiters.
struct Running<'a> {
    group: &'a GroupCommit,
    target: u64,
    done: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut tickets = self.group.lock();
        tickets.committing = false;
        tickets.failed = Some((self.target, AuditError::new("an audit commit panicked")));
        tickets.failures += 1;
        self.group.finished.notify_all();
    }
}

/// Something a background thread keeps durable: entries recorded without waiting are committed
/// within one `period`.
pub(super) trait Background: Send + Sync + 'static {
    /// How long the thread sleeps between two ticks (read before each sleep).
    fn period(&self) -> Duration;

    /// Commits what is pending and does any other periodic work; errors are the writers' to see.
    fn tick(&self);
}

/// Starts a thread that calls `tick` on `owner` every `period` for as long as `owner` lives. It
/// holds only a weak reference between ticks: dropping the sink ends it within one period.
pub(super) fn run_in_background<T: Background>(owner: &Arc<T>, name: &str) {
    let weak: Weak<T> = Arc::downgrade(owner);
    // If no thread can be started, entries recorded without waiting become durable with the next
    // waiting record instead; nothing is lost while the process lives.
    let _ = thread::Builder::new().name(name.to_owned()).spawn(move || {
        loop {
            let Some(period) = weak.upgrade().map(|owner| owner.period()) else {
                return;
            };
            thread::sleep(period);
            match weak.upgrade() {
                Some(owner) => owner.tick(),
                None => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_ticket_already_committed_runs_no_commit() {
        let group = GroupCommit::default();
        let first = group.issue();
        group.wait_for(first, Ok).unwrap();
        assert!(!group.behind());
        group
            .wait_for(first, |_| panic!("committed already"))
            .unwrap();
    }

    #[test]
    fn a_failed_commit_fails_the_tickets_it_was_meant_to_cover_and_no_later_one() {
        let group = GroupCommit::default();
        let first = group.issue();
        let error = group
            .wait_for(first, |_| Err(AuditError::new("disk gone")))
            .unwrap_err();
        assert_eq!(error.message, "disk gone");
        assert!(group.behind());
        // A later wait commits again past the old failure (the batch is retried, not lost).
        group.wait_for(first, Ok).unwrap();
        assert!(!group.behind());
        // A later ticket is not covered by that failure: its own commit runs.
        let second = group.issue();
        group.wait_for(second, Ok).unwrap();
        assert!(!group.behind());
    }

    #[test]
    fn waiting_for_all_commits_every_ticket_issued_so_far() {
        let group = GroupCommit::default();
        group.issue();
        group.issue();
        let mut covered = 0;
        group
            .wait_for_all(|issued| {
                covered = issued;
                Ok(issued)
            })
            .unwrap();
        assert_eq!(covered, 2);
        assert!(!group.behind());
        let error = GroupCommit::default();
        error.issue();
        assert!(
            error
                .wait_for_all(|_| Err(AuditError::new("full")))
                .is_err()
        );
    }

    #[test]
    fn a_commit_that_panics_fails_its_waiters_instead_of_hanging_them() {
        let group = Arc::new(GroupCommit::default());
        let ticket = group.issue();
        let leader = Arc::clone(&group);
        let panicked =
            thread::spawn(move || leader.wait_for(ticket, |_| panic!("the client panicked")))
                .join();
        assert!(panicked.is_err());
        // Not committing any more: the next wait commits.
        group.wait_for(ticket, Ok).unwrap();
    }

    #[test]
    fn a_commit_that_does_not_cover_its_own_ticket_is_an_error_not_a_hang() {
        let group = GroupCommit::default();
        let ticket = group.issue();
        let error = group.wait_for(ticket, |_| Ok(0)).unwrap_err();
        assert!(error.message.contains("did not cover"), "{error}");
    }

    #[test]
    fn concurrent_writers_share_commits_and_none_returns_before_its_entry_is_durable() {
        // Eight threads, each waiting for 200 tickets; a commit takes 200 µs and makes durable
        // what was issued when it started. Every writer returns only once a commit covering its
        // ticket finished, and commits are shared: far fewer than tickets.
        let group = Arc::new(GroupCommit::default());
        let durable = Arc::new(AtomicU64::new(0));
        let commits = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (group, durable, commits) = (
                    Arc::clone(&group),
                    Arc::clone(&durable),
                    Arc::clone(&commits),
                );
                thread::spawn(move || {
                    for _ in 0..200 {
                        let ticket = group.issue();
                        group
                            .wait_for(ticket, |issued| {
                                thread::sleep(Duration::from_micros(200));
                                durable.fetch_max(issued, Ordering::SeqCst);
                                commits.fetch_add(1, Ordering::SeqCst);
                                Ok(issued)
                            })
                            .unwrap();
                        assert!(durable.load(Ordering::SeqCst) >= ticket);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(durable.load(Ordering::SeqCst), 1_600);
        let commits = commits.load(Ordering::SeqCst);
        assert!(commits < 1_600 / 2, "{commits} commits for 1,600 tickets");
        group.wait_for_all(|_| panic!("all committed")).unwrap();
    }

    struct Ticking(AtomicU64);

    impl Background for Ticking {
        fn period(&self) -> Duration {
            Duration::from_millis(1)
        }

        fn tick(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_background_thread_ticks_while_its_owner_lives_and_lets_it_go() {
        let owner = Arc::new(Ticking(AtomicU64::new(0)));
        run_in_background(&owner, "test-ticks");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while owner.0.load(Ordering::SeqCst) < 3 {
            assert!(std::time::Instant::now() < deadline, "no ticks");
            thread::sleep(Duration::from_millis(1));
        }
        // Only a weak reference between ticks: the owner is the last strong one soon enough.
        let weak = Arc::downgrade(&owner);
        drop(owner);
        while weak.upgrade().is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "the thread kept its owner"
            );
            thread::sleep(Duration::from_millis(1));
        }
    }
}
