//! Provenance in the rule language: a `tokens` reading judges only the kinds it names, rules are
//! checked at load, the slots a policy names show no value, and the analysis never calls policies
//! differing in provenance the same.

use super::*;

/// `kinds` narrows a `tokens` reading: a rule on the links in a message judges the links a page
/// carried, in any spelling, and not a reference number or an address copied from the same page;
/// without `kinds`, every value inside the text is judged.
#[test]
fn a_tokens_reading_judges_only_the_kinds_it_names() {
    let page = Arc::new(Mutex::new(
        "Invoice INV-2025-05-77812 from billing@power.example, pay at https://pay.power.example/x"
            .to_owned(),
    ));
    let registry = || {
        ToolRegistry::new([
            returning("read_mail", json!({"type": "object"}), &page),
            returning(
                "post",
                schema_of(json!({"body": {"type": "string"}})),
                &Arc::new(Mutex::new("posted".to_owned())),
            ),
        ])
        .unwrap()
    };
    let controller = |kinds: Value| {
        let policy = json!({
            "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
            "flows": [{"id": "links-from-mail", "tool": "post", "action": "deny", "reason": "r",
                       "provenance": {"pointer": "/body", "read": "tokens", "kinds": kinds,
                                      "seen_in": ["untrusted"]}}]});
        let registry = registry();
        let policy = RulePolicy::from_json(&policy.to_string(), &registry).unwrap();
        let controller = ToolController::try_new(registry, policy).unwrap();
        assert_eq!(
            outcome_word(controller.handle(ToolCall::new("m", "read_mail", json!({})))),
            "allow"
        );
        controller
    };
    let post = |controller: &ToolController, body: &str| {
        outcome_word(controller.handle(ToolCall::new("c", "post", json!({ "body": body }))))
    };
    let links = controller(json!(["link"]));
    assert_eq!(
        post(
            &links,
            "Paid, ref INV 2025 05 77812, thanks billing@power.example"
        ),
        "allow"
    );
    assert_eq!(
        post(&links, "Pay here: HTTPS://PAY.POWER.EXAMPLE/x."),
        "deny"
    );
    assert_eq!(
        post(&links, "see pay.power.example"),
        "deny",
        "a bare host is a link"
    );
    let addresses = controller(json!(["email", "number"]));
    assert_eq!(post(&addresses, "write to Billing@Power.example"), "deny");
    assert_eq!(post(&addresses, "ref 20250577812"), "deny");
    assert_eq!(post(&addresses, "https://pay.power.example/x"), "allow");
    let every = controller(json!([]));
    assert_eq!(post(&every, "ref 2025-05-77812"), "deny");
}

#[test]
fn provenance_rules_are_checked_at_load() {
    let registry = ToolRegistry::new([returning(
        "send_money",
        schema_of(json!({"iban": {"type": "string"}})),
        &Arc::new(Mutex::new(String::new())),
    )])
    .unwrap();
    let load = |flow: Value| {
        let policy = json!({
            "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
            "flows": [flow]});
        RulePolicy::from_json(&policy.to_string(), &registry)
            .err()
            .map(|error| error.to_string())
    };
    let base = |provenance: Value| {
        json!({"id": "p", "tool": "send_money", "action": "ask", "reason": "r",
               "provenance": provenance})
    };
    assert_eq!(
        load(base(json!({"pointer": "/iban", "not_seen_in": ["person"]}))),
        None
    );
    for (flow, says) in [
        (
            base(json!({"pointer": "/iban"})),
            "needs seen_in or not_seen_in",
        ),
        (
            base(json!({"pointer": "/payee", "seen_in": ["untrusted"]})),
            "names no field",
        ),
        (
            base(json!({"pointer": "/iban", "seen_in": [{"tool": "nothing_*"}]})),
            "covers no tool",
        ),
        (
            json!({"id": "p", "tool": "send_money", "action": "ask", "reason": "r",
                   "after": {"tool": "send_money", "within": "session"},
                   "provenance": {"pointer": "/iban", "seen_in": ["untrusted"]}}),
            "drop after and unless_after",
        ),
        (
            json!({"id": "p", "tool": "send_money", "action": "allow", "reason": "r",
                   "provenance": {"pointer": "/iban", "seen_in": ["untrusted"]}}),
            "must be deny or ask",
        ),
        (
            base(json!({"pointer": "/iban", "kinds": ["link"], "seen_in": ["untrusted"]})),
            "goes with read \"tokens\" only",
        ),
    ] {
        let error = load(flow.clone()).unwrap_or_else(|| panic!("{flow} loaded"));
        assert!(error.contains(says), "{flow}: {error}");
    }
    // An unknown source or reading is a parse error.
    for provenance in [
        json!({"pointer": "/iban", "seen_in": ["the_web"]}),
        json!({"pointer": "/iban", "read": "words", "seen_in": ["person"]}),
        json!({"pointer": "/iban", "read": "tokens", "kinds": ["url"], "seen_in": ["person"]}),
    ] {
        assert!(load(base(provenance.clone())).is_some(), "{provenance}");
    }
}

