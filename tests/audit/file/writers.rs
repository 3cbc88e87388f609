//! One writer at a time: a second sink on the same file — in this process or another — is refused
//! with `Locked` while the first lives, so the chain never forks; writers that take turns lose no
//! event. The process test runs this test binary again as children (see `child_process_role`).

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use super::*;

const SESSIONS: usize = 6;
const CALLS_PER_SESSION: usize = 10;

/// `SESSIONS` times: open the log (waiting for the lock), record `CALLS_PER_SESSION` calls named
/// `<name>-<session>-<i>`, close it.
fn take_turns(path: &Path, name: &str) {
    for session in 0..SESSIONS {
        let sink = Arc::new(open_waiting(path, false).unwrap());
        write_calls_to(sink, &format!("{name}-{session}-"), CALLS_PER_SESSION);
    }
}

/// Child role: take turns with the other writers.
pub(crate) fn child_writer(path: &Path, name: &str) {
    take_turns(path, name);
    println!("CHILD DONE");
}

/// Every call of every writer is in the log, with its three events, and the chain verifies.
fn assert_every_call_recorded(file: &TempFile, writers: &[&str]) {
    let tip = verify_audit_file(&file.0).unwrap();
    let expected = writers.len() * SESSIONS * CALLS_PER_SESSION * 3;
    assert_eq!(tip.entries, expected as u64);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for id in call_ids(file) {
        *seen.entry(id).or_default() += 1;
    }
    for name in writers {
        for session in 0..SESSIONS {
            for i in 0..CALLS_PER_SESSION {
                let id = format!("{name}-{session}-{i}");
                assert_eq!(seen.get(&id), Some(&3), "{id}");
            }
        }
    }
}

#[test]
fn a_second_sink_on_the_same_file_is_refused_while_the_first_lives() {
    let file = TempFile::new("lock-second");
    let first = Arc::new(open_waiting(&file.0, false).unwrap());
    write_calls_to(Arc::clone(&first), "a", 1);
    for attempt in [
        JsonlAuditSink::open(&file.0),
        JsonlAuditSink::open_recovering(&file.0),
    ] {
        match attempt {
            Err(error @ AuditOpenError::Locked { .. }) => {
                let message = error.to_string();
                assert!(message.contains("locked by another writer"), "{message}");
                assert!(message.contains(&*file.0.to_string_lossy()), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    write_calls_to(Arc::clone(&first), "b", 1);
    drop(first);
    let second = Arc::new(open_waiting(&file.0, false).unwrap());
    write_calls_to(second, "c", 1);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 9);
    assert_eq!(
        call_ids(&file),
        ["a0", "a0", "a0", "b0", "b0", "b0", "c0", "c0", "c0"]
    );
}

#[test]
fn threads_taking_turns_on_one_file_fork_nothing_and_lose_nothing() {
    let file = TempFile::new("lock-threads");
    let writers = ["t0", "t1", "t2"];
    std::thread::scope(|scope| {
        for name in writers {
            let path = &file.0;
            scope.spawn(move || take_turns(path, name));
        }
    });
    assert_every_call_recorded(&file, &writers);
}

#[test]
fn two_processes_taking_turns_on_one_file_fork_nothing_and_lose_nothing() {
    let file = TempFile::new("lock-processes");
    let writers = ["p0", "p1"];
    let children: Vec<_> = writers
        .iter()
        .map(|name| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "child_process_role",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TOOLGATE_AUDIT_CHILD_ROLE", "writer")
                .env("TOOLGATE_AUDIT_FILE", &file.0)
                .env("TOOLGATE_AUDIT_NAME", name)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // Meanwhile this process takes turns too.
    take_turns(&file.0, "parent");
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("CHILD DONE"),
            "{stdout}"
        );
    }
    assert_every_call_recorded(&file, &["p0", "p1", "parent"]);
}
