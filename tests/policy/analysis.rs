//! A policy you can prove: examples checked at load, the diff of two policies with a witness call
//! (never a false "same"), and the rules and layers that add nothing.

use std::sync::Arc;
use toolgate::policy::Shadow;

use crate::common::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::rules::analysis::{self, Analysed, FindingKind, ToolDiff};
use toolgate::rules::{PolicyExample, PolicyLoadError};
use toolgate::*;

fn tools() -> ToolRegistry {
    let runs = Arc::default();
    registry([
        counted(
            "refund",
            json!({"type": "object", "properties": {
                "cents": {"type": "integer"},
                "currency": {"type": "string"},
                "note": {"type": "string"}
            }, "required": ["cents"]}),
            &runs,
        ),
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            &runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
            &runs,
        ),
        counted(
            "deploy",
            json!({"type": "object", "properties": {"env": {"enum": ["dev", "staging", "prod"]}}, "required": ["env"]}),
            &runs,
        ),
    ])
}

fn load(text: &str) -> RulePolicy {
    RulePolicy::from_json(text, &tools()).unwrap_or_else(|error| panic!("{error}"))
}

fn one(text: &str) -> Analysed {
    Analysed::policy(load(text))
}

fn verdict<'a>(diffs: &'a [ToolDiff], tool: &str) -> &'a ToolDiff {
    diffs.iter().find(|diff| diff.tool() == tool).unwrap()
}

/// The witness of `tool`, checked: valid, and decided as reported by both policies again.
fn witness(old: &Analysed, new: &Analysed, tool: &str) -> analysis::Witness {
    let diffs = analysis::diff(old, new, &tools());
    let ToolDiff::Differs { witnesses, .. } = verdict(&diffs, tool).clone() else {
        panic!("expected a witness for {tool}: {diffs:#?}")
    };
    for witness in &witnesses {
        assert_ne!(
            (witness.old.action, witness.old.approvers.len()),
            (witness.new.action, witness.new.approvers.len()),
            "{witness:?}"
        );
    }
    // One per pair of decisions.
    let pairs: Vec<_> = witnesses
        .iter()
        .map(|w| (w.old.action, w.new.action))
        .collect();
    for (index, pair) in pairs.iter().enumerate() {
        assert!(!pairs[index + 1..].contains(pair), "{pairs:?}");
    }
    witnesses.into_iter().next().unwrap()
}

// ---- examples -----------------------------------------------------------------------------------

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

// ---- diff ---------------------------------------------------------------------------------------

const REFUNDS: &str = r#"{"rules": [
  {"id": "small", "tool": "refund", "action": "allow", "reason": "small",
   "when": {"all": [{"range": {"pointer": "/cents", "min": 0, "max": 1000}},
                    {"one_of": {"pointer": "/currency", "values": ["EUR", "USD"]}}]}},
  {"id": "read-data", "tool": "read_file", "action": "allow", "reason": "data",
   "when": {"path_within": {"pointer": "/path", "roots": ["/srv/data"]}}},
  {"id": "deploy-dev", "tool": "deploy", "action": "allow", "reason": "dev",
   "when": {"equals": {"pointer": "/env", "value": "dev"}}},
  {"id": "deploy-prod", "tool": "deploy", "action": "ask", "reason": "prod",
   "when": {"equals": {"pointer": "/env", "value": "prod"}}}
]}"#;

#[test]
fn the_same_rules_written_otherwise_are_the_same_on_every_tool() {
    // Reordered, split differently, one_of for two equals: the same decisions.
    let rewritten = r#"{"rules": [
      {"id": "deploy-prod", "tool": "deploy", "action": "ask", "reason": "prod",
       "when": {"one_of": {"pointer": "/env", "values": ["prod"]}}},
      {"id": "d", "tool": "deploy", "action": "allow", "reason": "dev",
       "when": {"not": {"one_of": {"pointer": "/env", "values": ["staging", "prod"]}}}},
      {"id": "read-data", "tool": "read_file", "action": "allow", "reason": "data",
       "when": {"path_within": {"pointer": "/path", "roots": ["/srv/data/"]}}},
      {"id": "small-eur", "tool": "refund", "action": "allow", "reason": "small",
       "when": {"all": [{"range": {"pointer": "/cents", "max": 1000}},
                        {"not": {"range": {"pointer": "/cents", "max": -1}}},
                        {"equals": {"pointer": "/currency", "value": "EUR"}}]}},
      {"id": "small-usd", "tool": "refund", "action": "allow", "reason": "small",
       "when": {"all": [{"range": {"pointer": "/cents", "min": 0, "max": 1000}},
                        {"equals": {"pointer": "/currency", "value": "USD"}}]}}
    ]}"#;
    let diffs = analysis::diff(&one(REFUNDS), &one(rewritten), &tools());
    for diff in &diffs {
        assert!(matches!(diff, ToolDiff::Same { .. }), "{diffs:#?}");
    }
    let ToolDiff::Same { calls, .. } = verdict(&diffs, "refund") else {
        unreachable!()
    };
    assert!(*calls > 10, "{calls}");
}

