//! Group commit under a crash: every call a writer saw allowed (its decision acknowledged as
//! durable) is in the log after the writer is killed, whichever moment the kill lands.

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

/// Child role: four threads make allowed calls through one group-committing sink, printing each
/// call's id once `handle` returned (its decision was recorded durably before the handler ran),
/// until killed.
pub(crate) fn child_acknowledging_writer(path: &Path, name: &str) {
    let sink = Arc::new(open_waiting(path, true).unwrap().with_reserve(16 << 20));
    let controller = Arc::new(audited(&Arc::default(), sink));
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    println!("CHILD READY");
    std::io::stdout().flush().unwrap();
    // Past the sink's first background tick, which reserves zeros ahead of the lines: the calls
    // are written over them, as in a writer that has run a while.
    std::thread::sleep(Duration::from_millis(150));
    let deadline = Instant::now() + Duration::from_secs(30);
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let (controller, out) = (Arc::clone(&controller), Arc::clone(&out));
            scope.spawn(move || {
                for i in 0.. {
                    if Instant::now() > deadline {
                        return;
                    }
                    let id = format!("{name}-{thread}-{i}");
                    let outcome = controller.handle(ToolCall::new(
                        id.clone(),
                        "calculator",
                        json!({"a": i, "b": 1}),
                    ));
                    assert!(matches!(outcome, Outcome::Completed(ref r) if !r.is_error));
                    let mut out = out.lock().unwrap();
                    writeln!(out, "CHILD RAN {id}").unwrap();
                    out.flush().unwrap();
                }
            });
        }
    });
}

#[test]
fn every_call_a_killed_writer_ran_has_its_decision_in_the_log() {
    let file = TempFile::new("acknowledged-kill");
    let mut acknowledged = HashSet::new();
    for round in 0..5 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_process_role",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TOOLGATE_AUDIT_CHILD_ROLE", "acknowledging_writer")
            .env("TOOLGATE_AUDIT_FILE", &file.0)
            .env("TOOLGATE_AUDIT_NAME", format!("r{round}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        // Kill after a varying number of acknowledged calls, mid-stream.
        let kill_after = 50 + round * 37;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(at) = line.find("CHILD RAN ") {
                acknowledged.insert(line[at + 10..].to_owned());
                seen += 1;
                if seen == kill_after {
                    break;
                }
            }
        }
        child.kill().unwrap();
        // Acknowledgements already printed before the kill count too.
        for line in lines.map_while(Result::ok) {
            if let Some(at) = line.find("CHILD RAN ") {
                acknowledged.insert(line[at + 10..].to_owned());
            }
        }
        child.wait().unwrap();
        assert!(
            seen >= kill_after,
            "round {round}: the child ran only {seen} calls"
        );
        // The writer died with zeros reserved past its lines: the log still verifies (or has a
        // torn tail the next writer recovers), reading them as reserved space.
        let lines_end = match verify_audit_file(&file.0) {
            Ok(tip) => tip.bytes,
            Err(AuditVerifyError::TornTail {
                tail_offset,
                tail_bytes,
                ..
            }) => tail_offset + tail_bytes,
            Err(other) => panic!("round {round}: {other}"),
        };
        let len = std::fs::metadata(&file.0).unwrap().len();
        assert!(len > lines_end, "round {round}: no zeros reserved");
    }
    // The next writer recovers whatever a kill tore and cuts the zeros off; the log then
    // verifies and, let go, ends in its last line.
    drop(open_waiting(&file.0, true).unwrap());
    let tip = verify_audit_file(&file.0).unwrap();
    assert_eq!(std::fs::metadata(&file.0).unwrap().len(), tip.bytes);
    let allowed = file.decided_calls();
    let missing: Vec<&String> = acknowledged.difference(&allowed).collect();
    assert!(
        missing.is_empty(),
        "ran without a decision in the log: {missing:?}"
    );
    assert!(acknowledged.len() >= 5 * 50);
}
