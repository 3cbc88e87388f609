//! Conditions judged exactly: a field judged as a path inside `all` / `any` / `not` / `every` /
//! `some` (and through a tuple position) may only be judged as a path; an option's value or a piece
//! of a split argv token between expected subcommands keeps a prefix match possible; a `range`
//! needs a bound; an undecided `all` or `any` names the first condition it could not judge; path
//! options are written only where they differ from the default; `equals` and `one_of` values
//! holding, inside arrays or objects, a number that cannot be compared exactly are refused at load,
//! and array and object values compare by exact numeric value at any depth.

use std::sync::Arc;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::PolicyAction::{Allow, Deny};
use toolgate::rules::PolicyLoadError;
use toolgate::*;

fn tools() -> ToolRegistry {
    let runs = Arc::default();
    let string = json!({"type": "string"});
    registry([
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": string, "n": {"type": "integer"}}}),
            &runs,
        ),
        counted(
            "copy",
            json!({"type": "object", "properties": {
                "files": {"type": "array", "items": string},
                "pair": {"type": "array", "prefixItems": [string, string]}
            }}),
            &runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {"command": string, "dir": string}}),
            &runs,
        ),
        counted(
            "exec",
            json!({"type": "object", "properties": {"argv": {"type": "array", "items": string}}}),
            &runs,
        ),
    ])
}

fn load(text: &str) -> Result<RulePolicy, PolicyLoadError> {
    RulePolicy::from_json(text, &tools())
}

/// The problems of a policy that must not load.
fn problems(text: &str) -> Vec<String> {
    match load(text) {
        Err(PolicyLoadError::Invalid { problems }) => {
            problems.iter().map(|p| p.message.clone()).collect()
        }
        other => panic!("expected load problems, got {other:?}"),
    }
}

#[test]
fn a_path_judged_inside_a_combinator_may_only_be_judged_as_a_path() {
    let path_within = r#"{"path_within": {"pointer": "/path", "roots": ["/work"]}}"#;
    for nested in [
        format!(r#"{{"all": [{path_within}]}}"#),
        format!(r#"{{"any": [{path_within}, {{"range": {{"pointer": "/n", "min": 1}}}}]}}"#),
        format!(r#"{{"not": {path_within}}}"#),
        format!(r#"{{"all": [{{"not": {{"any": [{path_within}]}}}}]}}"#),
    ] {
        let policy = format!(
            r#"{{"rules": [
              {{"id": "ws", "tool": "read_file", "action": "allow", "reason": "w", "when": {nested}}},
              {{"id": "d", "tool": "read_file", "action": "deny", "reason": "d",
                "when": {{"equals": {{"pointer": "/path", "value": "/work/key"}}}}}}
            ]}}"#
        );
        let found = problems(&policy);
        assert!(
            found.iter().any(|m| m.contains("judged as a path")),
            "{nested}: {found:?}"
        );
    }
    // The same raw comparison on a field no path condition judges loads.
    let policy = r#"{"rules": [
      {"id": "ws", "tool": "shell", "action": "allow", "reason": "w",
        "when": {"all": [{"path_within": {"pointer": "/dir", "roots": ["/work"]}}]}},
      {"id": "d", "tool": "shell", "action": "deny", "reason": "d",
        "when": {"glob": {"pointer": "/command", "pattern": "rm *"}}}
    ]}"#;
    assert!(load(policy).is_ok());
}

