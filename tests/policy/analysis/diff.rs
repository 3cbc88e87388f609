//! The diff of two policies: the same rules written otherwise are the same, a change gives a
//! witness call (with its caller), and what cannot be cut into exact classes is a class of its own
//! or unknown.

use super::*;

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