#[test]
fn a_wider_range_a_wider_root_and_a_changed_value_each_give_a_witness() {
    let old = one(REFUNDS);
    let wider = one(&REFUNDS.replace("\"max\": 1000", "\"max\": 1001"));
    let found = witness(&old, &wider, "refund");
    assert_eq!(found.arguments["cents"], 1001);
    assert_eq!(
        (found.old.action, found.new.action),
        (PolicyAction::Deny, PolicyAction::Allow)
    );
    assert!(found.old.fallback && found.new.rule_id.as_deref() == Some("small"));

    let root = one(&REFUNDS.replace("\"/srv/data\"", "\"/srv\""));
    let found = witness(&old, &root, "read_file");
    let path = found.arguments["path"].as_str().unwrap();
    assert!(
        path.starts_with("/srv") && !path.starts_with("/srv/data"),
        "{path}"
    );

    let staging = one(&REFUNDS.replace("\"value\": \"dev\"", "\"value\": \"staging\""));
    let found = witness(&old, &staging, "deploy");
    assert!(["dev", "staging"].contains(&found.arguments["env"].as_str().unwrap()));
}

#[test]
fn a_rule_for_a_group_and_other_approvers_are_found_with_the_caller() {
    let old = one(REFUNDS);
    let with_rule = |env: &str| {
        one(&REFUNDS.replace(
            r#"{"id": "deploy-dev","#,
            &format!(
                r#"{{"id": "ops", "tool": "deploy", "action": "allow", "reason": "ops",
                   "principals": {{"groups": ["ops"]}}, "when": {{"equals": {{"pointer": "/env", "value": "{env}"}}}}}},
                  {{"id": "deploy-dev","#
            ),
        ))
    };
    // Staging was denied to everyone; now ops may deploy it.
    let found = witness(&old, &with_rule("staging"), "deploy");
    assert_eq!(found.arguments["env"], "staging");
    assert!(found.principal.unwrap().in_group("ops"));
    // Prod still asks (ask beats allow): nothing changed for anyone.
    let diffs = analysis::diff(&old, &with_rule("prod"), &tools());
    assert!(
        matches!(verdict(&diffs, "deploy"), ToolDiff::Same { .. }),
        "{diffs:#?}"
    );
    // Both ask, but other people may answer.
    let approvers = one(&REFUNDS.replace(
        r#""reason": "prod","#,
        r#""reason": "prod", "approvers": {"groups": ["security"]},"#,
    ));
    let found = witness(&old, &approvers, "deploy");
    assert_eq!(
        (found.old.action, found.new.action),
        (PolicyAction::Ask, PolicyAction::Ask)
    );
}

#[test]
fn a_named_caller_in_no_group_is_a_class_of_its_own() {
    // The two differ only for sam when sam is in neither group.
    let old = one(r#"{"rules": [
          {"id": "sam", "tool": "deploy", "action": "allow", "reason": "r", "principals": {"ids": ["sam"]}},
          {"id": "not-a", "tool": "deploy", "action": "deny", "reason": "r", "principals": {"groups": ["a"]}},
          {"id": "not-b", "tool": "deploy", "action": "deny", "reason": "r", "principals": {"groups": ["b"]}}]}"#);
    let new = one(r#"{"rules": [
          {"id": "not-a", "tool": "deploy", "action": "deny", "reason": "r", "principals": {"groups": ["a"]}},
          {"id": "not-b", "tool": "deploy", "action": "deny", "reason": "r", "principals": {"groups": ["b"]}}]}"#);
    let found = witness(&old, &new, "deploy");
    assert_eq!(
        found.principal,
        Some(Principal::new("sam", Vec::<String>::new()))
    );
}

