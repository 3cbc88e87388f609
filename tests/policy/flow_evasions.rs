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

// ---- sum caps -------------------------------------------------------------------------------------

const PAY_CAP: &str = r#"
  "limits": [{"id": "pay-cap", "tool": "pay", "sum": "/cents", "key": {"pointer": "/order"},
              "max": 10000, "per": "day", "over": "deny", "reason": "at most 10,000 cents a day per order"}]"#;

#[test]
fn sum_amounts_that_cannot_be_added_exactly_are_denied_and_count_nothing() {
    let (controller, _, _) = controller(PAY_CAP, MemoryRateCounters::default());
    let texts = [
        "10.5",
        "1e2",
        "100.0",
        "-1",
        "-0",
        "-0.0",
        "1e20",
        "18446744073709551615",
        "18446744073709551616",
        "9007199254740993",
        "\"100\"",
        "null",
        "true",
        "[100]",
        "{\"n\": 100}",
        "1e400",
    ];
    for text in texts {
        let Ok(cents) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let result = call(&controller, "pay", json!({"order": "A", "cents": cents}));
        assert_eq!(result, "deny", "cents {text}");
    }
    assert_eq!(
        call(&controller, "pay", json!({"order": "A"})),
        "deny",
        "missing"
    );
    // Nothing was counted: the whole cap is still there, and not a cent more.
    assert_eq!(
        call(&controller, "pay", json!({"order": "A", "cents": 10_000})),
        "allow"
    );
    assert_eq!(
        call(&controller, "pay", json!({"order": "A", "cents": 1})),
        "deny"
    );
    // A weight of 0 runs and adds nothing.
    assert_eq!(
        call(&controller, "pay", json!({"order": "A", "cents": 0})),
        "allow"
    );
}

#[test]
fn sum_keys_spellings_and_many_keys() {
    let (controller, _, _) = controller(PAY_CAP, MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "pay", json!({"order": 7, "cents": 10_000})),
        "allow"
    );
    for order in [json!(7.0), json!([7]), json!([[7], 7]), json!(7e0)] {
        assert_eq!(
            call(&controller, "pay", json!({"order": order, "cents": 1})),
            "deny",
            "{order}"
        );
    }
    // A list of orders takes the amount from each; more than 64 keys is refused.
    let many: Vec<Value> = (0..65).map(|i| json!(format!("o{i}"))).collect();
    assert_eq!(
        call(&controller, "pay", json!({"order": many, "cents": 1})),
        "deny"
    );
    let some: Vec<Value> = (0..64).map(|i| json!(format!("o{i}"))).collect();
    assert_eq!(
        call(&controller, "pay", json!({"order": some, "cents": 10_000})),
        "allow"
    );
    assert_eq!(
        call(&controller, "pay", json!({"order": "o63", "cents": 1})),
        "deny"
    );
    // Missing and null keys share one count.
    assert_eq!(call(&controller, "pay", json!({"cents": 10_000})), "allow");
    assert_eq!(
        call(&controller, "pay", json!({"order": null, "cents": 1})),
        "deny"
    );
    assert_eq!(
        call(&controller, "pay", json!({"order": [], "cents": 1})),
        "deny"
    );
}

