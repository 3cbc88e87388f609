//! Flow rules against the evasions a deployment makes possible: layers and shadow policies,
//! principals, a full memory store, policy reloads, the reasons given, and panics and hangs.

use super::*;

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