#[test]
fn conditions_without_exact_classes_answer_unknown_or_a_witness_never_same() {
    // The evasion shape of issue 10: an allow of `git` beside a deny of `git push`, against the
    // intended allow of `git status` only. The analysis cannot cut commands into classes, but it
    // tries the spellings an attacker would and finds a call the written policy allows.
    let intended = one(
        r#"{"rules": [{"id": "status", "tool": "shell", "action": "allow", "reason": "status",
            "when": {"command_prefix": {"pointer": "/command", "prefix": ["git", "status"]}}}]}"#,
    );
    let written = one(r#"{"rules": [
            {"id": "git", "tool": "shell", "action": "allow", "reason": "git",
             "when": {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}},
            {"id": "no-push", "tool": "shell", "action": "deny", "reason": "push",
             "when": {"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}}]}"#);
    let found = witness(&intended, &written, "shell");
    assert_eq!(
        (found.old.action, found.new.action),
        (PolicyAction::Deny, PolicyAction::Allow)
    );
    // The same command rules on both sides: no class proof, so "unknown" with the reason.
    let diffs = analysis::diff(&written, &written, &tools());
    let ToolDiff::Unknown { reason, calls, .. } = verdict(&diffs, "shell") else {
        panic!("{diffs:#?}")
    };
    assert!(reason.contains("command_prefix"), "{reason}");
    assert!(*calls > 0);
    // A glob on a path field against path_within: the glob's own path is the witness.
    let glob = one(
        r#"{"rules": [{"id": "pem", "tool": "read_file", "action": "deny", "reason": "keys",
            "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/data/*.pem"}}},
           {"id": "read-data", "tool": "read_file", "action": "allow", "reason": "data",
            "when": {"path_within": {"pointer": "/path", "roots": ["/srv/data"]}}}]}"#,
    );
    let found = witness(&one(REFUNDS), &glob, "read_file");
    assert!(
        found.arguments["path"].as_str().unwrap().ends_with(".pem"),
        "{found:?}"
    );
}

#[test]
fn numbers_that_cannot_be_compared_exactly_are_a_class_of_their_own() {
    // No exact number satisfies both bounds, but a number that may have been rounded cannot be
    // judged, and an ask rule applies to what it cannot judge.
    let unjudgeable = one(
        r#"{"rules": [{"id": "odd", "tool": "refund", "action": "ask", "reason": "odd",
            "when": {"all": [{"range": {"pointer": "/cents", "max": 0}}, {"range": {"pointer": "/cents", "min": 1}}]}}]}"#,
    );
    let empty = one(r#"{"rules": []}"#);
    let found = witness(&empty, &unjudgeable, "refund");
    let cents = found.arguments["cents"].as_f64().unwrap();
    assert!(cents.abs() >= 9_007_199_254_740_992.0, "{found:?}");
}

#[test]
fn paths_that_cannot_be_judged_are_a_class_of_their_own() {
    let unjudgeable = one(
        r#"{"rules": [{"id": "odd", "tool": "read_file", "action": "ask", "reason": "odd",
            "when": {"all": [{"path_within": {"pointer": "/path", "roots": ["/srv"]}},
                             {"not": {"path_within": {"pointer": "/path", "roots": ["/srv"]}}}]}}],
            "paths": {"working_directory": "/srv"}}"#,
    );
    let empty = one(r#"{"rules": [], "paths": {"working_directory": "/srv"}}"#);
    let found = witness(&empty, &unjudgeable, "read_file");
    assert!(
        found.arguments["path"].as_str().unwrap().starts_with('~'),
        "{found:?}"
    );
}

