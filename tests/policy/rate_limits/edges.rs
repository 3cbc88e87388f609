//! Rate limits at their edges: threads racing for the last slots, policies replaced with other
//! windows, keys spelled alike, limits built in code, a policy's own counters, caps crossed at
//! once, asynchronous checks and tuple keys.

use super::*;

#[test]
fn threads_racing_for_the_last_slots_never_exceed_the_cap() {
    let bench = bench(&policy(
        r#"{"id": "cap", "tool": "read_file", "max": 25, "per": "minute", "over": "deny", "reason": "25 reads"}"#,
    ));
    let controller = Arc::new(bench.controller);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let controller = Arc::clone(&controller);
            std::thread::spawn(move || {
                (0..10)
                    .filter(|_| ran(&controller.handle(ToolCall::new("c", "read_file", json!({})))))
                    .count()
            })
        })
        .collect();
    let allowed: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(allowed, 25);
    assert_eq!(bench.runs.load(Ordering::SeqCst), 25);
}

#[test]
fn a_replaced_policy_counts_past_calls_by_its_own_window() {
    let minute = policy(
        r#"{"id": "cap", "tool": "read_file", "max": 1, "per": "minute", "over": "deny", "reason": "one"}"#,
    );
    let bench = bench(&minute);
    assert!(ran(&call(&bench, "read_file", json!({}))));
    bench.clock.advance(Duration::from_secs(30));
    bench
        .controller
        .try_replace_policy(|registry| {
            RulePolicy::from_json(&minute.replace("minute", "hour"), registry)
        })
        .unwrap();
    // 90 s after the first call: past a minute, within the hour the policy now says.
    bench.clock.advance(Duration::from_secs(60));
    assert!(!ran(&call(&bench, "read_file", json!({}))));
}

