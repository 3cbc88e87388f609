//! Runs the agent example (built by `cargo test` alongside the tests) and checks its transcript
//! shows every path: allowed, unknown tool, invalid arguments, denial, ask approved, ask rejected.
#![cfg(feature = "cap-std")]

use std::io::Write;
use std::process::{Command, Stdio};

fn run_agent(args: &[&str], stdin: &str) -> String {
    // target/<profile>/deps/agent_example-… → target/<profile>/examples/agent
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