#[test]
fn past_the_budget_the_answer_is_unknown_and_single_changes_still_find_a_witness() {
    // 40 bounds on /cents and 40 values each on /currency and /note: far more combinations than
    // the budget allows.
    let rules: Vec<Value> = (0..40)
        .map(|index| {
            json!({"id": format!("r{index}"), "tool": "refund", "action": "allow", "reason": "r",
                   "when": {"all": [
                       {"range": {"pointer": "/cents", "min": index * 10, "max": index * 10 + 5}},
                       {"equals": {"pointer": "/currency", "value": format!("C{index}")}},
                       {"not": {"equals": {"pointer": "/note", "value": format!("n{index}")}}}]}})
        })
        .collect();
    let text = json!({ "rules": rules }).to_string();
    let diffs = analysis::diff(&one(&text), &one(&text), &tools());
    let ToolDiff::Unknown { reason, calls, .. } = verdict(&diffs, "refund") else {
        panic!("{diffs:#?}")
    };
    assert!(reason.contains("exceed the budget of 20000"), "{reason}");
    assert!(*calls > 100 && *calls < analysis::CALL_BUDGET, "{calls}");
    // One more rule in the new policy: changing one field of the base call shows it.
    let mut wider = rules.clone();
    wider.push(
        json!({"id": "big", "tool": "refund", "action": "ask", "reason": "big",
                      "when": {"range": {"pointer": "/cents", "min": 100_000}}}),
    );
    let found = witness(
        &one(&text),
        &one(&json!({ "rules": wider }).to_string()),
        "refund",
    );
    assert_eq!(found.new.action, PolicyAction::Ask);
}

#[test]
fn a_base_call_is_built_for_schemas_with_required_fields_of_every_kind() {
    let shapes = crate::common::registry([counted(
        "shapes",
        json!({"type": "object", "properties": {
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 2}, "minItems": 2},
            "none": {"type": "null"},
            "opt": {"type": ["string", "null"]},
            "meta": {"type": "object", "properties": {"k": {"type": "string", "minLength": 3}}, "required": ["k"]},
            "level": {"type": "integer", "minimum": 4}
        }, "required": ["flag", "tags", "none", "meta", "level"]}),
        &Arc::default(),
    )]);
    let load = |text: &str| Analysed::policy(RulePolicy::from_json(text, &shapes).unwrap());
    let text = r#"{"rules": [{"id": "a", "tool": "shapes", "action": "allow", "reason": "r",
        "when": {"not": {"equals": {"pointer": "/opt", "value": null}}}}]}"#;
    let diffs = analysis::diff(&load(text), &load(text), &shapes);
    assert!(matches!(diffs[0], ToolDiff::Same { .. }), "{diffs:#?}");
    // The null class of a field typed ["string", "null"] is found.
    let none =
        load(r#"{"rules": [{"id": "a", "tool": "shapes", "action": "allow", "reason": "r"}]}"#);
    let diffs = analysis::diff(&none, &load(text), &shapes);
    let ToolDiff::Differs { witnesses, .. } = &diffs[0] else {
        panic!("{diffs:#?}")
    };
    assert_eq!(witnesses[0].arguments["opt"], Value::Null, "{witnesses:?}");
}

#[test]
fn values_that_are_not_independent_answer_unknown() {
    let nested = crate::common::registry([counted(
        "nested",
        json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "string"}}},
            "list": {"type": "array", "items": {"type": "integer"}}
        }}),
        &Arc::default(),
    )]);
    let load = |text: &str| Analysed::policy(RulePolicy::from_json(text, &nested).unwrap());
    let both = load(
        r#"{"rules": [{"id": "a", "tool": "nested", "action": "deny", "reason": "r",
            "when": {"equals": {"pointer": "/a", "value": {"b": "x"}}}},
           {"id": "b", "tool": "nested", "action": "allow", "reason": "r",
            "when": {"equals": {"pointer": "/a/b", "value": "y"}}}]}"#,
    );
    let diffs = analysis::diff(&both, &both, &nested);
    let ToolDiff::Unknown { reason, .. } = &diffs[0] else {
        panic!("{diffs:#?}")
    };
    assert!(reason.contains("read both /a and /a/b"), "{reason}");
    let numbers = load(
        r#"{"rules": [{"id": "a", "tool": "nested", "action": "allow", "reason": "r",
            "when": {"equals": {"pointer": "/list", "value": [1, 2]}}}]}"#,
    );
    let diffs = analysis::diff(&numbers, &numbers, &nested);
    let ToolDiff::Unknown { reason, .. } = &diffs[0] else {
        panic!("{diffs:#?}")
    };
    assert!(reason.contains("holding numbers"), "{reason}");
}