#[test]
fn a_path_judged_in_every_element_is_that_field_at_every_position() {
    // `every` over /files judges "/files/-" as a path; a raw comparison inside `some` (or `every`)
    // over the same list is the same field. (One index of an `items` list is refused on its own.)
    let every = r#"{"every": {"pointer": "/files", "condition": {"path_within": {"pointer": "", "roots": ["/work"]}}}}"#;
    let some = r#"{"some": {"pointer": "/files", "condition": {"path_glob": {"pointer": "", "pattern": "/work/*"}}}}"#;
    for (judged, raw) in [
        (
            every,
            r#"{"some": {"pointer": "/files", "condition": {"equals": {"pointer": "", "value": "/work/a"}}}}"#,
        ),
        (
            some,
            r#"{"every": {"pointer": "/files", "condition": {"glob": {"pointer": "", "pattern": "*.pem"}}}}"#,
        ),
    ] {
        let policy = format!(
            r#"{{"rules": [
              {{"id": "ws", "tool": "copy", "action": "allow", "reason": "w", "when": {judged}}},
              {{"id": "d", "tool": "copy", "action": "deny", "reason": "d", "when": {raw}}}
            ]}}"#
        );
        let found = problems(&policy);
        assert!(
            found.iter().any(|m| m.contains("judged as a path")),
            "{judged} / {raw}: {found:?}"
        );
    }
    // A tuple position judged as a path is the list's field too: a raw comparison on the same
    // position, another position, or every element is refused.
    for raw in [
        r#"{"glob": {"pointer": "/pair/0", "pattern": "*.pem"}}"#,
        r#"{"glob": {"pointer": "/pair/1", "pattern": "*.pem"}}"#,
        r#"{"some": {"pointer": "/pair", "condition": {"glob": {"pointer": "", "pattern": "*.pem"}}}}"#,
    ] {
        let policy = format!(
            r#"{{"rules": [
              {{"id": "ws", "tool": "copy", "action": "allow", "reason": "w",
                "when": {{"path_within": {{"pointer": "/pair/0", "roots": ["/work"]}}}}}},
              {{"id": "d", "tool": "copy", "action": "deny", "reason": "d", "when": {raw}}}
            ]}}"#
        );
        let found = problems(&policy);
        assert!(
            found.iter().any(|m| m.contains("judged as a path")),
            "{raw}: {found:?}"
        );
    }
}

#[test]
fn words_between_expected_subcommands_keep_a_prefix_match_possible() {
    let policy = load(
        r#"{"rules": [
      {"id": "add-remote", "tool": "shell", "action": "deny", "reason": "no new remotes",
       "when": {"command_prefix": {"pointer": "/command", "prefix": ["git", "remote", "add"]}}},
      {"id": "exec-add-remote", "tool": "exec", "action": "deny", "reason": "no new remotes",
       "when": {"argv_prefix": {"pointer": "/argv", "prefix": ["git", "remote", "add"]}}},
      {"id": "git", "tool": "shell", "action": "allow", "reason": "git",
       "when": {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}},
      {"id": "exec-git", "tool": "exec", "action": "allow", "reason": "git",
       "when": {"argv_prefix": {"pointer": "/argv", "prefix": ["git"]}}}
    ]}"#,
    )
    .expect("loads");
    let shell = |command: &str| {
        policy
            .decide_arguments("shell", &json!({"command": command}))
            .action
    };
    // `-x value` after `remote`: the value may be an option's, `add` still follows.
    assert_eq!(shell("git remote -x foo add origin u"), Deny);
    assert_eq!(shell("git remote add origin u"), Deny);
    assert_eq!(shell("git remote show origin"), Allow);
    // An argv token holding whitespace is split: its pieces are never the subcommand itself, and
    // the expected word after them still matches (possibly).
    let exec = |argv: serde_json::Value| {
        policy
            .decide_arguments("exec", &json!({"argv": argv}))
            .action
    };
    assert_eq!(exec(json!(["git", "remote", "x y", "add", "origin"])), Deny);
    assert_eq!(exec(json!(["git", "remote", "add", "origin"])), Deny);
    assert_eq!(exec(json!(["git", "remote", "show"])), Allow);
}

#[test]
fn a_range_without_bounds_is_a_load_error() {
    let found = problems(
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "deny", "reason": "r",
          "when": {"range": {"pointer": "/n"}}}]}"#,
    );
    assert!(
        found.iter().any(|m| m.contains("sets neither min nor max")),
        "{found:?}"
    );
    for bounds in [r#""min": 1"#, r#""max": 1"#, r#""min": 1, "max": 1"#] {
        let policy = format!(
            r#"{{"rules": [{{"id": "r", "tool": "read_file", "action": "deny", "reason": "r",
              "when": {{"range": {{"pointer": "/n", {bounds}}}}}}}]}}"#
        );
        assert!(load(&policy).is_ok(), "{bounds}");
    }
}