#[test]
fn sum_window_edges_to_the_millisecond_in_memory_and_sqlite() {
    let file = scratch("sum-edge");
    let stores: Vec<Arc<dyn RateCounters>> = vec![
        Arc::new(MemoryRateCounters::default()),
        Arc::new(SqliteRateCounters::open(&file, "s").unwrap()),
    ];
    for counters in stores {
        let (controller, clock, _) = controller(PAY_CAP, counters);
        let pay = |cents: u64| call(&controller, "pay", json!({"order": "A", "cents": cents}));
        assert_eq!(pay(6_000), "allow");
        advance(&clock, 1);
        assert_eq!(pay(4_000), "allow");
        advance(&clock, DAY - 2);
        assert_eq!(pay(1), "deny", "one ms before the first leaves");
        advance(&clock, 1);
        assert_eq!(pay(6_001), "deny");
        assert_eq!(pay(6_000), "allow", "the first left exactly a day later");
        assert_eq!(pay(1), "deny");
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn a_huge_amount_approved_past_an_ask_cap_never_makes_room() {
    let ask_cap = PAY_CAP.replace(r#""over": "deny""#, r#""over": "ask""#);
    let file = scratch("huge");
    let stores: Vec<Arc<dyn RateCounters>> = vec![
        Arc::new(MemoryRateCounters::default()),
        Arc::new(SqliteRateCounters::open(&file, "s").unwrap()),
    ];
    for counters in stores {
        let (controller, _, _) = controller(&ask_cap, counters);
        for cents in [u64::MAX, 1 << 63, (1 << 63) - 1, u64::MAX] {
            // Held past the cap, or denied when the store cannot add up what it holds.
            if let Outcome::PendingApproval(request) = controller.handle(ToolCall::new(
                "c",
                "pay",
                json!({"order": "A", "cents": cents}),
            )) {
                let _ = controller
                    .resolve(ApprovalResponse::approve(request.approval_id))
                    .unwrap();
            }
        }
        // Whatever the store did with those (wrap, clamp, overflow), a small amount is not let
        // through unasked.
        assert_ne!(
            call(&controller, "pay", json!({"order": "A", "cents": 1})),
            "allow"
        );
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

// ---- windows -----------------------------------------------------------------------------------

#[test]
fn flow_window_edges_to_the_millisecond_in_memory_and_sqlite() {
    let file = scratch("flow-edge");
    let stores: Vec<Arc<dyn RateCounters>> = vec![
        Arc::new(MemoryRateCounters::default()),
        Arc::new(SqliteRateCounters::open(&file, "s").unwrap()),
    ];
    for counters in stores {
        let (controller, clock, _) = controller(SECRETS, counters);
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
            "allow"
        );
        advance(&clock, HOUR / 2);
        // A later read of a public path replaces nothing of the secret one's record.
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/public/k"})),
            "allow"
        );
        advance(&clock, HOUR / 2 - 1);
        assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
        advance(&clock, 1);
        assert_eq!(call(&controller, "web_fetch", json!({})), "allow");
        // A second secret read restarts the hour.
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
            "allow"
        );
        advance(&clock, HOUR - 1);
        assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

// ---- ordering: approvals, edits, async -----------------------------------------------------------

#[test]
fn an_approval_edited_to_an_unread_path_is_denied() {
    let Tools { registry, runs } = tools();
    let policy = asking(&["write_file"], READ_THEN_WRITE, &registry);
    let controller = ToolController::try_new(registry, policy).unwrap();
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/a"})),
        "allow"
    );
    let request =
        held(controller.handle(ToolCall::new("c", "write_file", json!({"path": "/srv/a"}))));
    let before = runs.load(Ordering::SeqCst);
    let result = controller
        .resolve(ApprovalResponse::approve_edited(
            request.approval_id,
            json!({"path": "/srv/b"}),
        ))
        .unwrap();
    assert!(result.is_error, "{}", result.content);
    assert_eq!(runs.load(Ordering::SeqCst), before);
}

#[test]
fn an_approval_edited_to_a_secret_path_is_recorded_as_the_secret_read() {
    let Tools { registry, .. } = tools();
    let policy = asking(&["read_file"], SECRETS, &registry);
    let controller = ToolController::try_new(registry, policy).unwrap();
    let request = held(controller.handle(ToolCall::new(
        "c",
        "read_file",
        json!({"path": "/srv/public/a"}),
    )));
    let result = controller
        .resolve(ApprovalResponse::approve_edited(
            request.approval_id,
            json!({"path": "/srv/secrets/k"}),
        ))
        .unwrap();
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
}

#[test]
fn a_write_held_before_its_read_was_recorded_runs_only_if_read_by_approval_time() {
    let Tools { registry, runs } = tools();
    let policy = asking(&["write_file"], READ_THEN_WRITE, &registry);
    let controller = ToolController::try_new(registry, policy).unwrap();
    // Held (by the rule) before any read: at approval the flow rule still judges.
    let request =
        held(controller.handle(ToolCall::new("c", "write_file", json!({"path": "/srv/a"}))));
    let before = runs.load(Ordering::SeqCst);
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(result.is_error, "{}", result.content);
    assert_eq!(runs.load(Ordering::SeqCst), before);
}

#[test]
fn handle_async_records_and_enforces_like_handle() {
    let (controller, _, _) = controller(TRIFECTA, MemoryRateCounters::default());
    let run = |tool: &str, arguments: Value| {
        outcome_word(block_on(
            controller.handle_async(ToolCall::new("c", tool, arguments)),
        ))
    };
    assert_eq!(run("web_fetch", json!({})), "allow");
    assert_eq!(run("read_file", json!({"path": "/srv/secrets/k"})), "allow");
    assert_eq!(run("web_fetch", json!({})), "deny");
    assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
    assert_eq!(run("send_email", json!({})), "ask");
}

#[test]
fn an_async_check_allowing_a_call_still_meets_the_flow_rules() {
    let Tools { registry, .. } = tools();
    // No rule for web_fetch: the default deny is a fallback, so the async check decides it.
    let rules = json!([{"id": "read", "tool": "read_file", "action": "allow", "reason": "r"}]);
    let policy = policy_with(Some(rules), SECRETS, &registry).unwrap();
    let check = |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(async { PolicyDecision::allow(Reason::from_static("classifier: fine")) })
    };
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_async_check(check, Duration::from_secs(5));
    assert_eq!(call(&controller, "web_fetch", json!({})), "allow");
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "allow"
    );
    assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
    assert_eq!(
        outcome_word(block_on(controller.handle_async(ToolCall::new(
            "c",
            "web_fetch",
            json!({})
        )))),
        "deny"
    );
}

/// A flow rule that asks when it cannot judge a `same` value returns its ask from `rate_slots`;
/// after approval that ask replaces the whole counting step — so no counter of the call is
/// checked or taken: a `deny` rate limit reached is not enforced, and the run is not counted.
#[test]
fn an_unjudgeable_ask_flow_hides_a_deny_limit_after_approval() {
    let extra = r#"
      "flows": [{"id": "read-before-write", "tool": "write_file", "action": "ask",
         "reason": "a file not read in this session: a person confirms the write",
         "unless_after": {"tool": "read_file", "within": "session",
                          "same": {"earlier": "/path", "now": "/path", "as_path": true}}}],
      "limits": [{"id": "one-write-an-hour", "tool": "write_file", "max": 1, "per": "hour",
                  "over": "deny", "reason": "one write an hour"}]"#;
    let (controller, _, runs) = controller(extra, MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/a"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/a"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/a"})),
        "deny",
        "the limit holds"
    );
    let mut ran_past_the_limit = 0;
    for _ in 0..3 {
        // Denied when proposed (the deny limit is reached), or — if held — not run when approved.
        let before = runs.load(Ordering::SeqCst);
        match controller.handle(ToolCall::new(
            "c",
            "write_file",
            json!({"path": "~/../srv/a"}),
        )) {
            Outcome::PendingApproval(request) => {
                let _ = controller.resolve(ApprovalResponse::approve(request.approval_id));
            }
            Outcome::Completed(result) => assert!(result.is_error, "{}", result.content),
        }
        ran_past_the_limit += runs.load(Ordering::SeqCst) - before;
    }
    assert_eq!(
        ran_past_the_limit, 0,
        "writes ran past a deny limit (\"a deny limit reached by then denies it\")"
    );
}

/// The same hole against a `deny` flow rule on the very call: any flow rule that cannot judge its
/// `same` value returns early from `Flows::slots`, discarding every other slot — so the deny rule
/// is not looked at even when the call is proposed (ask instead of deny), nor after approval.
#[test]
fn an_unjudgeable_ask_flow_hides_a_deny_flow_rule_on_the_same_call() {
    let extra = r#"
      "flows": [
        {"id": "no-write-after-fetch", "tool": "write_file", "action": "deny",
         "reason": "no writes within an hour of fetching untrusted content",
         "after": {"tool": "web_fetch", "within": "hour"}},
        {"id": "read-before-write", "tool": "write_file", "action": "ask",
         "reason": "a file not read in this session: a person confirms the write",
         "unless_after": {"tool": "read_file", "within": "session",
                          "same": {"earlier": "/path", "now": "/path", "as_path": true}}}]"#;
    let (controller, _, runs) = controller(extra, MemoryRateCounters::default());
    assert_eq!(call(&controller, "web_fetch", json!({})), "allow");
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/a"})),
        "deny"
    );
    let proposed = controller.handle(ToolCall::new(
        "c",
        "write_file",
        json!({"path": "~/../srv/a"}),
    ));
    let mut what = outcome_word_ref(&proposed).to_owned();
    if let Outcome::PendingApproval(request) = proposed {
        let before = runs.load(Ordering::SeqCst);
        let _ = controller
            .resolve(ApprovalResponse::approve(request.approval_id))
            .unwrap();
        what = format!(
            "held, then ran {} time(s) when approved",
            runs.load(Ordering::SeqCst) - before
        );
    }
    assert_eq!(what, "deny", "a write within the hour after a fetch");
}