#[test]
fn the_slots_a_policy_names_show_no_value() {
    let runtime = ToolRuntime::new(
        ToolRegistry::new([returning(
            "send_money",
            schema_of(json!({"iban": {"type": "string"}})),
            &Arc::new(Mutex::new(String::new())),
        )])
        .unwrap(),
    );
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
            "flows": [{"id": "p", "tool": "send_money", "action": "ask", "reason": "r",
                       "provenance": {"pointer": "/iban", "not_seen_in": ["person"]}}]}"#,
        runtime.registry(),
    )
    .unwrap();
    let prepared = runtime
        .prepare(ToolCall::new(
            "c",
            "send_money",
            json!({"iban": "SECRETVALUE123456"}),
        ))
        .unwrap();
    let slots = policy.rate_slots(&prepared).unwrap();
    assert!(!slots.is_empty());
    let shown = format!("{slots:?}");
    assert!(!shown.to_lowercase().contains("secretvalue"), "{shown}");
}

#[test]
fn the_analysis_never_calls_policies_differing_in_provenance_the_same() {
    use toolgate::rules::analysis::diff;
    let registry = ToolRegistry::new([returning(
        "send_money",
        schema_of(json!({"iban": {"type": "string"}})),
        &Arc::new(Mutex::new(String::new())),
    )])
    .unwrap();
    let base = r#""rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}]"#;
    let flow = r#""flows": [{"id": "p", "tool": "send_money", "action": "ask", "reason": "r",
                   "provenance": {"pointer": "/iban", "READ" "not_seen_in": ["person"]}}]"#;
    let policies = [
        format!("{{{base}}}"),
        format!("{{{base}, {}}}", flow.replace("\"READ\" ", "")),
        format!(
            "{{{base}, {}}}",
            flow.replace("\"READ\"", r#""read": "tokens","#)
        ),
        format!(
            "{{{base}, {}}}",
            flow.replace("\"READ\"", r#""read": "tokens", "kinds": ["link"],"#)
        ),
        format!(
            "{{{base}, {}, \"sources\": {{\"trusted\": [\"send_money\"]}}}}",
            flow.replace("\"READ\" ", "")
        ),
    ];
    use toolgate::rules::analysis::{Analysed, ToolDiff};
    let load = |text: &String| {
        Analysed::policy(
            RulePolicy::from_json(text, &registry).unwrap_or_else(|e| panic!("{text}: {e}")),
        )
    };
    for (i, old) in policies.iter().enumerate() {
        for (j, new) in policies.iter().enumerate() {
            if i == j {
                continue;
            }
            let report = diff(&load(old), &load(new), &registry);
            assert!(
                report
                    .iter()
                    .all(|tool| !matches!(tool, ToolDiff::Same { .. })),
                "policies {i} and {j} called the same: {report:?}"
            );
        }
    }
}
