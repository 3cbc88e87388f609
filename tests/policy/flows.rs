//! Flow rules: labels, what a session did before deciding what it may do next, sum caps — in
//! memory, in a SQLite file shared by real processes and in PostgreSQL shared by several — and the
//! attacks: spellings that dodge a label or a path, sessions that restart, races, full histories.
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use crate::postgres_support;
use toolgate::PolicyOutcome;
use toolgate::policy::Layers;
use toolgate::policy::Shadow;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::counted;
use crate::flow_setup::*;
use serde_json::{Value, json};
use toolgate::limits::{
    MemoryRateCounters, PostgresRateCounters, RateCounters, SqliteRateCounters,
};
use toolgate::rules::PolicyLoadError;
use toolgate::*;

const TRIFECTA: &str = r#"
  "labels": {"private_data": ["read_file", "db__*"], "untrusted_content": ["web_fetch"],
             "external_egress": ["send_email", "web_fetch"]},
  "flows": [
    {"id": "egress-after-private", "label": "external_egress", "action": "ask",
     "reason": "this session read private data: a person confirms anything leaving",
     "after": {"label": "private_data", "within": "session"}},
    {"id": "no-fetch-after-secrets", "tool": "web_fetch", "action": "deny",
     "reason": "no fetching within an hour of reading secrets",
     "after": {"tool": "read_file", "within": "hour",
               "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}
  ]"#;

#[test]
fn the_lethal_trifecta_private_data_then_egress_asks() {
    let (controller, _, runs) = controller(TRIFECTA, MemoryRateCounters::default());
    // Before anything private: egress runs.
    assert_eq!(
        call(&controller, "send_email", json!({"to": "a@example.com"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/public/a"})),
        "allow"
    );
    // After a private read, each egress tool asks; approved, it runs once.
    let Outcome::PendingApproval(request) = controller.handle(ToolCall::new(
        "c9",
        "send_email",
        json!({"to": "x@evil.example"}),
    )) else {
        panic!("held")
    };
    assert!(
        request.reason.as_str().contains("egress-after-private"),
        "{}",
        request.reason
    );
    let before = runs.load(Ordering::SeqCst);
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
    // A label given by pattern: a db__ tool is private data too.
    let (controller, _, _) = self::controller(TRIFECTA, MemoryRateCounters::default());
    assert_eq!(call(&controller, "db__query", json!({})), "allow");
    assert_eq!(
        call(&controller, "web_fetch", json!({"url": "https://x"})),
        "ask"
    );
}

#[test]
fn a_tool_registered_later_carries_the_label_its_pattern_gives() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = |names: &[&str]| {
        ToolRegistry::new(
            names
                .iter()
                .map(|name| counted(name, json!({"type": "object"}), &runs)),
        )
        .unwrap()
    };
    let text = r#"{"rules": [{"id": "db", "tool": "db__*", "action": "allow", "reason": "r"},
                             {"id": "fetch", "tool": "web_fetch", "action": "allow", "reason": "r"}],
        "labels": {"private_data": ["db__*"], "external_egress": ["web_fetch"]},
        "flows": [{"id": "egress-after-private", "label": "external_egress", "action": "ask",
                   "reason": "r", "after": {"label": "private_data", "within": "session"}}]}"#;
    let first = registry(&["db__query", "web_fetch"]);
    let policy = RulePolicy::from_json(text, &first).unwrap();
    let controller = ToolController::try_new(first, policy).unwrap();
    controller
        .replace_registry(registry(&["db__query", "db__export", "web_fetch"]))
        .unwrap();
    assert_eq!(call(&controller, "db__export", json!({})), "allow");
    assert_eq!(call(&controller, "web_fetch", json!({})), "ask");
}

#[test]
fn reading_secrets_denies_fetching_for_an_hour_whatever_the_spelling() {
    for spelling in [
        "/srv/secrets/key",
        "/srv/./secrets/key",
        "/srv//secrets/x/../key",
        "/srv/public/../secrets/k",
    ] {
        let (controller, clock, _) = controller(TRIFECTA, MemoryRateCounters::default());
        assert_eq!(
            call(&controller, "read_file", json!({"path": spelling})),
            "allow"
        );
        assert_eq!(
            call(&controller, "web_fetch", json!({"url": "https://x"})),
            "deny",
            "{spelling}"
        );
        clock.advance(std::time::Duration::from_millis(HOUR));
        // The hour has passed: only the session-long ask remains.
        assert_eq!(
            call(&controller, "web_fetch", json!({"url": "https://x"})),
            "ask",
            "{spelling}"
        );
    }
    // A path no lexical check can read is judged as a secret (what restricts must see it).
    let (controller, _, _) = controller(TRIFECTA, MemoryRateCounters::default());
    assert_eq!(
        call(
            &controller,
            "read_file",
            json!({"path": "~/../srv/secrets/k"})
        ),
        "allow"
    );
    assert_eq!(
        call(&controller, "web_fetch", json!({"url": "https://x"})),
        "deny"
    );
}

const READ_THEN_WRITE: &str = r#"
  "flows": [{"id": "read-before-write", "tool": "write_file", "action": "deny",
     "reason": "a file is written only after it was read in this session",
     "unless_after": {"tool": "read_file", "within": "session",
                      "same": {"earlier": "/path", "now": "/path", "as_path": true}}}]"#;

#[test]
fn a_file_is_written_only_after_it_was_read() {
    let (controller, _, _) = controller(READ_THEN_WRITE, MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/a"})),
        "deny"
    );
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/a"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/./a"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/b"})),
        "deny"
    );
    // Reading a spelling no check can read proves nothing.
    assert_eq!(
        call(&controller, "read_file", json!({"path": "~/c"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "write_file", json!({"path": "~/c"})),
        "deny"
    );
}

const REFUND_CAP: &str = r#"
  "limits": [{"id": "refunds-per-order", "tool": "refund", "sum": "/cents", "key": {"pointer": "/order"},
              "max": 10000, "per": "day", "over": "deny",
              "reason": "the refunds of one order stay within 10,000 cents a day"}]"#;

#[test]
fn the_refunds_of_one_order_stay_within_their_daily_sum() {
    let (controller, clock, _) = controller(REFUND_CAP, MemoryRateCounters::default());
    let refund = |order: &str, cents: i64| {
        call(
            &controller,
            "refund",
            json!({"order": order, "cents": cents}),
        )
    };
    assert_eq!(refund("A", 6000), "allow");
    assert_eq!(refund("A", 4000), "allow");
    assert_eq!(refund("A", 1), "deny");
    assert_eq!(
        refund("B", 10_000),
        "allow",
        "another order has its own sum"
    );
    assert_eq!(
        refund("A", -5),
        "deny",
        "a negative amount is no way to make room"
    );
    assert_eq!(refund("C", 10_001), "deny");
    clock.advance(std::time::Duration::from_millis(24 * HOUR));
    assert_eq!(refund("A", 10_000), "allow", "a day later");
}

/// What a call denied past a flow rule or a sum says, and that it names no argument value.
#[test]
fn refusals_name_the_rule_never_a_value() {
    let (controller, _, _) = controller(REFUND_CAP, MemoryRateCounters::default());
    let _ = call(
        &controller,
        "refund",
        json!({"order": "ORDER-SECRET", "cents": 10_000}),
    );
    let Outcome::Completed(result) = controller.handle(ToolCall::new(
        "c",
        "refund",
        json!({"order": "ORDER-SECRET", "cents": 7}),
    )) else {
        panic!()
    };
    assert!(
        result.content.contains("refunds-per-order") && result.content.contains("10000"),
        "{}",
        result.content
    );
    assert!(!result.content.contains("ORDER-SECRET"));
    let (controller, _, _) = self::controller(TRIFECTA, MemoryRateCounters::default());
    let _ = call(
        &controller,
        "read_file",
        json!({"path": "/srv/secrets/top-secret-name"}),
    );
    let Outcome::Completed(result) = controller.handle(ToolCall::new("c", "web_fetch", json!({})))
    else {
        panic!()
    };
    assert!(
        result.content.contains("no-fetch-after-secrets"),
        "{}",
        result.content
    );
    assert!(!result.content.contains("top-secret-name"));
}

#[test]
fn a_history_holds_the_latest_call_per_counter_however_many_ran() {
    let counters = Arc::new(MemoryRateCounters::default());
    let (controller, _, _) = controller(TRIFECTA, Arc::clone(&counters));
    for _ in 0..1000 {
        assert_eq!(
            call(&controller, "read_file", json!({"path": "/srv/public/a"})),
            "allow"
        );
    }
    assert_eq!(counters.held(), 1, "one record: a private read ran");
    let (controller, _, _) = self::controller(READ_THEN_WRITE, Arc::clone(&counters));
    for index in 0..10 {
        let _ = call(
            &controller,
            "read_file",
            json!({"path": format!("/srv/{}", index % 2)}),
        );
    }
    assert_eq!(counters.held(), 1 + 2, "one record per path read");
}

#[test]
fn layers_shadow_mode_and_the_approval_recheck_treat_flow_rules_as_limits() {
    // A flow rule in the organisation's layer holds whatever the project's layer allows.
    let Tools { registry, .. } = tools();
    let organisation =
        RulePolicy::from_json(&format!(r#"{{"rules": [], {TRIFECTA}}}"#), &registry).unwrap();
    let project = policy("", &registry);
    let layers = Layers::new()
        .layer("organisation", organisation)
        .unwrap()
        .layer("project", project)
        .unwrap();
    let controller = ToolController::try_new(registry, layers).unwrap();
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "allow"
    );
    let Outcome::Completed(result) = controller.handle(ToolCall::new("c", "web_fetch", json!({})))
    else {
        panic!()
    };
    assert!(
        result.is_error && result.content.contains("no-fetch-after-secrets"),
        "{}",
        result.content
    );

    // A shadow candidate's flow rules decide nothing and record nothing.
    let Tools { registry, .. } = tools();
    let enforced = policy("", &registry);
    let candidate = policy(TRIFECTA, &registry);
    let counters = Arc::new(MemoryRateCounters::default());
    let controller = ToolController::try_new(registry, Shadow::new(enforced, candidate))
        .unwrap()
        .with_rate_counters(Arc::clone(&counters));
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "allow"
    );
    assert_eq!(call(&controller, "web_fetch", json!({})), "allow");
    assert_eq!(counters.held(), 0);

    // Held for a person by a rule, a call meets a deny flow rule when approved: it does not run.
    let Tools { registry, runs } = tools();
    let mut text: Value = serde_json::from_str(&format!("{{{TRIFECTA}}}")).unwrap();
    text["rules"] = json!([
        {"id": "read", "tool": "read_file", "action": "allow", "reason": "r"},
        {"id": "fetch-asks", "tool": "web_fetch", "action": "ask", "reason": "a person checks fetches"}]);
    let policy = RulePolicy::from_json(&text.to_string(), &registry).unwrap();
    let controller = ToolController::try_new(registry, policy).unwrap();
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c", "web_fetch", json!({})))
    else {
        panic!("held")
    };
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/secrets/k"})),
        "allow"
    );
    let before = runs.load(Ordering::SeqCst);
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(
        result.is_error && result.content.contains("no-fetch-after-secrets"),
        "{}",
        result.content
    );
    assert_eq!(runs.load(Ordering::SeqCst), before, "nothing ran");
}

/// Outside a controller no history is kept, so a call a flow rule looks at or records cannot be
/// authorized by the bare proof path (fail closed), as for rate limits.
#[test]
fn outside_the_controller_a_call_a_flow_rule_looks_at_is_denied() {
    let Tools { registry, .. } = tools();
    let policy = policy(TRIFECTA, &registry);
    let runtime = ToolRuntime::new(registry);
    for tool in ["web_fetch", "read_file"] {
        let prepared = runtime
            .prepare(ToolCall::new(
                "c",
                tool,
                json!({"path": "/srv/a", "url": "u"}),
            ))
            .unwrap();
        match Authorized::by_policy(&policy, prepared) {
            PolicyOutcome::Denied { decision, .. } => {
                assert!(
                    decision
                        .reason
                        .as_str()
                        .contains("only a ToolController keeps the session's history"),
                    "{}",
                    decision.reason
                );
            }
            _ => panic!("{tool} authorized outside the controller"),
        }
    }
}

#[test]
fn a_flow_rule_judges_only_the_calls_its_condition_covers() {
    let extra = r#"
      "labels": {"private_data": ["read_file"]},
      "flows": [{"id": "outside-mail-after-private", "tool": "send_email", "action": "deny",
         "reason": "no mail outside the company after private data",
         "when": {"not": {"glob": {"pointer": "/to", "pattern": "*@corp.example"}}},
         "after": {"label": "private_data", "within": "session"}}]"#;
    let (controller, _, _) = controller(extra, MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/a"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "send_email", json!({"to": "bob@corp.example"})),
        "allow"
    );
    assert_eq!(
        call(&controller, "send_email", json!({"to": "eve@evil.example"})),
        "deny"
    );
}

#[test]
fn a_session_history_is_everyone_s_in_the_session_and_a_principal_s_is_theirs() {
    let as_caller = |controller: &ToolController, id: &str, tool: &str, arguments: Value| {
        let call = ToolCall::new("c", tool, arguments)
            .with_principal(Principal::new(id, Vec::<String>::new()));
        match controller.handle(call) {
            Outcome::Completed(result) if !result.is_error => "allow",
            Outcome::Completed(_) => "deny",
            Outcome::PendingApproval(_) => "ask",
        }
    };
    let (session, _, _) = controller(TRIFECTA, MemoryRateCounters::default());
    assert_eq!(
        as_caller(
            &session,
            "alice",
            "read_file",
            json!({"path": "/srv/secrets/k"})
        ),
        "allow"
    );
    assert_eq!(
        as_caller(&session, "bob", "web_fetch", json!({})),
        "deny",
        "one session, one history"
    );
    let by_principal = TRIFECTA.replace(
        r#""within": "hour","#,
        r#""within": "hour", "by": "principal","#,
    );
    let (apart, _, _) = controller(&by_principal, MemoryRateCounters::default());
    assert_eq!(
        as_caller(
            &apart,
            "alice",
            "read_file",
            json!({"path": "/srv/secrets/k"})
        ),
        "allow"
    );
    assert_eq!(
        as_caller(&apart, "bob", "web_fetch", json!({})),
        "ask",
        "bob read no secret (the session read private data)"
    );
    assert_eq!(as_caller(&apart, "alice", "web_fetch", json!({})), "deny");
    // `by` is written only when it is not the session.
    let flows = apart_config(&by_principal);
    assert!(flows.contains("\"by\":\"principal\""), "{flows}");
    assert!(!apart_config(TRIFECTA).contains("\"by\""));
}

fn apart_config(extra: &str) -> String {
    let registry = tools().registry;
    serde_json::to_string(&policy(extra, &registry).config().flows).unwrap()
}

#[test]
fn a_list_is_matched_element_by_element_up_to_64_elements() {
    let extra = r#"
      "flows": [{"id": "once-per-target", "tool": "deploy", "action": "deny",
         "reason": "a target is deployed once a session",
         "after": {"tool": "deploy", "within": "session",
                   "same": {"earlier": "/targets", "now": "/targets"}}}]"#;
    let targets = |from: usize, count: usize| -> Vec<String> {
        (from..from + count)
            .map(|index| format!("t{index}"))
            .collect()
    };
    let (controller, _, _) = controller(extra, MemoryRateCounters::default());
    assert_eq!(
        call(&controller, "deploy", json!({"targets": targets(0, 64)})),
        "allow"
    );
    assert_eq!(
        call(&controller, "deploy", json!({"targets": ["t63"]})),
        "deny"
    );
    assert_eq!(
        call(&controller, "deploy", json!({"targets": targets(100, 64)})),
        "allow"
    );
    // More elements than a call may be matched by: the rule's action.
    assert_eq!(
        call(&controller, "deploy", json!({"targets": targets(200, 65)})),
        "deny"
    );
}

#[test]
fn a_label_names_at_least_one_tool() {
    let registry = tools().registry;
    let Err(PolicyLoadError::Invalid { problems }) =
        try_policy(r#""labels": {"empty": []}"#, &registry)
    else {
        panic!("loaded")
    };
    assert!(
        problems[0]
            .to_string()
            .contains("a label has a name and at least one tool"),
        "{problems:?}"
    );
}

#[test]
fn a_full_history_denies_rather_than_forgets() {
    let (controller, _, _) = controller(READ_THEN_WRITE, MemoryRateCounters::with_capacity(3));
    for index in 0..3 {
        let path = format!("/srv/{index}");
        assert_eq!(
            call(&controller, "read_file", json!({ "path": path })),
            "allow"
        );
    }
    // A fourth path would need a fourth record: the read is denied, and so is its write.
    assert_eq!(
        call(&controller, "read_file", json!({"path": "/srv/3"})),
        "deny"
    );
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/3"})),
        "deny"
    );
    assert_eq!(
        call(&controller, "write_file", json!({"path": "/srv/2"})),
        "allow"
    );
}

#[test]
fn flow_rules_are_checked_at_load() {
    let registry = tools().registry;
    let problems = |extra: &str| match try_policy(extra, &registry) {
        Err(PolicyLoadError::Invalid { problems }) => problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("{other:?}"),
    };
    let found = problems(r#""labels": {"ghost": ["no_such_tool"]}"#);
    assert!(found.contains("labels.ghost: labels no tool"), "{found}");
    let found = problems(
        r#""flows": [{"id": "f", "label": "undefined", "action": "deny", "reason": "r",
                      "after": {"tool": "read_file", "within": "session"}}]"#,
    );
    assert!(
        found.contains("label \"undefined\" is not defined"),
        "{found}"
    );
    let found = problems(
        r#""flows": [{"id": "f", "tool": "write_file", "action": "allow", "reason": "r",
                      "after": {"tool": "read_file", "within": "session"}}]"#,
    );
    assert!(found.contains("never allow"), "{found}");
    let found = problems(
        r#""flows": [{"id": "f", "tool": "write_file", "action": "deny", "reason": "r"}]"#,
    );
    assert!(
        found.contains("exactly one of after and unless_after"),
        "{found}"
    );
    let found = problems(
        r#""flows": [{"id": "allow-deploy", "tool": "deploy", "action": "deny", "reason": "r",
                      "after": {"tool": "deploy", "within": "session", "same": {"earlier": "/nope", "now": "/nope"}}}]"#,
    );
    assert!(
        found.contains("repeats") && found.contains("\"/nope\" names no field"),
        "{found}"
    );
    let found = problems(
        r#""limits": [{"id": "s", "tool": "refund", "sum": "/nope", "max": 5, "per": "day", "over": "deny", "reason": "r"}]"#,
    );
    assert!(found.contains("sum \"/nope\" names no field"), "{found}");
}