fn outcome_word_ref(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Completed(result) if !result.is_error => "allow",
        Outcome::Completed(_) => "deny",
        Outcome::PendingApproval(_) => "ask",
    }
}

/// The stores keep "a time earlier than the last (a clock stepped back) as the last, which only
/// makes it count longer" — but a history's record *replaces* the earlier one, so a step back
/// moves the history's only time earlier and the window ends sooner.
#[test]
fn a_clock_stepped_back_never_shortens_a_flow_window() {
    let file = scratch("stepback");
    let stores: Vec<(&str, Arc<dyn RateCounters>)> = vec![
        ("memory", Arc::new(MemoryRateCounters::default())),
        (
            "sqlite",
            Arc::new(SqliteRateCounters::open(&file, "s").unwrap()),
        ),
    ];
    let mut shortened = Vec::new();
    for (name, counters) in stores {
        let (controller, clock, _) = controller(SECRETS, counters);
        clock.set(T0 + HOUR);
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
            "allow"
        );
        clock.set(T0); // NTP steps the clock back an hour
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/secrets/j"})),
            "allow"
        );
        clock.set(T0 + HOUR + HOUR / 2);
        if call(&controller, "web_fetch", json!({})) != "deny" {
            shortened.push(name);
        }
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
    assert!(
        shortened.is_empty(),
        "a secret read half an hour ago (by the later time) no longer counts: {shortened:?}"
    );
}