#[test]
fn an_undecided_all_or_any_names_the_first_condition_it_could_not_judge() {
    // Both conditions are undetermined for these arguments: the command holds shell syntax and
    // the directory is relative with no working directory. The reason names the first, in
    // either order.
    let command = r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}"#;
    let dir = r#"{"path_within": {"pointer": "/dir", "roots": ["/work"]}}"#;
    let shell_syntax = "cannot judge /command: it contains shell syntax";
    let relative = "cannot judge /dir: it is a relative path";
    for (combinator, first, second, named) in [
        ("all", command, dir, shell_syntax),
        ("all", dir, command, relative),
        ("any", command, dir, shell_syntax),
        ("any", dir, command, relative),
    ] {
        let policy = load(&format!(
            r#"{{"rules": [{{"id": "push", "tool": "shell", "action": "deny", "reason": "no pushing",
              "when": {{"{combinator}": [{first}, {second}]}}}}]}}"#
        ))
        .expect("loads");
        let decision = policy.decide_arguments(
            "shell",
            &json!({"command": "git push; ls", "dir": "rel/dir"}),
        );
        assert_eq!(decision.action, Deny);
        assert_eq!(decision.rule_id.as_deref(), Some("push"));
        assert!(
            decision.reason.as_str().starts_with(named),
            "{named}: {}",
            decision.reason
        );
    }
}

#[test]
fn path_option_builders_set_what_they_name() {
    use toolgate::rules::{Condition, PathOptions, PolicyConfig, RuleConfig};
    let built = PathOptions::default()
        .working_directory("/work")
        .case_insensitive(true);
    let parsed: PathOptions =
        serde_json::from_str(r#"{"working_directory": "/work", "case_insensitive": true}"#)
            .unwrap();
    assert_eq!(built, parsed);
    assert_eq!(built.working_directory.as_deref(), Some("/work"));
    assert!(built.case_insensitive);
    assert!(
        !PathOptions::default()
            .case_insensitive(false)
            .case_insensitive
    );
    // In force: a relative path is taken against /work, and case does not matter.
    let rules = [RuleConfig::new("ws", "read_file", PolicyAction::Allow, "w")
        .when(Condition::path_within("/path", ["/work"]))];
    let policy = RulePolicy::new(PolicyConfig::new(rules).with_paths(built), &tools()).unwrap();
    for path in ["notes.txt", "/WORK/notes.txt"] {
        let decision = policy.decide_arguments("read_file", &json!({"path": path}));
        assert_eq!(decision.action, Allow, "{path}");
    }
}

#[test]
fn default_path_options_are_left_out_of_a_written_policy() {
    use toolgate::rules::{PathOptions, PolicyConfig, RuleConfig};
    let rule = || RuleConfig::new("a", "read_file", PolicyAction::Allow, "a");
    let plain = serde_json::to_value(PolicyConfig::new([rule()])).unwrap();
    assert!(plain.get("paths").is_none(), "{plain}");
    let set = serde_json::to_value(
        PolicyConfig::new([rule()]).with_paths(PathOptions::default().case_insensitive(true)),
    )
    .unwrap();
    assert_eq!(set["paths"], json!({"case_insensitive": true}));
}

// ---- exact values ----------------------------------------------------------------------------

fn opts_tool() -> ToolRegistry {
    registry([counted(
        "set",
        json!({"type": "object", "properties": {"opts": {}}}),
        &Default::default(),
    )])
}

/// A deny of `set` when `condition` holds, then an allow of `set`.
fn deny_when(condition: &str) -> String {
    format!(
        r#"{{"rules": [{{"id": "d", "tool": "set", "action": "deny", "reason": "d", "when": {condition}}},
                      {{"id": "a", "tool": "set", "action": "allow", "reason": "a"}}]}}"#
    )
}

