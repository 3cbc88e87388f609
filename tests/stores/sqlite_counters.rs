//! The SQLite counters decide every take as the memory counters do (the random sequences of
//! `counters_agree`), whether a take writes its counters one by one or, more than a few each once,
//! together; and a name of any spelling is counted as itself both ways.
#![cfg(feature = "sqlite")]

use toolgate::decision::Refuses;
use toolgate::limits::{MemoryRateCounters, RateCounters, SqliteRateCounters, Take, Taken};

use crate::counters_agree::{agrees_with_memory, look, record, recorded_together};
use crate::sqlite_ledger::Scratch;

fn store(dir: &Scratch, session: &str) -> SqliteRateCounters {
    SqliteRateCounters::open(dir.0.join("counters.db"), session).unwrap()
}

#[test]
fn sqlite_counters_decide_every_take_as_memory_counters_do() {
    let dir = Scratch::new("counters-agree");
    agrees_with_memory(|case| store(&dir, &format!("case-{case}")));
}

#[test]
fn counters_recorded_together_replace_their_own_records_and_keep_the_others() {
    let dir = Scratch::new("counters-together");
    recorded_together(&store(&dir, "together"));
}

#[test]
fn names_of_any_spelling_are_counted_as_the_memory_counters_count_them() {
    // A counter's name holds the names a policy gives its limits, layers and sources, which may
    // be spelled any way: JSON's escapes, quotes, other scripts, a NUL. Each name recorded with
    // others (replacing its record, through JSON) and alone (adding to it) must count as itself.
    let names = [
        "plain",
        "a\u{0}b",
        "a",
        "\"quoted\"",
        "back\\slash",
        "é",
        "\u{1F600}",
        "tab\there",
        "line\nbreak",
        "[1,2]",
        "\u{2028}",
    ];
    let dir = Scratch::new("counters-names");
    let sqlite = store(&dir, "names");
    let memory = MemoryRateCounters::default();
    // Eleven names, each once: written together, through JSON, twice.
    for counters in [&sqlite as &dyn RateCounters, &memory] {
        for at in 0..2 {
            let takes: Vec<Take<'_>> = names.iter().map(|name| record(name, true)).collect();
            counters.take(&takes, 1_000 + at).unwrap();
        }
        for name in names {
            counters.take(&[record(name, false)], 2_000).unwrap();
        }
    }
    for name in names {
        for most in 0..3 {
            assert_eq!(
                sqlite.take(&[look(name, most)], 3_000).unwrap(),
                memory.take(&[look(name, most)], 3_000).unwrap(),
                "{name:?}, at most {most}"
            );
        }
    }
}

#[test]
fn a_counter_taken_twice_in_a_long_take_list_replaces_its_record_in_order() {
    // Counters written together must each be taken once: a counter replacing its record twice
    // in one list keeps one record, as one by one.
    let dir = Scratch::new("counters-twice");
    let sqlite = store(&dir, "twice");
    let memory = MemoryRateCounters::default();
    let lists = [
        vec![
            record("v1", true),
            record("v2", true),
            record("v1", true),
            record("v3", true),
            record("v4", true),
            record("v5", true),
        ],
        vec![record("w", true); 6],
    ];
    for counters in [&sqlite as &dyn RateCounters, &memory] {
        for list in &lists {
            assert_eq!(counters.take(list, 1_000).unwrap(), Taken::All);
        }
        for bucket in ["v1", "w"] {
            assert_eq!(
                counters.take(&[look(bucket, 0)], 2_000).unwrap(),
                Taken::Full(0)
            );
            assert_eq!(
                counters.take(&[look(bucket, 1)], 2_000).unwrap(),
                Taken::All,
                "{bucket}"
            );
        }
    }
}

#[test]
fn a_clock_stepped_forward_then_back_keeps_the_times() {
    let dir = Scratch::new("counters-clock-step");
    crate::counters_agree::a_clock_stepped_forward_then_back_keeps_the_times(&store(&dir, "step"));
}

#[test]
fn a_time_is_deleted_two_days_after_it_was_taken_written_together_or_alone() {
    // A look over the whole session counts what the store still holds: a time taken under a
    // second's window is gone two days later — kept for the longest window, and a day more for a
    // clock stepped forward and back (the memory counters keep it for its window alone).
    const DAY_MS: u64 = 2 * 86_400_000;
    let dir = Scratch::new("counters-expiry");
    let sqlite = store(&dir, "expiry");
    let record = |bucket| Take {
        refuses: Refuses::Never,
        ..Take::limit(bucket, Some(1_000), 0)
    };
    let together: Vec<Take<'_>> = ["a", "b", "c", "d", "e"].into_iter().map(record).collect();
    sqlite.take(&together, 0).unwrap();
    sqlite.take(&[record("alone")], 0).unwrap();
    let held = |at| {
        ["a", "e", "alone"].map(|bucket| {
            let look = Take {
                weight: 0,
                refuses: Refuses::AnyCounted,
                ..Take::limit(bucket, None, 0)
            };
            sqlite.take(&[look], at).unwrap() == Taken::Full(0)
        })
    };
    assert_eq!(held(DAY_MS - 1), [true; 3]);
    assert_eq!(held(DAY_MS), [false; 3]);
}

