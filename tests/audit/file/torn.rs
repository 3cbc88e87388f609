//! Crashes mid-write: a torn last line is reported as such (never as tampering), `open` refuses
//! it, and `open_recovering` moves exactly the torn bytes to a side file and continues the chain.
//! The crash test kills a real child process (this test binary run again, see
//! `child_process_role`).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

/// The torn tail `verify_audit_file` reports: valid entries, where the tail starts, its length.
pub(super) fn torn(file: &TempFile) -> (u64, u64, u64) {
    match verify_audit_file(&file.0) {
        Err(AuditVerifyError::TornTail {
            valid_entries,
            tail_offset,
            tail_bytes,
        }) => (valid_entries, tail_offset, tail_bytes),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_cut_at_every_byte_of_the_last_line_is_a_torn_tail_that_recovers() {
    let file = TempFile::new("torn-every-byte");
    write_some_events(&file);
    let whole = file.bytes();
    let start = whole[..whole.len() - 1]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .unwrap()
        + 1;
    let mut cases = 0;
    for cut in start + 1..whole.len() {
        std::fs::write(&file.0, &whole[..cut]).unwrap();
        let torn_bytes = (cut - start) as u64;
        assert_eq!(torn(&file), (8, start as u64, torn_bytes), "cut at {cut}");
        let refused = open_waiting(&file.0, false);
        assert!(
            matches!(
                refused,
                Err(AuditOpenError::Verify(AuditVerifyError::TornTail { .. }))
            ),
            "cut at {cut}: plain open refuses: {refused:?}"
        );
        assert_eq!(file.bytes(), &whole[..cut], "refusing changed nothing");

        let sink = Arc::new(open_waiting(&file.0, true).unwrap());
        let recovered = sink.recovered_tail().unwrap().clone();
        assert_eq!(
            (recovered.offset, recovered.bytes, recovered.entries),
            (start as u64, torn_bytes, 8)
        );
        assert!(
            recovered
                .evidence
                .to_string_lossy()
                .ends_with(&format!(".jsonl.torn-{start}"))
        );
        assert_eq!(
            std::fs::read(&recovered.evidence).unwrap(),
            &whole[start..cut]
        );
        assert_eq!(file.bytes(), &whole[..start]);
        write_calls_to(sink, "after", 1);
        assert_eq!(
            verify_audit_file(&file.0).unwrap().entries,
            11,
            "cut at {cut}"
        );
        std::fs::remove_file(&recovered.evidence).unwrap();
        cases += 1;
    }
    assert!(cases > 200, "{cases} cuts");
    // A cut exactly after a newline is a shorter valid chain, not a torn one.
    std::fs::write(&file.0, &whole[..start]).unwrap();
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 8);
}

#[test]
fn a_torn_first_write_recovers_to_an_empty_chain() {
    let file = TempFile::new("torn-first");
    std::fs::write(&file.0, b"{\"seq\":0,\"prev\":\"sha").unwrap();
    assert_eq!(torn(&file), (0, 0, 20));
    let sink = open_waiting(&file.0, true).unwrap();
    assert_eq!(sink.recovered_tail().unwrap().entries, 0);
    write_calls_to(Arc::new(sink), "c", 1);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 3);
}

#[test]
fn a_clean_file_opens_recovering_without_moving_anything() {
    let file = TempFile::new("torn-none");
    write_some_events(&file);
    let sink = open_waiting(&file.0, true).unwrap();
    assert_eq!(sink.recovered_tail(), None);
    assert!(file.side_files().is_empty());
}

fn tear(file: &TempFile, torn: &[u8]) -> u64 {
    let offset = file.bytes().len() as u64;
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&file.0)
        .unwrap();
    log.write_all(torn).unwrap();
    offset
}

fn side_file(file: &TempFile, offset: u64) -> std::path::PathBuf {
    let mut name = file.0.clone().into_os_string();
    name.push(format!(".torn-{offset}"));
    name.into()
}

#[test]
fn a_recovery_interrupted_after_a_partial_side_file_completes() {
    let file = TempFile::new("torn-interrupted");
    write_some_events(&file);
    let offset = tear(&file, b"{\"seq\":9,\"prev\":\"sha256:01");
    // The side file got only part of the tail before the crash.
    std::fs::write(side_file(&file, offset), b"{\"seq\":9,").unwrap();
    let sink = open_waiting(&file.0, true).unwrap();
    let recovered = sink.recovered_tail().unwrap();
    assert_eq!(recovered.evidence, side_file(&file, offset));
    assert_eq!(
        std::fs::read(&recovered.evidence).unwrap(),
        b"{\"seq\":9,\"prev\":\"sha256:01"
    );
}

