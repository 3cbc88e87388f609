//! Flow rules kept like limits: refusals name the rule and never a value, a history holds one
//! record per counter and denies when full, and layers, shadow mode, the approval recheck and the
//! proof path outside the controller treat flow rules as limits.

use super::*;

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
