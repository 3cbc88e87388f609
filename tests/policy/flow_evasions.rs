//! Evasions of flow rules and sum caps. Every test asserts the SAFE behaviour: a
//! failing test is a finding (a call got through that a flow rule or a sum cap should have
//! stopped, a panic or hang, or an argument value in a denial).
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use toolgate::policy::Layers;
use toolgate::policy::Shadow;

use crate::common::{block_on, counted};
use crate::flow_setup::*;
use serde_json::{Value, json};
use toolgate::clock::ManualClock;
use toolgate::definition::BoxFuture;
use toolgate::limits::{MemoryRateCounters, RateCounters, SqliteRateCounters};
use toolgate::*;

/// Every tool allowed except `ask` (asked) by rules; `extra` on top.
fn asking(ask: &[&str], extra: &str, registry: &ToolRegistry) -> RulePolicy {
    let rules: Vec<Value> = registry
        .specs()
        .map(|spec| {
            let action = if ask.contains(&spec.name.as_str()) { "ask" } else { "allow" };
            json!({"id": format!("r-{}", spec.name), "tool": spec.name, "action": action, "reason": "fine"})
        })
        .collect();
    policy_with(Some(Value::Array(rules)), extra, registry)
        .unwrap_or_else(|error| panic!("{error}"))
}

fn call_as(
    controller: &ToolController,
    principal: Option<&str>,
    tool: &str,
    arguments: Value,
) -> &'static str {
    let mut tool_call = ToolCall::new("c", tool, arguments);
    if let Some(id) = principal {
        tool_call = tool_call.with_principal(Principal::new(id, Vec::<String>::new()));
    }
    outcome_word(controller.handle(tool_call))
}

fn held(outcome: Outcome) -> ApprovalRequest {
    match outcome {
        Outcome::PendingApproval(request) => request,
        Outcome::Completed(result) => panic!("expected a held call, got {}", result.content),
    }
}

fn advance(clock: &ManualClock, ms: u64) {
    clock.advance(Duration::from_millis(ms));
}

