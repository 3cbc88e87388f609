//! Zeros reserved past the lines: a live sink keeps them ahead and cuts them off when dropped or
//! reopened; readers take a run of NUL bytes at the end as reserved space, a line cut short
//! before them as a torn tail, and complete lines after a NUL byte as a broken log — never as
//! entries, and never as debris recovery may move away.

use std::time::{Duration, Instant};

use super::torn::torn;
use super::*;

/// Nine entries written and let go, then `after` appended: returns the log's bytes before it.
fn log_followed_by(file: &TempFile, after: &[u8]) -> Vec<u8> {
    write_some_events(file);
    let lines = file.bytes();
    let mut bytes = lines.clone();
    bytes.extend_from_slice(after);
    std::fs::write(&file.0, bytes).unwrap();
    lines
}

fn zeros(count: usize) -> Vec<u8> {
    vec![0; count]
}

#[test]
fn zeros_after_the_last_line_are_reserved_space_and_a_reopen_cuts_them_off() {
    let file = TempFile::new("reserve-zeros");
    let lines = log_followed_by(&file, &zeros(1 << 20));
    let tip = verify_audit_file(&file.0).unwrap();
    assert_eq!((tip.entries, tip.bytes), (9, lines.len() as u64));
    let (tree, _) = audit_tree(&file.0).unwrap();
    assert_eq!(tree.len(), 9, "the zeros are no leaves");

    // A writer that died there: the next one cuts the zeros off and continues the chain.
    write_calls(&file, "next", 1);
    let tip = verify_audit_file(&file.0).unwrap();
    assert_eq!(tip.entries, 12);
    assert_eq!(file.bytes().len() as u64, tip.bytes);
    assert_eq!(&file.bytes()[..lines.len()], &lines[..]);
}

#[test]
fn a_line_cut_short_before_the_zeros_is_a_torn_tail_and_only_its_bytes_are_moved() {
    let file = TempFile::new("reserve-torn");
    let partial = b"{\"seq\":9,\"prev\":\"sha256:";
    let mut after = partial.to_vec();
    after.extend(zeros(4096 * 3));
    let lines = log_followed_by(&file, &after);
    assert_eq!(torn(&file), (9, lines.len() as u64, partial.len() as u64));
    assert!(matches!(
        open_waiting(&file.0, false),
        Err(AuditOpenError::Verify(AuditVerifyError::TornTail { .. }))
    ));
    let sink = open_waiting(&file.0, true).unwrap();
    let recovered = sink.recovered_tail().unwrap().clone();
    assert_eq!(std::fs::read(&recovered.evidence).unwrap(), partial);
    drop(sink);
    assert_eq!(file.bytes(), lines, "the log ends in its last entry");
    std::fs::remove_file(&recovered.evidence).unwrap();
}