// ---- shared stores: real processes and a real server ---------------------------------------------

const ONCE: &str = r#"
  "flows": [{"id": "deploy-once", "tool": "deploy", "action": "deny", "reason": "one deploy a session",
             "after": {"tool": "deploy", "within": "session"}}]"#;

const TRIES_PER_PROCESS: usize = 10;

/// Runs only as a child: deploys and refunds against the store the parent named; prints what ran.
#[test]
fn child_process_role() {
    let Ok(store) = std::env::var("TOOLGATE_FLOW_STORE") else {
        return;
    };
    let target = std::env::var("TOOLGATE_FLOW_TARGET").unwrap();
    let counters: Arc<dyn RateCounters> = match store.as_str() {
        "sqlite" => Arc::new(SqliteRateCounters::open(&target, "shared").unwrap()),
        _ => Arc::new(PostgresRateCounters::connect(&target, "shared").unwrap()),
    };
    let extra = format!("{ONCE}, {REFUND_CAP}");
    let (controller, _, _) = controller(&extra, counters);
    let deploys = (0..TRIES_PER_PROCESS)
        .filter(|_| call(&controller, "deploy", json!({})) == "allow")
        .count();
    let cents: i64 = (0..TRIES_PER_PROCESS)
        .filter(|_| call(&controller, "refund", json!({"order": "A", "cents": 700})) == "allow")
        .map(|_| 700)
        .sum();
    println!("CHILD RAN {deploys} {cents}");
}

