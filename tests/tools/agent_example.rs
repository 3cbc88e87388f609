//! Runs the agent example (built by `cargo test` alongside the tests) and checks its transcript
//! shows every path: allowed, unknown tool, invalid arguments, denial, ask approved, ask rejected.
#![cfg(feature = "cap-std")]

use std::io::Write;
use std::process::{Command, Stdio};

fn run_agent(args: &[&str], stdin: &str) -> String {
    // target/<profile>/deps/tools-… → target/<profile>/examples/agent
    let deps = std::env::current_exe().expect("test binary path");
    let binary = deps
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("agent"))
        .expect("target layout");
    assert!(
        binary.exists(),
        "{} missing: build with --features cap-std",
        binary.display()
    );
    let mut child = Command::new(&binary)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("agent example starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("answers written");
    let output = child.wait_with_output().expect("agent example ends");
    assert!(output.status.success(), "agent example failed: {output:?}");
    String::from_utf8(output.stdout).expect("UTF-8 transcript")
}

#[test]
fn transcript_shows_every_outcome_with_answers_at_the_prompt() {
    let transcript = run_agent(&[], "y\nn\n");
    for expected in [
        "-> [call_read] ok: Meeting on Friday at 10.",
        "-> [call_unknown] error: unknown tool: delete_file",
        "-> [call_invalid] error: invalid arguments for read_file",
        "-> [call_denied] error: denied: environment files hold secrets",
        "-> [call_write_summary] ok: wrote 49 bytes to summary.md",
        "-> [call_overwrite_notes] error: rejected",
        "summary.md",
    ] {
        assert!(
            transcript.contains(expected),
            "{expected:?} missing from:\n{transcript}"
        );
    }
    assert!(!transcript.contains("sk-not-for-the-model"), "{transcript}");
}

#[test]
fn no_rejects_every_ask_without_prompting() {
    let transcript = run_agent(&["--no"], "");
    assert!(!transcript.contains("approve?"));
    assert!(
        transcript.contains("-> [call_write_summary] error: rejected"),
        "{transcript}"
    );
    assert!(!transcript.contains("  summary.md"), "{transcript}");
}

/// Issue 21, item 10: the demo tells the truth about what ran. The model's last message is
/// written from the results it was given, and the workspace listing shows what the files hold.
#[test]
fn the_last_words_and_the_files_match_what_ran() {
    let approved = run_agent(&["--yes"], "");
    let last = |transcript: &str| -> String {
        transcript
            .lines()
            .rfind(|line| line.starts_with("model: "))
            .unwrap_or_default()
            .to_owned()
    };
    let words = last(&approved);
    let (ran, not_ran) = words.split_once("These did not:").expect("both lists");
    assert!(ran.contains("write_file notes.txt"), "{words}");
    assert!(!not_ran.contains("write_file notes.txt"), "{words}");
    assert!(approved.contains("  notes.txt (0 bytes)"), "{approved}");
    assert!(!approved.contains("as it was"), "{approved}");

    let rejected = run_agent(&["--no"], "");
    let words = last(&rejected);
    let (ran, not_ran) = words.split_once("These did not:").expect("both lists");
    assert!(!ran.contains("write_file"), "{words}");
    assert!(not_ran.contains("write_file notes.txt"), "{words}");
    assert!(rejected.contains("  notes.txt (25 bytes)"), "{rejected}");
}
