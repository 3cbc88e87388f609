//! Evasion classes, each a catalogue of spellings an attacker would try against a
//! realistic policy: paths, commands, lists and numbers. (Registry replacement has its own file:
//! `fits_registry.rs`.) Every case asserts the decision the policy must reach; a
//! spelling that evades a deny or ask rule fails its case by name.

use std::sync::Arc;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::rules::{LoadProblem, PolicyLoadError};
use toolgate::*;

/// The tools the evasion catalogues (and the reasons' cases) are judged against.
pub(super) fn tools() -> ToolRegistry {
    let runs = Arc::default();
    let string = json!({"type": "string"});
    registry([
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": string}, "required": ["path"]}),
            &runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {"command": string}, "required": ["command"]}),
            &runs,
        ),
        counted(
            "exec",
            json!({"type": "object", "properties": {"argv": {"type": "array", "items": string}}, "required": ["argv"]}),
            &runs,
        ),
        counted(
            "copy",
            json!({"type": "object", "properties": {
                "paths": {"type": "array", "items": string},
                "files": {"type": "array", "items": {"type": "object", "properties": {"path": string, "mode": string}}},
                "pair": {"type": "array", "prefixItems": [string, string]}
            }}),
            &runs,
        ),
        counted(
            "fetch",
            json!({"type": "object", "properties": {"port": {"type": "number"}, "count": {"type": "number"}, "url": string}}),
            &runs,
        ),
    ])
}

pub(super) fn load(text: &str) -> RulePolicy {
    RulePolicy::from_json(text, &tools()).unwrap_or_else(|error| panic!("{error}"))
}

fn load_problems(text: &str) -> Vec<LoadProblem> {
    match RulePolicy::from_json(text, &tools()) {
        Err(PolicyLoadError::Invalid { problems }) => problems,
        other => panic!("expected load problems, got {other:?}"),
    }
}

/// Checks every (arguments, expected action) pair and reports all evasions at once.
fn expect_all(policy: &RulePolicy, tool: &str, cases: &[(Value, PolicyAction)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(arguments, expected)| {
            let got = policy.decide_arguments(tool, arguments).action;
            (got != *expected).then(|| format!("{arguments}: {got} instead of {expected}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(cases.len() >= 10, "a catalogue has at least 10 cases");
}

use PolicyAction::{Allow, Ask, Deny};

// ---- each class found as a witness ----------------------------------------------------------------
//
// A policy written the way an author slips — a raw glob for a directory, an exact argv for a
// prefix, `every` for `some`, a closed range for an open one — diffed against the policy they
// meant: the analysis finds the call that slips through, and both policies decide it apart.

fn witness_between(intended: &str, written: &str, tool: &str) -> Value {
    use toolgate::rules::analysis::{self, Analysed, ToolDiff};
    let registry = tools();
    let diffs = analysis::diff(
        &Analysed::policy(load(intended)),
        &Analysed::policy(load(written)),
        &registry,
    );
    let found = diffs.iter().find(|diff| diff.tool() == tool).unwrap();
    let ToolDiff::Differs { witnesses, .. } = found else {
        panic!("no witness on {tool}: {found:?}")
    };
    // The call that slips through: denied as intended, not denied as written.
    let slipped = witnesses
        .iter()
        .find(|witness| witness.old.action == Deny && witness.new.action != Deny)
        .unwrap_or_else(|| panic!("nothing slips through on {tool}: {witnesses:?}"));
    slipped.arguments.clone()
}

#[test]
fn each_evasion_class_is_found_as_a_witness_by_the_diff() {
    let allow_all = |tool: &str| {
        format!(r#"{{"id": "all", "tool": "{tool}", "action": "allow", "reason": "r"}}"#)
    };
    // Paths: a raw glob on the directory's children misses other spellings of what is inside.
    let intended = format!(
        r#"{{"rules": [{}, {{"id": "secrets", "tool": "read_file", "action": "deny", "reason": "r",
            "when": {{"path_within": {{"pointer": "/path", "roots": ["/work/secrets"]}}}}}}]}}"#,
        allow_all("read_file")
    );
    let written = format!(
        r#"{{"rules": [{}, {{"id": "secrets", "tool": "read_file", "action": "deny", "reason": "r",
            "when": {{"glob": {{"pointer": "/path", "pattern": "/work/secrets/*", "raw": true}}}}}}]}}"#,
        allow_all("read_file")
    );
    // (The first found is a relative path: no working directory, so the intended rule cannot
    // judge it and denies; the raw glob does not match it.)
    let slipped = witness_between(&intended, &written, "read_file");
    assert!(slipped["path"].is_string(), "{slipped}");

    // Commands: an exact argv where a prefix was meant: one more word gets through.
    let intended = format!(
        r#"{{"rules": [{}, {{"id": "push", "tool": "exec", "action": "deny", "reason": "r",
            "when": {{"argv_prefix": {{"pointer": "/argv", "prefix": ["git", "push"]}}}}}}]}}"#,
        allow_all("exec")
    );
    let written = format!(
        r#"{{"rules": [{}, {{"id": "push", "tool": "exec", "action": "deny", "reason": "r",
            "when": {{"equals": {{"pointer": "/argv", "value": ["git", "push"]}}}}}}]}}"#,
        allow_all("exec")
    );
    let slipped = witness_between(&intended, &written, "exec");
    assert_eq!(slipped["argv"][0], "git", "{slipped}");

    // Lists: `every` where `some` was meant: one secret among plain paths gets through.
    let intended = format!(
        r#"{{"rules": [{}, {{"id": "secret", "tool": "copy", "action": "deny", "reason": "r",
            "when": {{"some": {{"pointer": "/paths", "condition": {{"path_within": {{"pointer": "", "roots": ["/work/secrets"]}}}}}}}}}}]}}"#,
        allow_all("copy")
    );
    let written = intended.replace(r#""some""#, r#""every""#);
    let slipped = witness_between(&intended, &written, "copy");
    assert!(slipped["paths"].as_array().unwrap().len() >= 2, "{slipped}");

    // Numbers: a closed range where an open one was meant: past its top gets through.
    let intended = format!(
        r#"{{"rules": [{}, {{"id": "big", "tool": "fetch", "action": "deny", "reason": "r",
            "when": {{"range": {{"pointer": "/count", "min": 1000}}}}}}]}}"#,
        allow_all("fetch")
    );
    let written = intended.replace(r#""min": 1000"#, r#""min": 1000, "max": 99999"#);
    let slipped = witness_between(&intended, &written, "fetch");
    assert!(slipped["count"].as_f64().unwrap() > 99_999.0, "{slipped}");
}

mod commands;
mod lists;
mod numbers;
mod paths;