/// The same hole seen from a history: the approved call runs and is recorded nowhere, so a
/// `deny` flow rule looking for it never sees it.
#[test]
fn an_unjudgeable_ask_flow_hides_the_call_from_a_deny_history_after_approval() {
    let extra = r#"
      "flows": [
        {"id": "reread-asks", "tool": "read_file", "action": "ask",
         "reason": "a file written in this session is read back only with a person's say",
         "after": {"tool": "write_file", "within": "session",
                   "same": {"earlier": "/path", "now": "/path", "as_path": true}}},
        {"id": "no-fetch-after-secrets", "tool": "web_fetch", "action": "deny",
         "reason": "no fetching within an hour of reading secrets",
         "after": {"tool": "read_file", "within": "hour",
                   "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}]"#;
    let (controller, _, runs) = controller(extra, MemoryRateCounters::default());
    // A path no lexical check can read: judged a secret by the deny rule's history, and asked
    // about by the other rule ("cannot judge /path").
    let request = held(controller.handle(ToolCall::new(
        "c",
        "read_file",
        json!({"path": "~/../srv/secrets/k"}),
    )));
    let before = runs.load(Ordering::SeqCst);
    let _ = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        before + 1,
        "the approved read ran"
    );
    assert_eq!(
        call(&controller, "web_fetch", json!({})),
        "deny",
        "a fetch right after a secret read"
    );
}

// ---- layers, shadow ------------------------------------------------------------------------------

#[test]
fn a_lower_layers_flow_rule_holds_whatever_the_upper_one_allows() {
    let Tools { registry, .. } = tools();
    let upper = policy("", &registry);
    let lower = policy(TRIFECTA, &registry);
    let layers = Layers::new()
        .layer("org", upper)
        .unwrap()
        .layer("project", lower)
        .unwrap();
    let controller = ToolController::try_new(registry, layers).unwrap();
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "allow"
    );
    assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
    assert_eq!(call(&controller, "send_email", json!({})), "ask");
}

#[test]
fn a_shadow_keeps_the_enforced_flow_rules_and_records_nothing_of_the_candidates() {
    let Tools { registry, .. } = tools();
    let counters = Arc::new(MemoryRateCounters::default());
    let shadow = Shadow::new(
        policy(SECRETS, &registry),
        policy(READ_THEN_WRITE, &registry),
    );
    let controller = ToolController::try_new(registry, shadow)
        .unwrap()
        .with_rate_counters(Arc::clone(&counters));
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/a"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "allow"
    );
    assert_eq!(counters.held(), 1, "only the enforced history");
    assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
}