#[test]
fn inexact_numbers_nested_in_equals_and_one_of_values_are_load_errors() {
    for condition in [
        r#"{"equals": {"pointer": "/opts", "value": [1, 18446744073709551616]}}"#,
        r#"{"equals": {"pointer": "/opts", "value": {"n": 1e300}}}"#,
        r#"{"equals": {"pointer": "/opts", "value": {"deep": [[9007199254740993.0]]}}}"#,
        r#"{"one_of": {"pointer": "/opts", "values": [[1], [1e20]]}}"#,
        r#"{"one_of": {"pointer": "/opts", "values": [{"n": -1e300}]}}"#,
    ] {
        match RulePolicy::from_json(&deny_when(condition), &opts_tool()) {
            Err(PolicyLoadError::Invalid { problems }) => {
                assert_eq!(problems.len(), 1, "{condition}: {problems:?}")
            }
            other => panic!("{condition}: expected a load error, got {other:?}"),
        }
    }
}

#[test]
fn equals_on_arrays_and_objects_compares_numbers_by_value_at_any_depth() {
    let policy = RulePolicy::from_json(
        &deny_when(r#"{"equals": {"pointer": "/opts", "value": [1, {"n": 2.5, "m": [3]}]}}"#),
        &opts_tool(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let action = |opts: Value| {
        policy
            .decide_arguments("set", &json!({ "opts": opts }))
            .action
    };
    assert_eq!(action(json!([1, {"n": 2.5, "m": [3]}])), PolicyAction::Deny);
    assert_eq!(
        action(json!([1.0, {"m": [3.0], "n": 2.5}])),
        PolicyAction::Deny
    );
    assert_eq!(
        action(json!([1, {"n": 2.5, "m": [4]}])),
        PolicyAction::Allow
    );
    assert_eq!(action(json!([1, {"n": 2.5}])), PolicyAction::Allow);
    assert_eq!(
        action(json!([1, {"n": 2.5, "m": [3], "x": 0}])),
        PolicyAction::Allow
    );
    assert_eq!(
        action(json!([{"n": 2.5, "m": [3]}, 1])),
        PolicyAction::Allow
    );
    assert_eq!(action(json!({"0": 1})), PolicyAction::Allow);
}

/// A `one_of` of many values (looked up by hash past a few) decides every value as one of a few
/// values does (compared one by one): strings as written, normalized, and numbers beside them.
#[test]
fn a_long_one_of_decides_as_a_short_one() {
    let decide = |values: &serde_json::Value, normalize: bool, path: serde_json::Value| {
        let text = json!({
            "text": {"normalize": normalize},
            "rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "r",
                       "when": {"one_of": {"pointer": "/path", "values": values}}}]
        });
        let policy = match load(&text.to_string()) {
            Ok(policy) => policy,
            // Without the `unicode` feature `normalize` does not load.
            Err(_) => return None,
        };
        Some(
            policy
                .decide_arguments("read_file", &json!({ "path": path }))
                .action,
        )
    };
    let short = json!(["a.txt", "B.txt", 7]);
    let mut long: Vec<serde_json::Value> = (0..40).map(|n| json!(format!("f{n}"))).collect();
    long.extend([json!("a.txt"), json!("B.txt"), json!(7)]);
    let long = serde_json::Value::Array(long);
    for normalize in [false, true] {
        for path in [
            json!("a.txt"),
            json!("A.TXT"),
            json!("b.txt"),
            json!("c.txt"),
            json!(7),
            json!(7.0),
            json!("7"),
        ] {
            assert_eq!(
                decide(&short, normalize, path.clone()),
                decide(&long, normalize, path.clone()),
                "{path} normalize {normalize}"
            );
        }
    }
    assert_eq!(
        decide(&long, false, json!("f39")),
        Some(PolicyAction::Allow)
    );
    assert_eq!(decide(&long, false, json!("f40")), Some(PolicyAction::Deny));
}