// ---- explanations -------------------------------------------------------------------------------

#[test]
fn an_explanation_names_what_decided_and_the_smallest_change_allowed_never_a_value() {
    let policy = one(REFUNDS);
    let explain = |tool: &str, arguments: Value, principal: Option<Principal>| {
        let mut call = ToolCall::new("c1", tool, arguments);
        if let Some(principal) = principal {
            call = call.with_principal(principal);
        }
        analysis::explain(&policy, &tools(), call).unwrap()
    };
    let outside = explain(
        "read_file",
        json!({"path": "/home/s3cret-name/notes"}),
        None,
    );
    assert_eq!(outside.decision.action, PolicyAction::Deny);
    assert_eq!(
        outside.summary,
        "denied: no rule allows this call (default deny)"
    );
    assert_eq!(
        outside.allowed_if.as_deref(),
        Some("allowed if /path were under /srv/data")
    );
    let text = format!("{outside:?}");
    assert!(!text.contains("s3cret"), "{text}");

    let big = explain("refund", json!({"cents": 5000, "currency": "EUR"}), None);
    assert_eq!(
        big.summary,
        "denied: no rule allows this call (default deny)"
    );
    let hint = big.allowed_if.unwrap();
    assert!(hint.starts_with("allowed if /cents were "), "{hint}");
    assert!(!hint.contains("5000"), "{hint}");

    let prod = explain("deploy", json!({"env": "prod"}), None);
    assert_eq!(prod.summary, "held for a person by rule \"deploy-prod\"");
    assert_eq!(
        prod.allowed_if.as_deref(),
        Some("allowed if /env were \"dev\"")
    );

    let ops = one(
        r#"{"rules": [{"id": "ops", "tool": "deploy", "action": "allow", "reason": "ops",
            "principals": {"groups": ["ops"]}},
           {"id": "no-prod", "tool": "deploy", "action": "deny", "reason": "never prod",
            "when": {"equals": {"pointer": "/env", "value": "prod"}}}]}"#,
    );
    let explained = analysis::explain(
        &ops,
        &tools(),
        ToolCall::new("c1", "deploy", json!({"env": "staging"})),
    )
    .unwrap();
    assert_eq!(
        explained.allowed_if.as_deref(),
        Some("allowed for a caller in ops")
    );
    let denied = analysis::explain(
        &ops,
        &tools(),
        ToolCall::new("c1", "deploy", json!({"env": "prod"}))
            .with_principal(Principal::new("sam", ["ops"])),
    )
    .unwrap();
    assert_eq!(denied.summary, "denied by rule \"no-prod\"");
    assert!(
        denied
            .allowed_if
            .as_deref()
            .unwrap()
            .starts_with("allowed if /env were \""),
        "{denied:?}"
    );
    // A call that does not fit the schema is not decided at all.
    let refused = analysis::explain(
        &ops,
        &tools(),
        ToolCall::new("c1", "deploy", json!({"env": "moon"})),
    );
    assert!(refused.unwrap_err().contains("env"));
}

// ---- findings -----------------------------------------------------------------------------------

#[test]
fn dead_and_shadowed_rules_and_a_layer_that_adds_nothing_are_found() {
    let policy = one(r#"{"rules": [
          {"id": "never", "tool": "refund", "action": "allow", "reason": "contradiction",
           "when": {"all": [{"range": {"pointer": "/cents", "max": 10}}, {"range": {"pointer": "/cents", "min": 20}}]}},
          {"id": "small", "tool": "refund", "action": "allow", "reason": "small",
           "when": {"range": {"pointer": "/cents", "max": 100}}},
          {"id": "review", "tool": "refund", "action": "ask", "reason": "review",
           "when": {"range": {"pointer": "/cents", "min": 50, "max": 80}}},
          {"id": "no-mid", "tool": "refund", "action": "deny", "reason": "mid",
           "when": {"range": {"pointer": "/cents", "min": 40, "max": 90}}},
          {"id": "dev", "tool": "deploy", "action": "allow", "reason": "dev",
           "when": {"equals": {"pointer": "/env", "value": "dev"}}}
        ]}"#);
    let found = analysis::findings(&policy, &tools());
    let kinds: Vec<(Option<&str>, FindingKind)> = found
        .iter()
        .map(|finding| (finding.rule_id.as_deref(), finding.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (Some("never"), FindingKind::Dead),
            (Some("review"), FindingKind::Shadowed)
        ],
        "{found:#?}"
    );
    assert!(found[1].message.contains("it can never ask"), "{found:#?}");

    // A project layer allowing only what the organisation already allows adds nothing.
    let organisation = load(REFUNDS);
    let project = load(
        r#"{"rules": [{"id": "dev-too", "tool": "deploy", "action": "allow", "reason": "dev",
            "when": {"equals": {"pointer": "/env", "value": "dev"}}}]}"#,
    );
    let stack = Analysed::layers([("organisation", organisation), ("project", project)]).unwrap();
    let found = analysis::findings(&stack, &tools());
    assert!(
        found
            .iter()
            .any(|finding| finding.kind == FindingKind::LayerAddsNothing
                && finding.layer == "project"),
        "{found:#?}"
    );
    assert!(
        !found
            .iter()
            .any(|finding| finding.kind == FindingKind::LayerAddsNothing
                && finding.layer == "organisation"),
        "{found:#?}"
    );
}