const TRIFECTA: &str = r#"
  "labels": {"private_data": ["read_file", "read_any", "db__*"],
             "external_egress": ["send_email", "web_fetch", "mail"]},
  "flows": [
    {"id": "egress-after-private", "label": "external_egress", "action": "ask",
     "reason": "this session read private data: a person confirms anything leaving",
     "after": {"label": "private_data", "within": "session"}},
    {"id": "no-fetch-after-secrets", "tool": "web_fetch", "action": "deny",
     "reason": "no fetching within an hour of reading secrets",
     "after": {"tool": "read_file", "within": "hour",
               "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}
  ]"#;

/// Only the hour-long deny rule (no session-long ask to hide what the deny does).
const SECRETS: &str = r#"
  "flows": [
    {"id": "no-fetch-after-secrets", "tool": "web_fetch", "action": "deny",
     "reason": "no fetching within an hour of reading secrets",
     "after": {"label": "readers", "within": "hour",
               "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}
  ],
  "labels": {"readers": ["read_file", "read_any"]}"#;

const READ_THEN_WRITE: &str = r#"
  "flows": [{"id": "read-before-write", "tool": "write_file", "action": "deny",
     "reason": "a file is written only after it was read in this session",
     "unless_after": {"tool": "read_file", "within": "session",
                      "same": {"earlier": "/path", "now": "/path", "as_path": true}}}]"#;

// ---- labels ----------------------------------------------------------------------------------

#[test]
fn label_tool_name_spellings_never_run_and_never_dodge() {
    let (controller, _, runs) = controller(TRIFECTA, MemoryRateCounters::default());
    for spelling in [
        "Read_File",
        "read_file ",
        " read_file",
        "read_fіle",
        "read_file\0",
        "db__",
    ] {
        assert_eq!(
            call(&controller, spelling, json!({"path": "/srv/secrets/k"})),
            "deny",
            "{spelling:?}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // The real one is recorded; each egress tool then asks or denies.
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "allow"
    );
    assert_eq!(call(&controller, "web_fetch", json!({"url": "u"})), "deny");
    assert_eq!(call(&controller, "send_email", json!({"to": "x"})), "ask");
    assert_eq!(call(&controller, "mail", json!({"to": ["x"]})), "ask");
}

#[test]
fn tools_registered_later_carry_their_labels_and_are_judged_restrictively() {
    let runs = Arc::new(AtomicUsize::new(0));
    let path = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let registry = |names: &[&str]| {
        ToolRegistry::new(names.iter().map(|name| counted(name, path.clone(), &runs))).unwrap()
    };
    // A label by exact name naming a tool not registered yet, and one by pattern.
    let text = r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
        "labels": {"private_data": ["db__*", "read_secret"], "external_egress": ["web_*"]},
        "flows": [{"id": "no-egress-after-secret-paths", "label": "external_egress", "action": "deny",
                   "reason": "r", "after": {"label": "private_data", "within": "session",
                   "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}]}"#;
    for later in ["db__export", "read_secret"] {
        let first = registry(&["db__query", "web_fetch"]);
        let policy = RulePolicy::from_json(text, &first).unwrap();
        let controller = ToolController::try_new(first, policy).unwrap();
        controller
            .replace_registry(registry(&["db__query", later, "web_fetch", "web_post"]))
            .unwrap();
        // A public path on a tool whose condition was never compiled: it cannot be judged, so it
        // is recorded (what restricts must see it).
        assert_eq!(
            call(&controller, later, json!({"path": "/srv/secrets/x"})),
            "allow"
        );
        assert_eq!(call(&controller, "web_post", json!({})), "deny", "{later}");
        assert_eq!(call(&controller, "web_fetch", json!({})), "deny", "{later}");
    }
}

// ---- `when` on the earlier call ------------------------------------------------------------------

#[test]
fn earlier_when_path_spellings_never_dodge_a_deny() {
    let spellings = [
        "/srv/secrets/k",
        "/srv//secrets/k",
        "//srv/secrets/k",
        "///srv/secrets/k",
        "/srv/./secrets/k",
        "/srv/secrets/./k",
        "/srv/public/../secrets/k",
        "/../srv/secrets/k",
        "/srv/secrets/k/",
        "/srv/secrets/k/.",
        "/srv/secrets/x/../k",
        "secrets/k",
        "./srv/secrets/k",
        "~/k",
        "~root/../../srv/secrets/k",
        "$HOME/../../srv/secrets/k",
        "${HOME}/x",
        "/srv/%73ecrets/k",
        "/srv/secrets%2fk",
        "/srv\\secrets\\k",
        "C:/srv/secrets/k",
        "file:///srv/secrets/k",
        "/srv/secrets\u{0}/k",
        "/srv/secrets/\u{85}k",
    ];
    for spelling in spellings {
        let (controller, _, _) = controller(SECRETS, MemoryRateCounters::default());
        assert_eq!(
            call(&controller, "read_file", json!({"path": spelling})),
            "allow",
            "{spelling:?}"
        );
        assert_eq!(
            call(&controller, "web_fetch", json!({})),
            "deny",
            "read {spelling:?} then fetched"
        );
    }
    // With a working directory, relative spellings are judged against it.
    let paths = r#""paths": {"working_directory": "/srv/work"},"#;
    for spelling in [
        "../secrets/k",
        "./../secrets/k",
        "x/../../secrets/k",
        "../../srv/secrets/k",
    ] {
        let (controller, _, _) =
            controller(&format!("{paths}{SECRETS}"), MemoryRateCounters::default());
        assert_eq!(
            call(&controller, "read_file", json!({"path": spelling})),
            "allow"
        );
        assert_eq!(
            call(&controller, "web_fetch", json!({})),
            "deny",
            "read {spelling:?} then fetched"
        );
    }
    // Case-insensitive file systems: other cases and look-alikes.
    let paths = r#""paths": {"case_insensitive": true},"#;
    for spelling in [
        "/SRV/Secrets/k",
        "/srv/SECRE~1/k",
        "/srv/secrets./k",
        "/srv/ѕecrets/k",
        "/srv/secrets /k",
    ] {
        let (controller, _, _) =
            controller(&format!("{paths}{SECRETS}"), MemoryRateCounters::default());
        assert_eq!(
            call(&controller, "read_file", json!({"path": spelling})),
            "allow"
        );
        assert_eq!(
            call(&controller, "web_fetch", json!({})),
            "deny",
            "read {spelling:?} then fetched"
        );
    }
}

#[test]
fn earlier_when_wrong_json_types_never_dodge_a_deny() {
    for value in [
        json!(12),
        json!(["/srv/secrets/k"]),
        json!({"path": "/srv/secrets/k"}),
        json!(null),
        json!(true),
        json!([]),
    ] {
        let (controller, _, _) = controller(SECRETS, MemoryRateCounters::default());
        assert_eq!(
            call(&controller, "read_any", json!({"path": value})),
            "allow",
            "{value}"
        );
        assert_eq!(
            call(&controller, "web_fetch", json!({})),
            "deny",
            "read {value} then fetched"
        );
    }
}

// ---- `same` -------------------------------------------------------------------------------------

const NO_DOUBLE_SETTLE: &str = r#"
  "flows": [{"id": "settle-once", "tool": "settle", "action": "deny",
     "reason": "an order is settled once a day",
     "after": {"tool": "settle", "within": "day", "same": {"earlier": "/order", "now": "/order"}}}]"#;

#[test]
fn same_json_spellings_of_one_value_meet() {
    let pairs = [
        (r#"{"order": 42}"#, r#"{"order": 42.0}"#),
        (r#"{"order": 42}"#, r#"{"order": 4.2e1}"#),
        (r#"{"order": 42.5}"#, r#"{"order": 425e-1}"#),
        (
            r#"{"order": {"a": 1, "b": 2}}"#,
            r#"{"order": {"b": 2, "a": 1.0}}"#,
        ),
        (r#"{"order": "A"}"#, r#"{"order": "\u0041"}"#),
        (r#"{"order": "é"}"#, r#"{"order": "\u00e9"}"#),
        (r#"{"order": [1, 2]}"#, r#"{"order": [1.0, 2e0]}"#),
    ];
    for (first, second) in pairs {
        let (controller, _, _) = controller(NO_DOUBLE_SETTLE, MemoryRateCounters::default());
        let first: Value = serde_json::from_str(first).unwrap();
        let second: Value = serde_json::from_str(second).unwrap();
        assert_eq!(call(&controller, "settle", first.clone()), "allow");
        assert_eq!(
            call(&controller, "settle", second.clone()),
            "deny",
            "{first} then {second}"
        );
    }
}

const NO_REPEAT_MAIL: &str = r#"
  "flows": [{"id": "no-repeat-mail", "tool": "mail", "action": "deny",
     "reason": "a recipient is mailed at most once an hour",
     "after": {"tool": "mail", "within": "hour", "same": {"earlier": "/to", "now": "/to"}}}]"#;

/// A list is one value to `same`: reordering or splitting the recipients is a fresh value, where
/// a limit's key counts a list by its elements.
#[test]
fn same_over_a_list_is_dodged_by_reordering_or_splitting_it() {
    let mut got = Vec::new();
    for second in [
        json!(["b@x", "a@x"]),
        json!(["a@x"]),
        json!(["a@x", "a@x", "b@x"]),
        json!([["a@x"], "b@x"]),
    ] {
        let (controller, _, _) = controller(NO_REPEAT_MAIL, MemoryRateCounters::default());
        assert_eq!(
            call(&controller, "mail", json!({"to": ["a@x", "b@x"]})),
            "allow"
        );
        let result = call(&controller, "mail", json!({"to": second.clone()}));
        if result != "deny" {
            got.push(format!("{second} -> {result}"));
        }
    }
    assert!(got.is_empty(), "a@x mailed again within the hour: {got:?}");
}

const NO_RUN_DOWNLOADED: &str = r#"
  "flows": [{"id": "no-run-downloaded", "tool": "run_file", "action": "deny",
     "reason": "a downloaded file is not run",
     "after": {"tool": "download", "within": "session",
               "same": {"earlier": "/path", "now": "/path", "as_path": true}}}]"#;

#[test]
fn same_as_path_spellings_never_dodge_a_deny() {
    for (downloaded, run) in [
        ("/tmp/x", "/tmp/x/"),
        ("/tmp/x", "/tmp//x"),
        ("/tmp/x", "//tmp/x"),
        ("/tmp/x", "/tmp/./x"),
        ("/tmp/x", "/tmp/y/../x"),
        ("/tmp/x/", "/tmp/x"),
        ("~/x", "/tmp/x"),
        ("$TMP/x", "/tmp/x"),
        ("/tmp/x", "~/x"),
        ("/tmp/x", "/tmp/%78"),
        ("/tmp/x", "tmp/x"),
    ] {
        let (controller, _, _) = controller(NO_RUN_DOWNLOADED, MemoryRateCounters::default());
        assert_eq!(
            call(&controller, "download", json!({"path": downloaded})),
            "allow"
        );
        assert_eq!(
            call(&controller, "run_file", json!({"path": run})),
            "deny",
            "{downloaded} then {run}"
        );
    }
    let paths = r#""paths": {"case_insensitive": true},"#;
    for (downloaded, run) in [
        ("/tmp/X", "/TMP/x"),
        ("/tmp/x", "/tmp/X."),
        ("/tmp/x", "/tmp/х"),
    ] {
        let (controller, _, _) = controller(
            &format!("{paths}{NO_RUN_DOWNLOADED}"),
            MemoryRateCounters::default(),
        );
        assert_eq!(
            call(&controller, "download", json!({"path": downloaded})),
            "allow"
        );
        assert_eq!(
            call(&controller, "run_file", json!({"path": run})),
            "deny",
            "{downloaded} then {run}"
        );
    }
}

#[test]
fn unless_after_same_proves_nothing_with_a_spelling_no_check_can_read() {
    let (controller, _, _) = controller(READ_THEN_WRITE, MemoryRateCounters::default());
    for (read, write) in [
        ("~/a", "~/a"),
        ("$HOME/a", "$HOME/a"),
        ("a", "a"),
        ("/srv/%61", "/srv/%61"),
        ("/srv/a", "/srv/b"),
        ("/srv/a", "/SRV/a"),
    ] {
        let _ = call(&controller, "read_file", json!({"path": read}));
        assert_eq!(
            call(&controller, "write_file", json!({"path": write})),
            "deny",
            "{read} then {write}"
        );
    }
}

/// A sum cap: at most 10,000 cents a day per order.
const PAY_CAP: &str = r#"
  "limits": [{"id": "pay-cap", "tool": "pay", "sum": "/cents", "key": {"pointer": "/order"},
              "max": 10000, "per": "day", "over": "deny", "reason": "at most 10,000 cents a day per order"}]"#;

mod deployment;
mod ordering;
mod sums;