#[test]
fn keys_that_mean_the_same_number_or_text_share_a_count() {
    let registry = ToolRegistry::new([counted(
        "transfer",
        json!({"type": "object", "properties": {"account": {}}}),
        &Arc::default(),
    )])
    .unwrap();
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "t", "tool": "transfer", "action": "allow", "reason": "r"}],
            "limits": [{"id": "per-account", "tool": "transfer", "max": 1, "per": "day", "over": "deny",
                        "key": {"pointer": "/account"}, "reason": "one transfer a day per account"}]}"#,
        &registry,
    )
    .unwrap();
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_clock(ManualClock::new(T0));
    let runs = |arguments: &str| {
        let arguments: Value = serde_json::from_str(arguments).unwrap();
        ran(&controller.handle(ToolCall::new("c", "transfer", arguments)))
    };
    assert!(runs(r#"{"account": 42}"#));
    assert!(!runs(r#"{"account": 42.0}"#));
    assert!(!runs(r#"{"account": 4.2e1}"#));
    assert!(!runs(r#"{"account": [42, 42.0]}"#));
    assert!(runs(r#"{"account": "42"}"#), "text is not the number");
    assert!(!runs(r#"{"account": "\u0034\u0032"}"#));
    assert!(runs(r#"{"account": {"b": 1, "a": 2}}"#));
    assert!(
        !runs(r#"{"account": {"a": 2, "b": 1}}"#),
        "key order is not a new key"
    );
}

#[test]
fn limits_built_in_code_mean_what_the_same_json_means() {
    use toolgate::limits::{LimitKey, Per, RateLimitConfig};
    use toolgate::rules::{PolicyConfig, RuleConfig};
    let registry =
        ToolRegistry::new([counted("send_email", mail_schema(), &Arc::default())]).unwrap();
    let json = r#"{"rules": [{"id": "mail", "tool": "send_email", "action": "allow", "reason": "r"}],
        "limits": [{"id": "cap", "tool": "send_email", "max": 2, "per": "hour", "over": "ask",
                    "key": {"pointer": "/to", "case_insensitive": true}, "reason": "two an hour"}]}"#;
    let from_json = RulePolicy::from_json(json, &registry).unwrap();
    let config = PolicyConfig::new([RuleConfig::new(
        "mail",
        "send_email",
        PolicyAction::Allow,
        "r",
    )])
    .with_limits([RateLimitConfig::new(
        "cap",
        "send_email",
        2,
        Per::Hour,
        PolicyAction::Ask,
        "two an hour",
    )
    .per_key(LimitKey::new("/to").case_insensitive())]);
    let from_code = RulePolicy::new(config, &registry).unwrap();
    assert_eq!(from_json.digest(), from_code.digest());
    assert_eq!(from_json.config(), from_code.config());
    assert_eq!(
        [Per::Minute, Per::Hour, Per::Day, Per::Session].map(Per::window_ms),
        [Some(60_000), Some(3_600_000), Some(86_400_000), None]
    );
    assert_eq!(
        [Per::Minute, Per::Hour, Per::Day, Per::Session].map(|per| per.to_string()),
        ["minute", "hour", "day", "session"]
    );
    // A cap over the day names its window.
    let daily = policy(
        r#"{"id": "cap", "tool": "read_file", "max": 1, "per": "day", "over": "deny", "reason": "once a day"}"#,
    );
    let bench = bench(&daily);
    assert!(ran(&call(&bench, "read_file", json!({}))));
    let reason = denial(&call(&bench, "read_file", json!({})));
    assert!(reason.contains("(1 per day)"), "{reason}");
    let hourly = bench_with(&daily.replace("day", "hour"));
    assert!(denial(&hourly).contains("(1 per hour)"));
}

/// The reason a second call to `read_file` gets under `policy`.
fn bench_with(policy: &str) -> Outcome {
    let bench = bench(policy);
    let _ = call(&bench, "read_file", json!({}));
    call(&bench, "read_file", json!({}))
}

#[test]
fn a_policy_of_its_own_can_name_counters_with_any_window() {
    use toolgate::decision::RateSlot;
    struct Custom;
    impl Policy for Custom {
        fn decide(&self, _: &PreparedToolCall) -> PolicyDecision {
            PolicyDecision::allow(Reason::from_static("fine"))
        }
        fn rate_slots(&self, call: &PreparedToolCall) -> Result<Vec<RateSlot>, PolicyDecision> {
            let slot = RateSlot::new(
                "burst",
                Some(1_500),
                1,
                PolicyAction::Deny,
                Reason::from_static("one per 1.5 s"),
            );
            Ok(vec![slot.in_bucket(format!("burst/{}", call.tool_name()))])
        }
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new([
        counted("a", json!({"type": "object"}), &runs),
        counted("b", json!({"type": "object"}), &runs),
    ])
    .unwrap();
    let clock = ManualClock::new(T0);
    let controller = ToolController::new(registry, Custom).with_clock(clock.clone());
    let handle = |tool: &str| ran(&controller.handle(ToolCall::new("c", tool, json!({}))));
    assert!(handle("a"));
    assert!(handle("b"), "its own bucket per tool");
    let Outcome::Completed(refused) = controller.handle(ToolCall::new("c", "a", json!({}))) else {
        panic!()
    };
    assert!(
        refused.content.contains("(1 per 1500 ms)"),
        "{}",
        refused.content
    );
    clock.advance(Duration::from_millis(1_500));
    assert!(handle("a"));
}

#[test]
fn past_an_ask_cap_and_a_deny_cap_at_once_the_deny_names_the_decision_with_its_policy() {
    let bench = bench(&policy(
        r#"{"id": "a-soft", "tool": "read_file", "max": 1, "per": "hour", "over": "ask", "reason": "soft cap"},
           {"id": "z-hard", "tool": "read_file", "max": 1, "per": "hour", "over": "deny", "reason": "hard cap"}"#,
    ));
    assert!(ran(&call(&bench, "read_file", json!({}))));
    // Both caps are full: the stricter one decides, whatever the order the limits were written in.
    let reason = denial(&call(&bench, "read_file", json!({})));
    assert!(reason.contains("z-hard"), "{reason}");
    let denied = bench
        .audit
        .events()
        .into_iter()
        .find(|event| event.action == Some(PolicyAction::Deny))
        .unwrap();
    assert_eq!(denied.rule_id.as_deref(), Some("z-hard"));
    // The decision names the policy it was made under, as every rule decision does.
    let allowed = bench
        .audit
        .events()
        .into_iter()
        .find(|event| event.action == Some(PolicyAction::Allow))
        .unwrap();
    assert!(allowed.policy_digest.is_some());
    assert_eq!(denied.policy_digest, allowed.policy_digest);
}

#[test]
fn with_an_async_check_set_an_approved_call_is_still_counted_and_capped() {
    let rules = r#"{"rules": [
        {"id": "mail", "tool": "send_email", "action": "ask", "reason": "a person reads mail first"}],
        "limits": [{"id": "cap", "tool": "send_email", "max": 1, "per": "minute", "over": "deny",
                    "reason": "one a minute"}]}"#;
    let bench = bench(rules);
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&asked);
    let controller = bench.controller.with_async_check(
        move |_: &PreparedToolCall| -> policy_future::Decided {
            seen.fetch_add(1, Ordering::SeqCst);
            policy_future::deny()
        },
        Duration::from_secs(1),
    );
    let held: Vec<_> = (0..2)
        .map(|_| {
            let outcome = controller.handle(ToolCall::new(
                "c",
                "send_email",
                json!({"to": "a", "body": "b"}),
            ));
            let Outcome::PendingApproval(request) = outcome else {
                panic!("asked")
            };
            request
        })
        .collect();
    let results: Vec<bool> = held
        .into_iter()
        .map(|request| {
            !controller
                .resolve(ApprovalResponse::approve(request.approval_id))
                .unwrap()
                .is_error
        })
        .collect();
    assert_eq!(results, [true, false], "the second approval met the cap");
    assert_eq!(bench.runs.load(Ordering::SeqCst), 1);
    assert_eq!(asked.load(Ordering::SeqCst), 0, "rules decided every call");
}

#[test]
fn a_key_can_name_a_tuple_position_and_counts_by_that_element() {
    let registry = ToolRegistry::new([counted(
        "transfer",
        json!({"type": "object", "properties": {
            "route": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}]}
        }}),
        &Arc::default(),
    )])
    .unwrap();
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "t", "tool": "transfer", "action": "allow", "reason": "r"}],
            "limits": [{"id": "per-source", "tool": "transfer", "max": 1, "per": "day", "over": "deny",
                        "key": {"pointer": "/route/0"}, "reason": "one transfer a day from one account"}]}"#,
        &registry,
    )
    .unwrap();
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_clock(ManualClock::new(T0));
    let runs = |from: &str, to: &str| {
        ran(&controller.handle(ToolCall::new("c", "transfer", json!({"route": [from, to]}))))
    };
    assert!(runs("acct-1", "acct-9"));
    assert!(
        !runs("acct-1", "acct-8"),
        "the same source, another destination"
    );
    assert!(runs("acct-2", "acct-9"), "another source");
}

#[test]
fn a_replaced_policy_with_a_shorter_window_no_longer_counts_older_calls() {
    let hour = policy(
        r#"{"id": "cap", "tool": "read_file", "max": 1, "per": "hour", "over": "deny", "reason": "one"}"#,
    );
    let bench = bench(&hour);
    assert!(ran(&call(&bench, "read_file", json!({}))));
    bench.clock.advance(Duration::from_secs(61));
    assert!(
        !ran(&call(&bench, "read_file", json!({}))),
        "within the hour"
    );
    bench
        .controller
        .try_replace_policy(|registry| {
            RulePolicy::from_json(&hour.replace("hour", "minute"), registry)
        })
        .unwrap();
    // 61 s after the first call: outside the minute now in force, though kept for the hour.
    assert!(ran(&call(&bench, "read_file", json!({}))));
    assert!(!ran(&call(&bench, "read_file", json!({}))));
}
