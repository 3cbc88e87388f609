//! Group commit: many writers wait for one commit (an `fdatasync`, a database transaction) that
//! covers all their entries, instead of each paying for its own.
//!
//! Every entry gets a ticket, in the order the sink stores it. A writer that must know its entry
//! is durable waits for its ticket: if no commit is running it runs one itself (the leader),
//! covering every ticket handed out so far; otherwise it waits for the running one, and if that
//! did not cover it, leads the next. The wait is bounded by the commit in flight and one more:
//! while one commit runs, the entries of every other writer gather for the next. A gathering
//! group's leader also waits, before it commits, for the writers the last commit released — at
//! most as long as that commit took and never more than 1 ms — so that writers who come straight
//! back share one commit instead of one of them leading a commit alone.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::AuditError;

/// The longest a gathering leader waits for writers before it commits.
const MAX_GATHER: Duration = Duration::from_millis(1);

/// What a sink's commit did: how many tickets it made durable, all of them from the first.
pub(super) type Committed = Result<u64, AuditError>;

#[derive(Debug, Default)]
struct Tickets {
    /// Tickets known durable: every ticket up to this one (mirrored in `GroupCommit::committed`).
    committed: u64,
    /// A commit is running (its leader does not hold the lock while it runs).
    committing: bool,
    /// The last commit that failed, and the tickets it was meant to cover: their writers who were
    /// waiting when it failed are told.
    failed: Option<(u64, AuditError)>,
    /// How many commits have failed: a waiter is told only of failures after it began to wait,
    /// and commits again past an older one.
    failures: u64,
    /// The writers inside `wait_for` right now, each woken on its own when a commit ends.
    waiters: Vec<Waiter>,
    /// Numbers the next waiter: two waiters may wait for the same ticket.
    next_waiter: u64,
    /// How many waiting writers the last commit released: in a steady stream, the ones about to
    /// come back with their next entry.
    released: usize,
    /// How many writers began to wait since the last commit ended.
    arrived: usize,
    /// How long the last commit took: the longest a leader waits for them.
    last_commit: Duration,
    /// Gathers that waited until their deadline (for tests).
    #[cfg(test)]
    gathers_timed_out: u64,
}

/// A writer waiting for its ticket, and how to wake it.
#[derive(Debug)]
struct Waiter {
    id: u64,
    ticket: u64,
    thread: Thread,
}

/// The tickets of one sink and the commit that makes them durable.
///
/// Why each waiter is woken on its own (parked, then unparked by the commit that ends) rather
/// than all on one condition variable: a commit releases every writer at once, and on a
/// condition variable each of them must take the lock again before it may return — they queue
/// on it, one context switch after another, while the disk waits for their next entries. A
/// released waiter here learns it is done from `committed` alone and takes no lock.
#[derive(Debug, Default)]
pub(super) struct GroupCommit {
    tickets: Mutex<Tickets>,
    /// Tickets handed out: entries stored, durable or not. Written under the sink's own lock.
    issued: AtomicU64,
    /// Every ticket through this one is durable: written under `tickets`, read without it.
    committed: AtomicU64,
    /// How many commits have ended (well or not): a woken waiter that is not done looks again.
    ended: AtomicU64,
    /// A leader is waiting for writers to arrive before it commits.
    gathering: AtomicBool,
    /// Signalled when the writers a gathering leader waits for have arrived.
    arrived: Condvar,
    /// Whether a leader gathers before it commits (see [`GroupCommit::gathering`]).
    gather: bool,
}

impl GroupCommit {
    /// Group commit whose leader first waits for the writers the last commit released: when
    /// writers come back right after their entry is durable (a call's next decision), a commit
    /// that starts with the first of them carries one entry and makes the rest wait a whole
    /// commit; one that waits for them — at most as long as the last commit took, 1 ms at most —
    /// carries them all.
    pub(super) fn gathering() -> Self {
        Self {
            gather: true,
            ..Self::default()
        }
    }