// ---- never a false "same" -----------------------------------------------------------------------

/// A random rule on `refund` (cents, currency) or `read_file` (path), from the kinds whose
/// classes the analysis knows exactly.
fn rule_strategy() -> impl Strategy<Value = Value> {
    let bound = -3_i64..6;
    let range = (
        proptest::option::of(bound.clone()),
        proptest::option::of(bound),
    )
        .prop_filter("a range has a bound", |(a, b)| a.is_some() || b.is_some())
        .prop_map(|(min, max)| {
            let mut range = json!({"pointer": "/cents"});
            if let Some(min) = min {
                range["min"] = json!(min);
            }
            if let Some(max) = max {
                range["max"] = json!(max);
            }
            json!({ "range": range })
        });
    // Literals and roots spelled like the names the analysis builds "any other value" from.
    let currency = prop::sample::subsequence(vec!["EUR", "USD", "GBP", "zz-toolgate-fresh"], 1..3)
        .prop_map(|values| json!({"one_of": {"pointer": "/currency", "values": values}}));
    let leaf = prop_oneof![range, currency];
    let refund_condition = leaf.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(|items| json!({ "all": items })),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|items| json!({ "any": items })),
            inner.prop_map(|item| json!({ "not": item })),
        ]
    });
    let within = prop::sample::subsequence(vec!["/a", "/a/b", "/c", "/zz-toolgate-fresh"], 1..3)
        .prop_map(|roots| json!({"path_within": {"pointer": "/path", "roots": roots}}));
    let path_condition = within.prop_recursive(2, 4, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(|items| json!({ "all": items })),
            inner.prop_map(|item| json!({ "not": item })),
        ]
    });
    let action = prop::sample::select(vec!["allow", "ask", "deny"]);
    // Groups, or an id spelled like the name the analysis builds "any other caller" from.
    let principals = proptest::option::of(prop::sample::select(vec![
        "ops",
        "dev",
        "id:zz-toolgate-fresh",
        "id:p",
    ]));
    prop_oneof![
        (action.clone(), refund_condition, principals).prop_map(|(action, when, group)| {
            let mut rule = json!({"tool": "refund", "action": action, "reason": "r", "when": when});
            if let Some(group) = group {
                rule["principals"] = match group.strip_prefix("id:") {
                    Some(id) => json!({ "ids": [id] }),
                    None => json!({ "groups": [group] }),
                };
            }
            rule
        }),
        (action, path_condition).prop_map(|(action, when)| json!({"tool": "read_file",
            "action": action, "reason": "r", "when": when})),
    ]
}

fn random_policy() -> impl Strategy<Value = Value> {
    let working_directory = proptest::option::of(prop::sample::select(vec!["/a", "/c/d"]));
    (
        prop::collection::vec(rule_strategy(), 0..4),
        working_directory,
    )
        .prop_map(|(rules, cwd)| {
            let rules: Vec<Value> = rules
                .into_iter()
                .enumerate()
                .map(|(index, mut rule)| {
                    rule["id"] = json!(format!("r{index}"));
                    rule
                })
                .collect();
            match cwd {
                Some(cwd) => json!({ "rules": rules, "paths": {"working_directory": cwd} }),
                None => json!({ "rules": rules }),
            }
        })
}