#[test]
fn forgetting_a_session_of_any_name_forgets_its_counts_and_no_others() {
    // Sessions named in other scripts, with a NUL, or as a prefix of another's name: each
    // forgets its own counts, and the others keep theirs.
    let dir = Scratch::new("counters-forget");
    let sessions = ["s", "é", "😀x", "a\u{0}", "a", "ab"];
    let take = |bucket| Take::limit(bucket, None, 10);
    let look = |bucket| Take {
        weight: 0,
        refuses: Refuses::AnyCounted,
        ..Take::limit(bucket, None, 0)
    };
    for forgotten in sessions {
        let stores: Vec<(&str, SqliteRateCounters)> = sessions
            .iter()
            .map(|&session| (session, store(&dir, session)))
            .collect();
        for (_, counters) in &stores {
            let takes: Vec<Take<'_>> = ["a", "b", "c", "d", "e"].into_iter().map(take).collect();
            assert_eq!(counters.take(&takes, 1_000).unwrap(), Taken::All);
        }
        let (_, forgetting) = stores
            .iter()
            .find(|(session, _)| *session == forgotten)
            .unwrap();
        forgetting.forget_session().unwrap();
        for (session, counters) in &stores {
            let held = counters.take(&[look("a")], 2_000).unwrap() == Taken::Full(0);
            assert_eq!(
                held,
                *session != forgotten,
                "{session:?} after {forgotten:?} forgot"
            );
            // Cleared for the next round.
            counters.forget_session().unwrap();
        }
    }
}

/// The file removed while a store counts in it: a take fails (the call is denied) rather than
/// count apart from a process opening the path afresh (an independent attack: two processes let
/// six calls through a cap of three). Opened again, the path counts.
#[test]
fn a_file_removed_while_counting_fails_closed() {
    let dir = Scratch::new("counters-removed");
    let first = store(&dir, "removed");
    let call = || Take {
        refuses: Refuses::Above(3),
        ..Take::limit("bob", Some(3_600_000), 0)
    };
    assert_eq!(first.take(&[call()], 0).unwrap(), Taken::All);
    std::fs::remove_file(dir.0.join("counters.db")).unwrap();
    let refused = first.take(&[call()], 1).unwrap_err();
    assert!(
        refused.to_string().contains("removed or replaced"),
        "{refused}"
    );
    let second = store(&dir, "removed");
    assert_eq!(second.take(&[call()], 2).unwrap(), Taken::All);
    assert!(first.take(&[call()], 3).is_err(), "still another file");
    // Opened by a `file:` URI, or by a path relative to the working directory: the file SQLite
    // opened is the one checked (an independent attack: the URI's check was off).
    let path = dir.0.join("uri.db");
    let by_uri = SqliteRateCounters::open(format!("file:{}", path.display()), "removed").unwrap();
    assert_eq!(by_uri.take(&[call()], 4).unwrap(), Taken::All);
    std::fs::remove_file(&path).unwrap();
    let refused = by_uri.take(&[call()], 5).unwrap_err();
    assert!(
        refused.to_string().contains("removed or replaced"),
        "{refused}"
    );
}

/// Opened through a link repointed later (`current -> releases/N`): the path given names another
/// file now, and the take fails rather than count apart (a second attack: SQLite's own name for
/// the file, links resolved, still named the old one).
#[cfg(unix)]
#[test]
fn a_link_repointed_while_counting_fails_closed() {
    let dir = Scratch::new("counters-link");
    let (one, two) = (dir.0.join("one"), dir.0.join("two"));
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    let current = dir.0.join("current");
    std::os::unix::fs::symlink(&one, &current).unwrap();
    let counters = SqliteRateCounters::open(current.join("counters.db"), "link").unwrap();
    let call = Take {
        refuses: Refuses::Above(2),
        ..Take::limit("bob", Some(3_600_000), 0)
    };
    assert_eq!(counters.take(&[call], 0).unwrap(), Taken::All);
    std::fs::remove_file(&current).unwrap();
    std::os::unix::fs::symlink(&two, &current).unwrap();
    let fresh = SqliteRateCounters::open(current.join("counters.db"), "link").unwrap();
    assert_eq!(fresh.take(&[call], 1).unwrap(), Taken::All);
    assert!(counters.take(&[call], 2).is_err(), "counted apart");
}
