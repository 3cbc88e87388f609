//! Group commit's guarantees: no writer returns before its ticket is durable, none hangs.

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
        thread::spawn(move || leader.wait_for(ticket, |_| panic!("the client panicked"))).join();
    assert!(panicked.is_err());
    // Not committing any more: the next wait commits.
    group.wait_for(ticket, Ok).unwrap();
}

#[test]
fn a_writer_waiting_on_a_commit_that_panics_is_told_it_failed() {
    // The leader's commit covers both tickets and panics once the other writer waits on it: that
    // writer learns its entry was not made durable (it does not quietly commit on its own).
    let group = Arc::new(GroupCommit::default());
    let (first, second) = (group.issue(), group.issue());
    let (waiting, waits) = std::sync::mpsc::channel::<()>();
    let leader = {
        let group = Arc::clone(&group);
        thread::spawn(move || {
            group.wait_for(first, |_| {
                waits.recv().unwrap();
                // Until the other writer is waiting on this commit.
                while group.lock().waiters.len() < 2 {
                    thread::sleep(Duration::from_millis(1));
                }
                panic!("the client panicked")
            })
        })
    };
    let follower = {
        let group = Arc::clone(&group);
        thread::spawn(move || {
            while !group.lock().committing {
                thread::sleep(Duration::from_millis(1));
            }
            waiting.send(()).unwrap();
            group.wait_for(second, |_| Ok(2))
        })
    };
    assert!(leader.join().is_err());
    let told = follower.join().unwrap().unwrap_err();
    assert!(told.message.contains("panicked"), "{told}");
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

/// Commits made by `threads` writers each waiting for `tickets` tickets, every commit taking
/// 2 ms, and how many gathers ended at their deadline.
fn commits_made(group: GroupCommit, threads: usize, tickets: usize) -> (u64, u64) {
    let group = Arc::new(group);
    let commits = Arc::new(AtomicU64::new(0));
    thread::scope(|scope| {
        for _ in 0..threads {
            let (group, commits) = (Arc::clone(&group), Arc::clone(&commits));
            scope.spawn(move || {
                for _ in 0..tickets {
                    let ticket = group.issue();
                    group
                        .wait_for(ticket, |issued| {
                            thread::sleep(Duration::from_millis(2));
                            commits.fetch_add(1, Ordering::SeqCst);
                            Ok(issued)
                        })
                        .unwrap();
                }
            });
        }
    });
    let timed_out = group.lock().gathers_timed_out;
    (commits.load(Ordering::SeqCst), timed_out)
}

#[test]
fn a_gathering_leader_waits_for_the_writers_the_last_commit_released() {
    // Four writers that come straight back: without gathering, the first back commits alone
    // and the other three wait for it, two commits a round; gathering, one.
    let (plain, never) = commits_made(GroupCommit::default(), 4, 40);
    let (gathered, timed_out) = commits_made(GroupCommit::gathering(), 4, 40);
    assert!(
        gathered * 4 <= plain * 3,
        "{gathered} commits gathering, {plain} without"
    );
    assert!(
        gathered >= 40,
        "{gathered}: a commit covered more than one round"
    );
    assert_eq!(never, 0, "a plain group does not gather");
    // The leader commits as soon as the writers are back, not at its deadline: only the last
    // rounds, as writers finish, wait for one that does not come.
    assert!(
        timed_out * 4 < gathered,
        "{timed_out} of {gathered} gathers waited out their deadline"
    );
}

#[test]
fn a_gathering_leader_commits_without_writers_that_do_not_come_back() {
    // Two writers share a commit; one leaves. The other's next commit waits for it at most
    // the bound, then commits: no hang.
    let group = Arc::new(GroupCommit::gathering());
    let both = Arc::new(std::sync::Barrier::new(2));
    let (done, finished) = std::sync::mpsc::channel();
    for stays in [true, false] {
        let (group, both, done) = (Arc::clone(&group), Arc::clone(&both), done.clone());
        thread::spawn(move || {
            let ticket = group.issue();
            both.wait();
            let slow = |issued| {
                thread::sleep(Duration::from_millis(20));
                Ok(issued)
            };
            group.wait_for(ticket, slow).unwrap();
            if stays {
                let ticket = group.issue();
                group.wait_for(ticket, Ok).unwrap();
                assert!(!group.behind());
            }
            done.send(stays).unwrap();
        });
    }
    let mut ended: Vec<bool> = (0..2)
        .map(|_| {
            finished
                .recv_timeout(Duration::from_secs(30))
                .expect("no hang")
        })
        .collect();
    ended.sort_unstable();
    assert_eq!(ended, [false, true]);
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

#[test]
fn waiters_for_one_ticket_behind_a_failed_commit_are_each_woken() {
    // A commit fails while four more writers wait for the same ticket: each is woken on its own
    // and told; none is left asleep, and none stays on the list of waiters.
    let group = Arc::new(GroupCommit::default());
    let ticket = group.issue();
    let (started, start) = std::sync::mpsc::channel::<()>();
    let failing = {
        let group = Arc::clone(&group);
        thread::spawn(move || {
            group.wait_for(ticket, |_| {
                start.recv().unwrap();
                while group.lock().waiters.len() < 5 {
                    thread::sleep(Duration::from_millis(1));
                }
                Err(AuditError::new("disk gone"))
            })
        })
    };
    while !group.lock().committing {
        thread::sleep(Duration::from_millis(1));
    }
    let (done, finished) = std::sync::mpsc::channel();
    for _ in 0..4 {
        let (group, done) = (Arc::clone(&group), done.clone());
        thread::spawn(move || done.send(group.wait_for(ticket, Ok).is_ok()).unwrap());
    }
    started.send(()).unwrap();
    assert!(failing.join().unwrap().is_err());
    let told: Vec<bool> = (0..4)
        .map(|_| {
            finished
                .recv_timeout(Duration::from_secs(30))
                .expect("no hang")
        })
        .collect();
    // All four were waiting when it failed: each is told, none hangs.
    assert_eq!(told, [false; 4]);
    group.wait_for(ticket, Ok).unwrap();
    assert!(group.lock().waiters.is_empty());
}