fn random_call() -> impl Strategy<Value = (String, Value, Option<Principal>)> {
    let cents = prop_oneof![
        (-6_i64..10).prop_map(|n| json!(n)),
        (-60_i32..100).prop_map(|n| json!(f64::from(n) / 10.0)),
        Just(json!(1e300)),
    ];
    let currency = proptest::option::of(prop::sample::select(vec![
        "EUR",
        "USD",
        "GBP",
        "eur",
        "JPY",
        "zz-toolgate-fresh",
        "zz-toolgate-fresh-1",
    ]));
    let path = prop::sample::select(vec![
        "/a",
        "/a/",
        "/a/b",
        "/a/b/c",
        "/a/bc",
        "/c",
        "/c/../a",
        "/d",
        "a",
        "b",
        "../a/b",
        "d/x",
        "~/x",
        "/a/./b",
        "/zz-toolgate-fresh",
        "/zz-toolgate-fresh/x",
        "zz-toolgate-fresh",
        "/zz-toolgate-fresh-1",
    ]);
    let principal = proptest::option::of((
        prop::sample::select(vec!["p", "q", "zz-toolgate-fresh", "zz-toolgate-fresh-1"]),
        prop::sample::subsequence(vec!["ops", "dev", "x"], 0..3),
    ))
    .prop_map(|caller| caller.map(|(id, groups)| Principal::new(id, groups)));
    prop_oneof![
        (cents, currency, principal.clone()).prop_map(|(cents, currency, principal)| {
            let mut arguments = json!({ "cents": cents });
            if let Some(currency) = currency {
                arguments["currency"] = json!(currency);
            }
            ("refund".to_owned(), arguments, principal)
        }),
        (path, principal).prop_map(|(path, principal)| (
            "read_file".to_owned(),
            json!({"path": path}),
            principal
        )),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Whatever two random policies are, a "same" verdict holds for random calls, and every
    /// witness is decided differently when decided again.
    #[test]
    fn a_same_verdict_never_hides_a_difference(
        old in random_policy(),
        new in random_policy(),
        calls in prop::collection::vec(random_call(), 1..40),
    ) {
        let registry = tools();
        let (Ok(old), Ok(new)) = (
            RulePolicy::from_json(&old.to_string(), &registry),
            RulePolicy::from_json(&new.to_string(), &registry),
        ) else {
            return Ok(()); // a policy the loader refuses (a contradiction, a repeat): no policy
        };
        let (old_text, new_text) = (
            serde_json::to_string(old.config()).unwrap(),
            serde_json::to_string(new.config()).unwrap(),
        );
        let diffs = analysis::diff(
            &Analysed::policy(RulePolicy::from_json(&old_text, &registry).unwrap()),
            &Analysed::policy(RulePolicy::from_json(&new_text, &registry).unwrap()),
            &registry,
        );
        let runtime = ToolRuntime::new(tools());
        for (tool, arguments, principal) in calls {
            // Only calls valid against the schema: the controller decides no other.
            if runtime.prepare(ToolCall::new("c", tool.clone(), arguments.clone())).is_err() {
                continue;
            }
            let decide = |policy: &RulePolicy| {
                policy.decide_for(&tool, principal.as_ref(), &arguments).action
            };
            if matches!(verdict(&diffs, &tool), ToolDiff::Same { .. }) {
                prop_assert_eq!(decide(&old), decide(&new), "{} {} {:?}", tool, arguments, principal);
            }
        }
        for diff in &diffs {
            match diff {
                ToolDiff::Differs { tool, witnesses } => {
                    for witness in witnesses {
                        let decide = |policy: &RulePolicy| {
                            policy.decide_for(tool, witness.principal.as_ref(), &witness.arguments)
                        };
                        let (a, b) = (decide(&old), decide(&new));
                        prop_assert!(a.action != b.action || a.approvers != b.approvers);
                    }
                }
                ToolDiff::Unknown { tool, reason, .. } => {
                    prop_assert!(
                        reason.contains("read paths or text differently"),
                        "only exact classes on {}, yet unknown: {}", tool, reason
                    );
                }
                _ => {}
            }
        }
    }
}
