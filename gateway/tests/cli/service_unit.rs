//! The systemd unit in `gateway/packaging/` (issue 40, item 5), checked as systemd reads it:
//! `systemd-analyze verify` with the unit's binary path pointed at the gateway just built. A key
//! systemd ignores (a misspelled directive, a value it cannot parse) is only a warning to
//! `verify`, so the test fails on any line it prints, not only on its exit status.

use std::path::Path;
use std::process::Command;

use crate::support::*;

#[test]
fn the_service_unit_verifies_without_a_warning() {
    let analyze = Command::new("systemd-analyze").arg("--version").output();
    if analyze.is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must verify the service unit: .ci/run installs systemd-analyze"
        );
        eprintln!("note: systemd-analyze is missing: the service unit was NOT verified");
        return;
    }
    let unit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/toolgate-mcp-gateway.service"),
    )
    .expect("the unit is in the repository");
    assert!(
        unit.contains("ExecStart=/usr/local/bin/toolgate-mcp-gateway serve --config "),
        "{unit}"
    );
    let work = Work::new("service-unit");
    let path = work.write(
        "toolgate-mcp-gateway.service",
        &unit.replace("/usr/local/bin/toolgate-mcp-gateway", GATEWAY),
    );
    let verify = |path: &Path| {
        let output = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(path)
            .output()
            .expect("systemd-analyze runs");
        let (stdout, stderr) = text(&output);
        (output.status.success(), format!("{stdout}{stderr}"))
    };
    let (ok, said) = verify(&path);
    assert!(ok && said.trim().is_empty(), "{said}");
    // The check can fail: a directive systemd cannot parse is reported.
    let broken = work.write(
        "toolgate-mcp-gateway.service",
        &unit
            .replace("/usr/local/bin/toolgate-mcp-gateway", GATEWAY)
            .replace("Type=exec", "Type=bogus"),
    );
    let (_, said) = verify(&broken);
    assert!(said.contains("bogus"), "{said}");
}
