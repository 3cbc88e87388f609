//! Flow rules against evasions by ordering: approvals answered late, edited calls, and calls
//! running at once.

use super::*;

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