// ---- principals ----------------------------------------------------------------------------------

const BY_PRINCIPAL: &str = r#"
  "flows": [{"id": "no-fetch-after-secrets", "tool": "web_fetch", "action": "deny",
     "reason": "no fetching within an hour of reading secrets",
     "after": {"tool": "read_file", "within": "hour", "by": "principal",
               "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}]"#;

#[test]
fn by_principal_keeps_principals_apart_and_callers_without_one_together() {
    let (controller, _, _) = controller(BY_PRINCIPAL, MemoryRateCounters::default());
    assert_eq!(
        call_as(
            &controller,
            Some("alice"),
            "read_file",
            json!({"path": "/srv/secrets/k"})
        ),
        "allow"
    );
    assert_eq!(
        call_as(&controller, Some("alice"), "web_fetch", json!({})),
        "deny"
    );
    assert_eq!(
        call_as(
            &controller,
            None,
            "read_file",
            json!({"path": "/srv/secrets/k"})
        ),
        "allow"
    );
    assert_eq!(call_as(&controller, None, "web_fetch", json!({})), "deny");
}

/// `by: "principal"` promises "the principal's calls across sessions"; durable stores prefix
/// every counter with the session, so another session of the same principal sees nothing.
#[test]
fn by_principal_history_crosses_sessions_on_one_sqlite_file() {
    let file = scratch("principal");
    let (first, _, _) = controller(
        BY_PRINCIPAL,
        SqliteRateCounters::open(&file, "session-1").unwrap(),
    );
    assert_eq!(
        call_as(
            &first,
            Some("alice"),
            "read_file",
            json!({"path": "/srv/secrets/k"})
        ),
        "allow"
    );
    assert_eq!(
        call_as(&first, Some("alice"), "web_fetch", json!({})),
        "deny"
    );
    let (second, _, _) = controller(
        BY_PRINCIPAL,
        SqliteRateCounters::open(&file, "session-2").unwrap(),
    );
    let result = call_as(&second, Some("alice"), "web_fetch", json!({}));
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
    assert_eq!(
        result, "deny",
        "alice read secrets in session 1 and fetched in session 2 at once"
    );
}

// ---- full memory ---------------------------------------------------------------------------------

#[test]
fn a_full_memory_store_fails_closed_for_histories_and_sums() {
    let extra = format!("{SECRETS}, {}", PAY_CAP);
    let counters = Arc::new(MemoryRateCounters::with_capacity(2));
    let (controller, _, _) = controller(&extra, Arc::clone(&counters));
    assert_eq!(
        call(&controller, "pay", json!({"order": "A", "cents": 1})),
        "allow"
    );
    assert_eq!(
        call(&controller, "pay", json!({"order": "B", "cents": 1})),
        "allow"
    );
    // Full: a secret read cannot be recorded, so it does not run.
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "deny"
    );
    assert_eq!(
        call(&controller, "pay", json!({"order": "C", "cents": 1})),
        "deny"
    );
    assert_eq!(counters.held(), 2);
    // Weight-0 calls record nothing and run.
    assert_eq!(call(&controller, "web_fetch", json!({})), "allow");
}

#[test]
fn a_full_memory_store_still_sees_the_history_it_holds() {
    let counters = Arc::new(MemoryRateCounters::with_capacity(1));
    let (controller, _, _) = controller(SECRETS, Arc::clone(&counters));
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/j"})),
        "deny"
    );
    assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
}

// ---- policy reloads --------------------------------------------------------------------------------

/// A reload that only tightens the policy — one more private tool, a longer window, the label
/// renamed, the `after` condition widened or narrowed — keeps what the session already did: an
/// `after` history is its rule's own, named by the rule's id (round 4, item 16(b)).
#[test]
fn a_reload_that_only_tightens_keeps_the_history() {
    let mut forgotten = Vec::new();
    let loose = r#"
      "labels": {"private_data": ["read_file"]},
      "flows": [{"id": "egress-after-private", "tool": "web_fetch", "action": "deny", "reason": "r",
                 "after": {"label": "private_data", "within": "hour"}}]"#;
    let more_tools = loose.replace(r#"["read_file"]"#, r#"["read_file", "db__query"]"#);
    let longer = loose.replace(r#""within": "hour""#, r#""within": "day""#);
    let reworded = loose.replace(r#""reason": "r""#, r#""reason": "reworded""#);
    let renamed = loose.replace("private_data", "secret_data");
    let conditioned = loose.replace(
        r#""within": "hour"}"#,
        r#""within": "hour", "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/**"}}}"#,
    );
    let narrowed = loose.replace(
        r#""within": "hour"}"#,
        r#""within": "hour", "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}"#,
    );
    for (name, tighter) in [
        ("label gains a tool", more_tools),
        ("window lengthened", longer),
        ("reason reworded", reworded),
        ("label renamed", renamed),
        ("condition added that the call met", conditioned),
        // Stricter than the new rule alone (it did not record /srv/a), never looser.
        ("condition narrowed", narrowed),
    ] {
        let counters = Arc::new(MemoryRateCounters::default());
        let (controller, _, _) = controller(loose, Arc::clone(&counters));
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/a"})),
            "allow"
        );
        assert_eq!(call(&controller, "web_fetch", json!({})), "deny");
        let registry = tools().registry;
        controller
            .replace_policy(policy(&tighter, &registry))
            .unwrap();
        if call(&controller, "web_fetch", json!({})) != "deny" {
            forgotten.push(name);
        }
    }
    assert!(
        forgotten.is_empty(),
        "history forgotten after a tightening reload: {forgotten:?}"
    );
}

/// An `unless_after` history lets calls through, so a reload that changes what it records starts
/// it empty: kept calls recorded under another rule must not open the new one.
#[test]
fn a_reload_that_changes_an_unless_after_history_starts_it_empty() {
    let read_first = r#"
      "flows": [{"id": "read-before-write", "tool": "write_file", "action": "deny", "reason": "r",
                 "unless_after": {"tool": "read_file", "within": "session",
                                  "same": {"earlier": "/path", "now": "/path"}}}]"#;
    let (controller, _, _) = controller(read_first, MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/a"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/a"})),
        "allow"
    );
    let downloaded_first = read_first.replace(r#""tool": "read_file""#, r#""tool": "download""#);
    controller
        .replace_policy(policy(&downloaded_first, &tools().registry))
        .unwrap();
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/a"})),
        "deny",
        "a read recorded for the old rule is not a download"
    );
}