#[test]
fn a_foreign_side_file_stops_recovery_and_changes_nothing() {
    let file = TempFile::new("torn-foreign");
    write_some_events(&file);
    let offset = tear(&file, b"{\"seq\":9,\"pr");
    std::fs::write(side_file(&file, offset), b"something else").unwrap();
    let before = file.bytes();
    match open_waiting(&file.0, true) {
        Err(AuditOpenError::EvidenceExists { path }) => assert_eq!(path, side_file(&file, offset)),
        other => panic!("{other:?}"),
    }
    assert_eq!(file.bytes(), before);
    assert_eq!(
        std::fs::read(side_file(&file, offset)).unwrap(),
        b"something else"
    );
}

// ---- a real process killed while writing --------------------------------------------------------

/// How many calls a crash-writer child records before it waits to be killed.
const CHILD_CALLS: u64 = 4;

/// Child role: recover the log, say so, then record `CHILD_CALLS` calls whose decision entries are
/// a megabyte long (a policy reason), so each is written by many kernel page copies a kill can
/// interrupt; then wait to be killed.
pub(crate) fn child_crash_writer(path: &Path, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let sink = loop {
        match JsonlAuditSink::open_recovering(path) {
            // Appending (no zeros reserved ahead, the default): the file grows page by page as a
            // line is written, which is what this test watches for. Killed writers that wrote
            // over reserved zeros are `durable.rs`'s.
            Ok(sink) => break sink,
            Err(AuditOpenError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(other) => {
                println!("CHILD FAILED {other}");
                return;
            }
        }
    };
    let tools = || registry([calculator()]);
    let rules = RulePolicy::from_json(
        &json!({"rules": [{"id": "big", "tool": "calculator", "action": "allow",
            "reason": "r".repeat(1 << 20)}]})
        .to_string(),
        &tools(),
    )
    .unwrap();
    let controller = ToolController::new(tools(), rules).with_audit_sink(sink);
    println!("CHILD READY");
    std::io::stdout().flush().unwrap();
    for i in 0..CHILD_CALLS {
        let _ = controller.handle(ToolCall::new(
            format!("{name}-{i}"),
            "calculator",
            json!({"a": 1, "b": 2}),
        ));
    }
    println!("CHILD IDLE");
    std::io::stdout().flush().unwrap();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether the file's last byte is something other than a newline: a line is being written.
fn mid_line(path: &Path) -> bool {
    use std::io::{Read as _, Seek as _};
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut last = [b'\n'];
    file.seek(std::io::SeekFrom::End(-1)).is_ok()
        && file.read_exact(&mut last).is_ok()
        && last[0] != b'\n'
}

#[test]
fn a_writer_killed_mid_write_leaves_a_log_that_verifies_or_recovers_never_a_broken_one() {
    let file = TempFile::new("torn-kill");
    let (mut rounds, mut torn_seen) = (0, 0);
    // Until four kills have landed inside a write (a kill after a write ends leaves a clean log);
    // each child first recovers what the one before it tore.
    while torn_seen < 4 {
        assert!(
            rounds < 40,
            "no kill landed inside a write in {rounds} rounds"
        );
        rounds += 1;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_process_role",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TOOLGATE_AUDIT_CHILD_ROLE", "crash_writer")
            .env("TOOLGATE_AUDIT_FILE", &file.0)
            .env("TOOLGATE_AUDIT_NAME", format!("r{rounds}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (said, heard) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in stdout.lines() {
                let line = line.unwrap();
                if let Some(at) = line.find("CHILD ") {
                    let _ = said.send(line[at + 6..].to_owned());
                }
            }
        });
        assert_eq!(heard.recv().unwrap(), "READY");
        // Kill the moment the file is seen ending inside a line, while the write is under way;
        // stop watching once the child has written all it will.
        let start = std::fs::metadata(&file.0).unwrap().len();
        loop {
            if std::fs::metadata(&file.0).unwrap().len() > start && mid_line(&file.0) {
                break;
            }
            match heard.try_recv() {
                Ok(word) => {
                    assert_eq!(word, "IDLE");
                    break;
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => panic!("child ended early"),
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();

        match verify_audit_file(&file.0) {
            Ok(_) => {}
            Err(AuditVerifyError::TornTail { .. }) => torn_seen += 1,
            Err(other) => panic!("round {rounds}: {other}"),
        }
    }
    let sink = open_waiting(&file.0, true).unwrap();
    drop(sink);
    let tip = verify_audit_file(&file.0).unwrap();
    assert!(tip.entries >= 2, "{tip:?}");
    // Each side file holds a torn tail: a prefix of an entry, never a complete line.
    for side in file.side_files() {
        let bytes = std::fs::read(&side).unwrap();
        assert!(!bytes.is_empty() && !bytes.contains(&b'\n'), "{side:?}");
        assert!(bytes.starts_with(b"{\"seq\":"), "{side:?}");
    }
    assert_eq!(
        file.side_files().len(),
        torn_seen,
        "one side file per torn tail"
    );
}