/// Two children at once against `target`: what each ran (deploys, refunded cents).
fn two_children(store: &str, target: &str) -> Vec<(usize, i64)> {
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "flows::child_process_role",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TOOLGATE_FLOW_STORE", store)
                .env("TOOLGATE_FLOW_TARGET", target)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success());
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            let line = text
                .lines()
                .find_map(|line| line.split("CHILD RAN ").nth(1))
                .unwrap_or_else(|| panic!("no count from the child: {text}"))
                .to_owned();
            let mut parts = line.split(' ');
            (
                parts.next().unwrap().parse().unwrap(),
                parts.next().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn two_processes_on_one_sqlite_file_never_both_get_past_a_flow_rule_or_a_sum() {
    let file = scratch("two-processes");
    let ran = two_children("sqlite", file.to_str().unwrap());
    assert_eq!(
        ran.iter().map(|(deploys, _)| deploys).sum::<usize>(),
        1,
        "{ran:?}"
    );
    // 14 refunds of 700 cents fit in 10,000: 14 * 700 = 9,800.
    assert_eq!(
        ran.iter().map(|(_, cents)| cents).sum::<i64>(),
        9_800,
        "{ran:?}"
    );
    // The session restarts (a new process, the same file): the history is still there.
    let (controller, _, _) = controller(ONCE, SqliteRateCounters::open(&file, "shared").unwrap());
    assert_eq!(call(&controller, "deploy", json!({})), "deny");
    // Another session starts afresh.
    let (controller, _, _) =
        self::controller(ONCE, SqliteRateCounters::open(&file, "other").unwrap());
    assert_eq!(call(&controller, "deploy", json!({})), "allow");
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn two_processes_on_one_postgres_server_never_both_get_past_a_flow_rule_or_a_sum() {
    let Some(base) = postgres_support::server_url() else {
        return;
    };
    let db = postgres_support::Db::new(&base, "flows");
    let url = db.url("flows");
    let ran = two_children("postgres", &url);
    assert_eq!(
        ran.iter().map(|(deploys, _)| deploys).sum::<usize>(),
        1,
        "{ran:?}"
    );
    assert_eq!(
        ran.iter().map(|(_, cents)| cents).sum::<i64>(),
        9_800,
        "{ran:?}"
    );
    // Threads of two in-process controllers in another session: again one deploy.
    let nodes: Vec<Arc<ToolController>> = (0..2)
        .map(|_| {
            Arc::new(
                controller(
                    ONCE,
                    PostgresRateCounters::connect(&url, "threads").unwrap(),
                )
                .0,
            )
        })
        .collect();
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let node = Arc::clone(&nodes[i % 2]);
            std::thread::spawn(move || {
                (0..3)
                    .filter(|_| call(&node, "deploy", json!({})) == "allow")
                    .count()
            })
        })
        .collect();
    assert_eq!(
        threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .sum::<usize>(),
        1
    );
}