    /// Whether a leader is gathering writers: it will commit everything stored before it starts,
    /// within the bound of its wait.
    pub(super) fn is_gathering(&self) -> bool {
        self.gathering.load(Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, Tickets> {
        self.tickets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands out the next ticket. Call it where the entry takes its place in the log (under the
    /// sink's own writer lock), so tickets follow the log's order.
    pub(super) fn issue(&self) -> u64 {
        self.issued.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Whether some ticket is not known durable yet.
    pub(super) fn behind(&self) -> bool {
        self.committed.load(Ordering::Acquire) < self.issued.load(Ordering::Acquire)
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
        let id = tickets.next_waiter;
        tickets.next_waiter += 1;
        tickets.waiters.push(Waiter {
            id,
            ticket,
            thread: thread::current(),
        });
        tickets.arrived += 1;
        if self.is_gathering() && tickets.arrived >= tickets.released {
            self.arrived.notify_one();
        }
        // Counted out however the wait ends, a panicking commit included.
        let mut waiting = Waiting {
            group: self,
            id,
            listed: true,
        };
        self.wait_locked(tickets, ticket, failures_before, &mut commit, &mut waiting)
    }

    fn wait_locked<'a>(
        &'a self,
        mut tickets: MutexGuard<'a, Tickets>,
        ticket: u64,
        failures_before: u64,
        commit: &mut Option<impl FnOnce(u64) -> Committed>,
        waiting: &mut Waiting<'_>,
    ) -> Result<(), AuditError> {
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
                let seen = self.ended.load(Ordering::Acquire);
                drop(tickets);
                if self.park_until_a_commit_ends(ticket, seen) {
                    // The commit that covered this ticket took it off the list.
                    waiting.listed = false;
                    return Ok(());
                }
                tickets = self.lock();
                continue;
            }
            let Some(commit) = commit.take() else {
                // Our own commit ran and neither covered nor failed this ticket: a sink bug.
                return Err(AuditError::new("a commit did not cover its own entries"));
            };
            tickets.committing = true;
            if self.gather {
                tickets = self.gather(tickets);
            }
            let target = self.issued.load(Ordering::Acquire);
            drop(tickets);
            let started = Instant::now();
            // Should the commit panic, the guard ends it as a failure: no waiter waits forever.
            let mut running = Running {
                group: self,
                target,
                done: false,
            };
            let result = commit(target);
            running.done = true;
            tickets = self.lock();
            tickets.last_commit = started.elapsed();
            tickets = self.end_commit(tickets, target, result);
        }
    }

    /// Sleeps until a commit that ended after `seen` others did; true if it made `ticket`
    /// durable (then this waiter is off the list), false to look again under the lock.
    fn park_until_a_commit_ends(&self, ticket: u64, seen: u64) -> bool {
        loop {
            // A wake-up sent before this park makes it return at once; a spurious one loops.
            thread::park();
            if self.committed.load(Ordering::Acquire) >= ticket {
                return true;
            }
            if self.ended.load(Ordering::Acquire) != seen {
                return false;
            }
        }
    }

    /// Records how a commit ended, takes the writers it made durable off the list, and wakes
    /// every waiter — the released ones to return, the others so that one leads the next commit.
    fn end_commit<'a>(
        &'a self,
        mut tickets: MutexGuard<'a, Tickets>,
        target: u64,
        result: Committed,
    ) -> MutexGuard<'a, Tickets> {
        tickets.committing = false;
        match result {
            Ok(through) => {
                tickets.committed = tickets.committed.max(through);
                self.committed.store(tickets.committed, Ordering::Release);
            }
            Err(error) => {
                tickets.failed = Some((target, error));
                tickets.failures += 1;
            }
        }
        let committed = tickets.committed;
        let me = thread::current().id();
        let mut wake = Vec::with_capacity(tickets.waiters.len());
        let before = tickets.waiters.len();
        tickets.waiters.retain(|waiter| {
            if waiter.thread.id() != me {
                wake.push(waiter.thread.clone());
            }
            waiter.ticket > committed
        });
        tickets.released = before - tickets.waiters.len();
        tickets.arrived = 0;
        self.ended.fetch_add(1, Ordering::AcqRel);
        drop(tickets);
        for thread in wake {
            thread.unpark();
        }
        self.lock()
    }

    /// Waits, as the leader, until the writers the last commit released are back or as long as
    /// that commit took (1 ms at most).
    fn gather<'a>(&'a self, mut tickets: MutexGuard<'a, Tickets>) -> MutexGuard<'a, Tickets> {
        let deadline = Instant::now() + tickets.last_commit.min(MAX_GATHER);
        self.gathering.store(true, Ordering::Release);
        while tickets.arrived < tickets.released {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                #[cfg(test)]
                {
                    tickets.gathers_timed_out += 1;
                }
                break;
            }
            tickets = self
                .arrived
                .wait_timeout(tickets, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        self.gathering.store(false, Ordering::Release);
        tickets
    }

    /// Makes every ticket issued so far durable (see [`wait_for`](Self::wait_for)).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(super) fn wait_for_all(
        &self,
        commit: impl FnOnce(u64) -> Committed,
    ) -> Result<(), AuditError> {
        let issued = self.issued.load(Ordering::Acquire);
        self.wait_for(issued, commit)
    }
}

/// Counts a writer out of `waiters` when its wait ends, unless the commit that released it did.
struct Waiting<'a> {
    group: &'a GroupCommit,
    id: u64,
    listed: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.listed {
            return;
        }
        let mut tickets = self.group.lock();
        if let Some(at) = tickets.waiters.iter().position(|w| w.id == self.id) {
            tickets.waiters.swap_remove(at);
        }
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
        let tickets = self.group.lock();
        let error = AuditError::new("an audit commit panicked");
        drop(self.group.end_commit(tickets, self.target, Err(error)));
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
mod tests;
