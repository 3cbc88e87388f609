//! Issue 39 through the gateway: an attack that comes back in a tool result. The official Python
//! SDK drives the gateway (one upstream, `provenance_upstream.py`, over stdio) in both protocol
//! revisions: a mail carries an attacker's IBAN and link, and the policy's provenance rules hold
//! the payment and the post that carry them, pay a payee from the trusted list or named by the
//! person (`_meta["dev.toolgate/personRequest"]`), and keep every value out of the audit log. The
//! checks live in `tests/mcp/provenance.py`.

use std::path::PathBuf;
use std::process::Command;

use crate::support::python;

fn drive(mode: &str) {
    let Some(python) = python() else { return };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("provenance-{mode}"));
    let output = Command::new(python)
        .arg(root.join("tests/mcp/provenance.py"))
        .arg(env!("CARGO_BIN_EXE_toolgate-mcp-gateway"))
        .arg(&work)
        .arg(mode)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn a_payee_and_a_link_from_a_mail_are_held_the_persons_own_run_on_2025_11_25() {
    drive("legacy");
}

#[test]
fn a_payee_and_a_link_from_a_mail_are_held_the_persons_own_run_on_2026_07_28() {
    drive("2026-07-28");
}
