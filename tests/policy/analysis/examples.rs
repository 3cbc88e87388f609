//! Examples: checked at load and on demand, judging principals, and the coverage of rules no
//! example or real call decided.

use super::*;

#[test]
fn a_failing_example_is_a_load_error_naming_it_and_what_was_decided() {
    let policy = |examples: Value| {
        json!({"rules": [
            {"id": "small-refunds", "tool": "refund", "action": "allow", "reason": "small",
             "when": {"range": {"pointer": "/cents", "max": 1000}}},
            {"id": "big-refunds", "tool": "refund", "action": "ask", "reason": "big",
             "when": {"range": {"pointer": "/cents", "min": 1001}}}
        ], "examples": examples})
        .to_string()
    };
    let passing = json!([
        {"name": "small", "tool": "refund", "arguments": {"cents": 5}, "expect": "allow", "rule": "small-refunds"},
        {"tool": "refund", "arguments": {"cents": 5000}, "expect": "ask"},
        {"tool": "read_file", "arguments": {"path": "/x"}, "expect": "deny"}
    ]);
    assert_eq!(load(&policy(passing)).config().examples.len(), 3);

    let problems = |examples: Value| match RulePolicy::from_json(&policy(examples), &tools()) {
        Err(PolicyLoadError::Invalid { problems }) => problems
            .into_iter()
            .map(|problem| problem.to_string())
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let found = problems(json!([
        {"name": "big is fine", "tool": "refund", "arguments": {"cents": 5000}, "expect": "allow"},
        {"tool": "refund", "arguments": {"cents": 5}, "expect": "allow", "rule": "big-refunds"},
        {"tool": "read_file", "arguments": {"path": "/x"}, "expect": "allow"},
        {"tool": "refund", "arguments": {"cents": "five", "secret": "hunter2"}, "expect": "allow"},
        {"tool": "refund", "arguments": {"cents": 1}, "expect": "allow", "rule": "no-such-rule"},
        {"tool": "nope", "arguments": {}, "expect": "deny"}
    ]));
    assert_eq!(found.len(), 6, "{found:#?}");
    assert!(
        found[0].contains(
            "examples[0] (\"big is fine\"): expected allow, decided ask by rule \"big-refunds\""
        ),
        "{found:#?}"
    );
    assert!(
        found[1].contains(
            "expected allow by rule \"big-refunds\", decided allow by rule \"small-refunds\""
        ),
        "{found:#?}"
    );
    assert!(
        found[2].contains("decided deny by no rule (default deny)"),
        "{found:#?}"
    );
    assert!(found[3].contains("do not fit the schema"), "{found:#?}");
    assert!(
        !found[3].contains("hunter2") && !found[3].contains("five"),
        "no value"
    );
    assert!(
        found[4].contains("names rule \"no-such-rule\", which the policy does not have"),
        "{found:#?}"
    );
    assert!(found[5].contains("not in the registry"), "{found:#?}");

    // A hot reload whose example fails is refused; the policy in force stays.
    let controller = ToolController::new(tools(), load(&policy(json!([]))));
    let reload = controller.try_replace_policy(|registry| {
        RulePolicy::from_json(
            &policy(json!([{"tool": "refund", "arguments": {"cents": 5000}, "expect": "allow"}])),
            registry,
        )
    });
    assert!(reload.unwrap_err().to_string().contains("examples[0]"));
    let small = controller.handle(ToolCall::new("c1", "refund", json!({"cents": 5})));
    assert!(matches!(small, Outcome::Completed(result) if !result.is_error));
}

#[test]
fn examples_judge_principals_and_are_checked_on_demand_against_a_loaded_policy() {
    let policy = load(
        r#"{"rules": [{"id": "ops", "tool": "deploy", "action": "allow", "reason": "ops deploy",
            "principals": {"groups": ["ops"]}}]}"#,
    );
    let example = PolicyExample::new("deploy", json!({"env": "prod"}), PolicyAction::Allow);
    let ops = example.clone().by(Principal::new("sam", ["ops"]));
    assert!(policy.check_examples(&[ops], &tools()).is_empty());
    let problems = policy.check_examples(&[example.named("anyone")], &tools());
    assert_eq!(problems.len(), 1);
    assert!(problems[0].to_string().contains("examples[0] (\"anyone\")"));
    // Without arguments, an example calls with `{}`.
    let ping =
        crate::common::registry([counted("ping", json!({"type": "object"}), &Arc::default())]);
    let allowed = RulePolicy::from_json(
        r#"{"rules": [{"id": "ping", "tool": "ping", "action": "allow", "reason": "r"}],
            "examples": [{"tool": "ping", "expect": "allow", "rule": "ping"}]}"#,
        &ping,
    );
    assert!(allowed.is_ok(), "{allowed:?}");
    // The digest ignores examples: they change no decision.
    let with = load(
        r#"{"rules": [{"id": "ops", "tool": "deploy", "action": "allow", "reason": "ops deploy",
            "principals": {"groups": ["ops"]}}],
            "examples": [{"tool": "deploy", "arguments": {"env": "dev"}, "expect": "deny"}]}"#,
    );
    assert_eq!(with.digest(), policy.digest());
}

#[test]
fn coverage_names_the_rules_no_example_and_no_real_call_decided() {
    let text = |examples: Value| {
        json!({"rules": [
            {"id": "small", "tool": "refund", "action": "allow", "reason": "small",
             "when": {"range": {"pointer": "/cents", "max": 1000}}},
            {"id": "big", "tool": "refund", "action": "ask", "reason": "big",
             "when": {"range": {"pointer": "/cents", "min": 1001}}},
            {"id": "dev", "tool": "deploy", "action": "allow", "reason": "dev",
             "when": {"equals": {"pointer": "/env", "value": "dev"}}}
        ], "examples": examples})
        .to_string()
    };
    let policy = load(&text(json!([
        {"tool": "refund", "arguments": {"cents": 5}, "expect": "allow"},
        {"tool": "read_file", "arguments": {"path": "/x"}, "expect": "deny"}
    ])));
    assert_eq!(policy.rules_without_examples(&tools()), ["big", "dev"]);

    // A shadow run: the candidate decides real calls beside the enforced policy, and its report
    // names the rules no call reached.
    let candidate = load(&text(json!([])));
    let rule_ids: Vec<String> = candidate
        .config()
        .rules
        .iter()
        .map(|rule| rule.id.clone())
        .collect();
    let shadow = Arc::new(Shadow::new(
        ToolPolicy::new(["refund", "deploy"], Vec::<String>::new()).unwrap(),
        candidate,
    ));
    let controller = ToolController::try_new(tools(), Arc::clone(&shadow)).unwrap();
    for (tool, arguments) in [
        ("refund", json!({"cents": 5})),
        ("refund", json!({"cents": 7})),
        ("deploy", json!({"env": "prod"})),
    ] {
        let outcome = controller.handle(ToolCall::new("c", tool, arguments));
        assert!(matches!(outcome, Outcome::Completed(_)));
    }
    let report = shadow.report();
    assert_eq!(
        report.rules_never_deciding(rule_ids.iter().map(String::as_str)),
        ["big", "dev"]
    );
    let small = report
        .candidate_decisions
        .iter()
        .find(|(key, _)| key.rule_id.as_deref() == Some("small"))
        .unwrap();
    assert_eq!(small.1, 2);
}