#[test]
fn bytes_after_a_nul_are_torn_until_a_line_ends_there_which_is_broken() {
    // No entry holds a NUL byte. Bytes after one with no line end are a line cut short (a crash
    // mid-write, or a power cut that kept a later block of an unsynced write): torn through the
    // last byte that is not NUL. A line end after one means complete lines follow something that
    // is not an entry — a NUL written into the middle of a log reads so — and that is `Broken`,
    // which recovery refuses, never entries moved away as crash debris.
    let file = TempFile::new("reserve-hole");
    write_some_events(&file);
    let whole = file.bytes();
    let cut = whole[..whole.len() - 1]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .unwrap()
        + 1;
    let (kept, last) = whole.split_at(cut);
    let body = &last[..last.len() - 1];
    let cut_short: Vec<(&str, Vec<u8>)> = vec![
        (
            "a line cut short, zeros",
            [&body[..10], &zeros(4096)].concat(),
        ),
        (
            "half a line, a hole, more of it, zeros",
            [&body[..10], &zeros(4096), &body[10..], &zeros(100)].concat(),
        ),
        ("zeros, then bytes", [&zeros(4096), &body[..20]].concat()),
    ];
    for (name, tail) in cut_short {
        let mut bytes = kept.to_vec();
        bytes.extend_from_slice(&tail);
        std::fs::write(&file.0, &bytes).unwrap();
        let through = tail.iter().rposition(|byte| *byte != 0).unwrap() + 1;
        assert_eq!(torn(&file), (8, cut as u64, through as u64), "{name}");
    }
    let broken: Vec<(&str, Vec<u8>)> = vec![
        (
            "a whole line after a hole",
            [&zeros(4096)[..], last].concat(),
        ),
        (
            "half a line, a hole, the rest of it",
            [&last[..10], &zeros(4096), &last[10..], &zeros(100)].concat(),
        ),
        ("one NUL inside the line", {
            let mut line = last.to_vec();
            line[5] = 0;
            line
        }),
        // A line without NUL bytes that is not the entry expected there, as always.
        (
            "an edited line before zeros",
            [&last.to_ascii_uppercase()[..], &zeros(4096)].concat(),
        ),
    ];
    for (name, tail) in broken {
        let mut bytes = kept.to_vec();
        bytes.extend_from_slice(&tail);
        std::fs::write(&file.0, &bytes).unwrap();
        assert_eq!(
            verify_audit_file(&file.0).unwrap_err().line(),
            Some(9),
            "{name}"
        );
        assert!(
            matches!(
                open_waiting(&file.0, true),
                Err(AuditOpenError::Verify(AuditVerifyError::Broken {
                    line: 9,
                    ..
                }))
            ),
            "{name}: recovery refuses"
        );
        assert_eq!(file.bytes(), bytes, "{name}: nothing moved");
    }
    // In the middle of a log: everything after it is kept, and the log is broken there.
    let mut middle = whole.clone();
    middle[cut - 20] = 0;
    std::fs::write(&file.0, &middle).unwrap();
    assert_eq!(verify_audit_file(&file.0).unwrap_err().line(), Some(8));
}

/// Waits until the file is at least `zeros` bytes longer than its verified lines; returns
/// whether it became so. (The zeros are written a block at a time: a loaded machine showed the
/// file 1,359 bytes into a block, less than the lines the test then writes.)
fn zeros_appear(file: &TempFile, within: Duration, zeros: u64) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let tip = verify_audit_file(&file.0).unwrap();
        if std::fs::metadata(&file.0).unwrap().len() >= tip.bytes + zeros {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn a_live_sink_writes_over_zeros_it_keeps_ahead_and_cuts_them_off_when_dropped() {
    let file = TempFile::new("reserve-live");
    let sink = Arc::new(open_waiting(&file.0, false).unwrap().with_reserve(16 << 20));
    assert!(
        zeros_appear(&file, Duration::from_secs(10), 1 << 20),
        "no zeros reserved"
    );
    let reserved = std::fs::metadata(&file.0).unwrap().len();
    write_calls_to(Arc::clone(&sink), "over", 20);
    // The calls' lines went over zeros written before them (the background thread may still be
    // adding more past them), and every entry verifies.
    let tip = verify_audit_file(&file.0).unwrap();
    assert_eq!(tip.entries, 60);
    assert!(
        tip.bytes < reserved,
        "{} lines, {reserved} reserved",
        tip.bytes
    );
    assert!(std::fs::metadata(&file.0).unwrap().len() >= reserved);
    drop(sink);
    assert_eq!(std::fs::metadata(&file.0).unwrap().len(), tip.bytes);
    assert_eq!(verify_audit_file(&file.0).unwrap(), tip);
}

#[test]
fn a_sink_only_appends_unless_told_to_reserve() {
    let file = TempFile::new("reserve-none");
    let sink = Arc::new(open_waiting(&file.0, false).unwrap());
    write_calls_to(Arc::clone(&sink), "append", 2);
    assert!(!zeros_appear(&file, Duration::from_millis(300), 1));
    drop(sink);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 6);
}