// ---- reasons ---------------------------------------------------------------------------------------

#[test]
fn no_denial_or_ask_echoes_an_argument_value() {
    const SECRET: &str = "Zq9SECRETv4l";
    let extra = format!(
        r#"{TRIFECTA_NO_LABELS}, "labels": {{"private_data": ["read_file"], "external_egress": ["send_email", "web_fetch"]}},
           {PAY}, {RUN}"#,
        TRIFECTA_NO_LABELS = r#""flows": [
            {"id": "egress-after-private", "label": "external_egress", "action": "ask", "reason": "private then egress",
             "after": {"label": "private_data", "within": "session"}},
            {"id": "no-run-downloaded", "tool": "run_file", "action": "deny", "reason": "downloaded",
             "after": {"tool": "download", "within": "session", "same": {"earlier": "/path", "now": "/path", "as_path": true}}}]"#,
        PAY = PAY_CAP,
        RUN = r#""paths": {}"#,
    );
    let (controller, _, _) = controller(&extra, MemoryRateCounters::default());
    let mut texts = Vec::new();
    let mut push = |outcome: Outcome| match outcome {
        Outcome::Completed(result) => texts.push(result.content),
        Outcome::PendingApproval(request) => texts.push(request.reason.to_string()),
    };
    let go = |tool: &str, arguments: Value| controller.handle(ToolCall::new("c", tool, arguments));
    push(go("read_file", json!({"path": format!("/srv/{SECRET}")})));
    push(go("send_email", json!({"to": SECRET})));
    push(go("download", json!({"path": format!("/tmp/{SECRET}")})));
    push(go("run_file", json!({"path": format!("/tmp/{SECRET}")})));
    push(go("run_file", json!({"path": format!("~/{SECRET}")})));
    push(go("run_file", json!({"path": format!("$HOME/{SECRET}")})));
    push(go("pay", json!({"order": SECRET, "cents": 10_000})));
    push(go("pay", json!({"order": SECRET, "cents": 1})));
    push(go("pay", json!({"order": SECRET, "cents": SECRET})));
    push(go("pay", json!({"order": SECRET, "cents": -1})));
    let many: Vec<String> = (0..70).map(|i| format!("{SECRET}{i}")).collect();
    push(go("pay", json!({"order": many, "cents": 1})));
    for text in &texts {
        assert!(!text.contains(SECRET), "a reason echoes a value: {text}");
    }
    assert!(
        texts.iter().any(|t| t.contains("no-run-downloaded")),
        "{texts:?}"
    );
}

// ---- panics and hangs ------------------------------------------------------------------------------

#[test]
fn hostile_sizes_neither_panic_nor_hang() {
    let extra = format!(
        "{NO_RUN_DOWNLOADED_ALONE}, {PAY}",
        NO_RUN_DOWNLOADED_ALONE = NO_RUN_DOWNLOADED,
        PAY = PAY_CAP
    );
    let (controller, _, _) = controller(&extra, MemoryRateCounters::default());
    let started = Instant::now();
    let long_path = format!("/{}", "a/../".repeat(100_000));
    assert_eq!(
        call(&controller, "download", json!({"path": long_path.clone()})),
        "allow"
    );
    assert_eq!(call(&controller, "run_file", json!({"path": "/"})), "deny");
    let deep = format!("{}1{}", "[".repeat(120), "]".repeat(120));
    let deep: Value = serde_json::from_str(&deep).unwrap();
    let _ = call(&controller, "pay", json!({"order": deep, "cents": 1}));
    let wide: Vec<Value> = (0..200_000).map(|i| json!(i)).collect();
    assert_eq!(
        call(&controller, "pay", json!({"order": wide, "cents": 1})),
        "deny"
    );
    let _ = call(&controller, "settle", json!({"order": "x".repeat(1 << 20)}));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
