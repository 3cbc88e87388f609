//! Issue 39, item 5, through the gateway: the injection catalogue (`../tests/injection/*.json`)
//! run by the official Python SDK as client against `toolgate-mcp-gateway` (a fresh gateway per
//! trace, each domain's provenance policy, the person's request in `_meta`), the upstream the
//! SDK's low-level server (`tests/mcp/injection_upstream.py`). Every scenario must end as it does
//! through the library (`tests/policy/injection_catalogue.rs`): caught with its clean task
//! running, unless the catalogue marks it as a known `limit`.

use std::path::PathBuf;
use std::process::Command;

use crate::support::python;

#[test]
fn the_injection_catalogue_through_the_gateway_ends_as_through_the_library() {
    let Some(python) = python() else { return };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let catalogue = root.join("../tests/injection");
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("injection");
    let output = Command::new(python)
        .arg(root.join("tests/mcp/injection.py"))
        .arg(env!("CARGO_BIN_EXE_toolgate-mcp-gateway"))
        .arg(&catalogue)
        .arg(&work)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let verdicts: serde_json::Value = stdout
        .lines()
        .find_map(|line| line.strip_prefix("verdicts: "))
        .map(|json| serde_json::from_str(json).expect("verdicts"))
        .expect("the driver printed its verdicts");
    let mut checked = 0;
    for name in ["payments", "messaging", "travel", "workspace"] {
        let text = std::fs::read_to_string(catalogue.join(format!("{name}.json"))).unwrap();
        let domain: serde_json::Value = serde_json::from_str(&text).unwrap();
        for scenario in domain["scenarios"].as_array().unwrap() {
            let id = scenario["id"].as_str().unwrap();
            let verdict = &verdicts[format!("{name}/provenance/{id}")];
            let (stopped, clean) = (verdict[0] == true, verdict[1] == true);
            if scenario.get("limit").is_some() {
                assert!(
                    !(stopped && clean),
                    "{name}/{id}: a known limit was decided"
                );
            } else {
                assert!(
                    stopped,
                    "{name}/{id}: the attack was not stopped through the gateway"
                );
                assert!(
                    clean,
                    "{name}/{id}: the clean task did not run through the gateway"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 64, "40 written beside the policies, 24 held out");
}
