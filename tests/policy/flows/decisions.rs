//! What ran before decides: the lethal trifecta, labels given by pattern, secrets then fetching
//! within an hour, read before write, a daily sum per order, a rule's condition, whose history it
//! is, and lists matched element by element.

use super::*;

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
