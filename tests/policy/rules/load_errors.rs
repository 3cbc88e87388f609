//! Load errors, each naming its place: unknown tools and fields, empty parts, conflicts, repeats
//! and rules that can never decide, examples that do not behave, bad syntax, and files that cannot
//! be read.

use super::*;

fn load_problems(policy: &str) -> Vec<LoadProblem> {
    match RulePolicy::from_json(policy, &tools(&Arc::default())) {
        Err(PolicyLoadError::Invalid { problems }) => problems,
        other => panic!("expected load problems, got {other:?}"),
    }
}

fn assert_problem(policy: &str, place: &str, message_part: &str) {
    let problems = load_problems(policy);
    assert!(
        problems
            .iter()
            .any(|p| p.place.starts_with(place) && p.message.contains(message_part)),
        "no problem at {place} mentioning {message_part:?} in {problems:#?}"
    );
}

#[test]
fn load_error_unknown_tool() {
    assert_problem(
        r#"{"rules": [{"id": "r", "tool": "raed_file", "action": "allow", "reason": "x"}]}"#,
        "rules[0] (id \"r\")",
        "tool \"raed_file\" is not in the registry",
    );
}

#[test]
fn load_error_pointer_to_a_missing_field() {
    assert_problem(
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x",
            "when": {"path_within": {"pointer": "/pth", "roots": ["/work"]}}}]}"#,
        "rules[0] (id \"r\").when.path_within",
        "\"/pth\" names no field",
    );
}

#[test]
fn load_error_empty_pattern_reason_id_and_prefix() {
    let problems = load_problems(
        r#"{"rules": [
        {"id": "", "tool": "read_file", "action": "deny", "reason": "x", "when": {"glob": {"pointer": "/path", "pattern": "a"}}},
        {"id": "g", "tool": "read_file", "action": "deny", "reason": "x", "when": {"glob": {"pointer": "/path", "pattern": ""}}},
        {"id": "r", "tool": "read_file", "action": "deny", "reason": "  ", "when": {"glob": {"pointer": "/path", "pattern": "b"}}},
        {"id": "p", "tool": "exec", "action": "allow", "reason": "x", "when": {"argv_prefix": {"pointer": "/argv", "prefix": []}}}
    ]}"#,
    );
    let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
    for expected in [
        "rules[0] (id \"\"): id is empty",
        "rules[1] (id \"g\").when.glob: pattern is empty",
        "rules[2] (id \"r\"): reason is empty",
        "rules[3] (id \"p\").when.argv_prefix: prefix is empty",
    ] {
        assert!(
            messages.iter().any(|m| m == expected),
            "{expected} not in {messages:#?}"
        );
    }
}

#[test]
fn load_error_conflicting_and_repeated_rules() {
    assert_problem(
        r#"{"rules": [
        {"id": "a", "tool": "read_file", "action": "allow", "reason": "x", "when": {"glob": {"pointer": "/path", "pattern": "*.md"}}},
        {"id": "b", "tool": "read_file", "action": "deny", "reason": "y", "when": {"glob": {"pointer": "/path", "pattern": "*.md"}}}
    ]}"#,
        "rules[1] (id \"b\")",
        "conflicts with rules[0]",
    );
    assert_problem(
        r#"{"rules": [
        {"id": "a", "tool": "read_file", "action": "allow", "reason": "x"},
        {"id": "a2", "tool": "read_file", "action": "allow", "reason": "y"}
    ]}"#,
        "rules[1] (id \"a2\")",
        "repeats rules[0]",
    );
    assert_problem(
        r#"{"rules": [
        {"id": "a", "tool": "read_file", "action": "allow", "reason": "x"},
        {"id": "a", "tool": "shell", "action": "allow", "reason": "y"}
    ]}"#,
        "rules[1] (id \"a\")",
        "id repeats rules[0]",
    );
}

#[test]
fn load_error_rule_shadowed_by_an_unconditional_stricter_one() {
    assert_problem(
        r#"{"rules": [
        {"id": "never", "tool": "shell", "action": "deny", "reason": "no shell"},
        {"id": "git", "tool": "shell", "action": "allow", "reason": "git",
         "when": {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}}
    ]}"#,
        "rule \"git\"",
        "can never decide",
    );
}

#[test]
fn load_error_examples_that_do_not_behave() {
    let policy = r#"{"rules": [{"id": "ws", "tool": "read_file", "action": "allow", "reason": "x",
        "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}},
        "match": [{"path": "/etc/passwd"}, {"nope": 1}],
        "not_match": [{"path": "/work/a"}]}]}"#;
    assert_problem(policy, "rules[0] (id \"ws\").match[0]", "does not apply");
    assert_problem(
        policy,
        "rules[0] (id \"ws\").match[1]",
        "not valid arguments",
    );
    assert_problem(policy, "rules[0] (id \"ws\").not_match[0]", "applies");
}

#[test]
fn load_error_relative_root_and_bad_pointer_syntax() {
    let problems = load_problems(
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x",
        "when": {"all": [{"path_within": {"pointer": "/path", "roots": ["work"]}},
                         {"glob": {"pointer": "path", "pattern": "*"}}]}}]}"#,
    );
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].message.contains("not a plain absolute path"));
    assert!(problems[1].message.contains("must start with '/'"));
}

#[test]
fn load_error_unknown_keys_and_bad_json() {
    for text in [
        r#"{"rules": [], "default": "allow"}"#,
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x", "priority": 1}]}"#,
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x",
            "when": {"glob": {"pointer": "/path", "pattern": "*", "case_insensitive": true}}}]}"#,
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "permit", "reason": "x"}]}"#,
        r#"{"rules": [{"id": "r", "tool": "read_file", "action": "allow", "reason": "x",
            "when": {"regex": {"pointer": "/path", "pattern": ".*"}}}]}"#,
        r#"{"rules": ["#,
    ] {
        assert!(
            matches!(
                RulePolicy::from_json(text, &tools(&Arc::default())),
                Err(PolicyLoadError::Syntax { .. })
            ),
            "{text}"
        );
    }
}

#[test]
fn load_error_missing_file_names_the_path() {
    let error =
        RulePolicy::from_file("/nonexistent/policy.json", &tools(&Arc::default())).unwrap_err();
    assert!(matches!(error, PolicyLoadError::Read { .. }));
    let cause = std::error::Error::source(&error).and_then(std::error::Error::source);
    assert!(
        cause.is_some_and(|cause| cause.is::<std::io::Error>()),
        "the I/O error is reachable as a source"
    );
    assert!(error.to_string().contains("/nonexistent/policy.json"));
}

#[test]
fn policy_loads_from_a_file() {
    let path = std::env::temp_dir().join(format!("toolgate-policy-{}.json", std::process::id()));
    std::fs::write(&path, WORKSPACE_POLICY).unwrap();
    let loaded = RulePolicy::from_file(&path, &tools(&Arc::default()));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        loaded.unwrap().digest(),
        workspace_policy(&tools(&Arc::default())).digest()
    );
}

#[test]
fn read_errors_compare_by_kind_and_text_and_show_the_os_error() {
    let missing =
        std::env::temp_dir().join(format!("toolgate-no-such-policy-{}", std::process::id()));
    let read_error =
        |path: &std::path::Path| match RulePolicy::from_file(path, &tools(&Arc::default())) {
            Err(PolicyLoadError::Read { source, .. }) => source,
            other => panic!("expected a read error, got {other:?}"),
        };
    let (first, again) = (read_error(&missing), read_error(&missing));
    assert_eq!(first, again);
    let directory = read_error(&std::env::temp_dir());
    assert_ne!(first, directory, "not found is not is-a-directory");
    let os = std::error::Error::source(&first)
        .expect("the io::Error")
        .to_string();
    assert_eq!(first.to_string(), os);
    assert!(!os.is_empty());
}

#[test]
fn a_pattern_rule_inert_on_every_tool_it_covers_is_a_load_error_naming_the_stricter_rule() {
    let runs = std::sync::Arc::default();
    let registry = ToolRegistry::new([
        counted("srv__a", json!({"type": "object"}), &runs),
        counted("srv__b", json!({"type": "object"}), &runs),
    ])
    .unwrap();
    let load =
        |rules: &str| RulePolicy::from_json(&format!(r#"{{"rules": [{rules}]}}"#), &registry);
    let pattern =
        r#"{"id": "srv", "tool": "srv__*", "action": "allow", "reason": "the server's tools"}"#;
    for (stricter, verb) in [("deny", "denies"), ("ask", "asks for")] {
        let both = format!(
            r#"{pattern},
               {{"id": "a", "tool": "srv__a", "action": "{stricter}", "reason": "r"}},
               {{"id": "b", "tool": "srv__b", "action": "{stricter}", "reason": "r"}}"#
        );
        match load(&both) {
            Err(PolicyLoadError::Invalid { problems }) => {
                let problem = problems
                    .iter()
                    .find(|p| p.place == r#"rule "srv""#)
                    .unwrap_or_else(|| panic!("{problems:?}"));
                assert!(
                    problem.message.starts_with("can never decide: rule")
                        && problem.message.contains(&format!(" {verb} tool \"srv__")),
                    "{}",
                    problem.message
                );
            }
            other => panic!("{stricter}: {other:?}"),
        }
        // Inert on one tool only: it still decides the other, so it loads.
        let one = format!(
            r#"{pattern}, {{"id": "a", "tool": "srv__a", "action": "{stricter}", "reason": "r"}}"#
        );
        assert!(load(&one).is_ok(), "{stricter}");
    }
}

#[test]
fn load_error_ids_that_read_alike_and_a_byte_order_mark_is_read_past() {
    // A control, invisible or bidi character in an id of each kind: `a\u{0}` and `a` read alike
    // in a reason, the audit log and the page (an independent attack loaded one).
    let problems = load_problems(
        r#"{"rules": [
        {"id": "a\u0000", "tool": "read_file", "action": "deny", "reason": "x"},
        {"id": "b\u202e", "tool": "exec", "action": "deny", "reason": "x"}],
        "limits": [{"id": "c\u200b", "tool": "read_file", "max": 1, "per": "hour", "over": "deny",
                    "reason": "x"}],
        "flows": [{"id": "d\u0007", "tool": "exec", "action": "ask", "reason": "x",
                   "after": {"tool": "read_file", "within": "hour"}}]
    }"#,
    );
    for place in ["rules[0]", "rules[1]", "limits[0]", "flows[0]"] {
        assert!(
            problems
                .iter()
                .any(|problem| problem.place.starts_with(place)
                    && problem.message == "id holds a control, invisible or bidi character"),
            "{place}: {problems:#?}"
        );
    }
    // White space at an id's ends, or other than a space inside it: `all` and `all ` read alike.
    let problems = load_problems(
        r#"{"rules": [
        {"id": "all", "tool": "read_file", "action": "deny", "reason": "x"},
        {"id": "all ", "tool": "exec", "action": "deny", "reason": "x"},
        {"id": "a b", "tool": "exec", "action": "deny", "reason": "x"},
        {"id": "c ", "tool": "exec", "action": "deny", "reason": "x"},
        {"id": "two words", "tool": "exec", "action": "deny", "reason": "x"}]}"#,
    );
    for place in ["rules[1]", "rules[2]", "rules[3]"] {
        assert!(
            problems
                .iter()
                .any(|problem| problem.place.starts_with(place)),
            "{place}: {problems:#?}"
        );
    }
    assert!(
        !problems.iter().any(|problem| {
            (problem.place.starts_with("rules[0]") || problem.place.starts_with("rules[4]"))
                && problem.message.starts_with("id ")
        }),
        "{problems:#?}"
    );
    // A byte-order mark (a Windows editor's) before the policy is read past; the same policy.
    let text = r#"{"rules": [{"id": "a", "tool": "read_file", "action": "allow", "reason": "x"}]}"#;
    let registry = tools(&Arc::default());
    let plain = RulePolicy::from_json(text, &registry).unwrap();
    let marked = RulePolicy::from_json(&format!("\u{feff}{text}"), &registry).unwrap();
    assert_eq!(plain.digest(), marked.digest());
}

/// With the `unicode` feature, ids and labels drawn alike but written apart fail the load, as
/// tool names do: `oca` and `оса` (in Cyrillic) read alike in a reason, the audit log and the
/// page, an id mixing scripts could pass for another, and a flow rule reading `secret` never holds on a result labelled `sеcret` (a
/// Cyrillic е) — documented as out of reach until 7 December 2026.
#[cfg(feature = "unicode")]
#[test]
fn load_error_ids_and_labels_drawn_alike_but_written_apart() {
    let problems = load_problems(
        "{\"rules\": [
        {\"id\": \"oca\", \"tool\": \"read_file\", \"action\": \"deny\", \"reason\": \"x\"},
        {\"id\": \"\u{43e}\u{441}\u{430}\", \"tool\": \"exec\", \"action\": \"deny\", \"reason\": \"x\"},
        {\"id\": \"caf\u{e9}\", \"tool\": \"exec\", \"action\": \"deny\", \"reason\": \"x\"},
        {\"id\": \"rule-1\", \"tool\": \"exec\", \"action\": \"deny\", \"reason\": \"x\"}],
        \"limits\": [{\"id\": \"cafe\u{301}\", \"tool\": \"read_file\", \"max\": 1, \"per\": \"hour\",
                    \"over\": \"deny\", \"reason\": \"x\"}],
        \"flows\": [{\"id\": \"rule-l\", \"tool\": \"exec\", \"action\": \"ask\", \"reason\": \"x\",
                   \"after\": {\"tool\": \"read_file\", \"within\": \"hour\"}},
                  {\"id\": \"p\u{430}y\u{430}l\", \"tool\": \"exec\", \"action\": \"ask\", \"reason\": \"x\",
                   \"after\": {\"tool\": \"read_file\", \"within\": \"hour\"}}]
    }",
    );
    let at = |place: &str| {
        problems
            .iter()
            .find(|problem| problem.place.starts_with(place) && problem.message.starts_with("id "))
            .map(|problem| problem.message.clone())
    };
    // `оса` is drawn like the ASCII `oca`: refused as such, whoever holds `oca`.
    assert!(
        at("rules[1]")
            .is_some_and(|message| message.contains(r#"drawn like an ASCII id (skeleton "oca")"#)),
        "{problems:#?}"
    );
    for (place, first) in [("limits[0]", "rules[2]"), ("flows[0]", "rules[3]")] {
        let message = at(place).unwrap_or_else(|| panic!("{place}: {problems:#?}"));
        assert!(
            message.contains("looks like it") && message.contains(first),
            "{place}: {message}"
        );
    }
    // Latin `p`, `l` and Cyrillic `а`: one id in two scripts.
    assert!(
        at("flows[1]").is_some_and(|message| message.contains("mixes scripts")),
        "{problems:#?}"
    );
    for first in ["rules[0]", "rules[2]", "rules[3]"] {
        assert_eq!(at(first), None, "the first of each is not the problem");
    }
    // Labels: one defined in `labels`, one given by a result rule, drawn alike (`copy`, and
    // `сору` in Cyrillic), and one given by a result rule mixing scripts (`sеcret`).
    let problems = load_problems(
        "{\"rules\": [{\"id\": \"a\", \"tool\": \"*\", \"action\": \"allow\", \"reason\": \"x\"}],
          \"labels\": {\"copy\": [\"read_file\"]},
          \"results\": [{\"id\": \"keys\", \"tool\": \"read_file\", \"detect\": [\"private_key\"],
                       \"action\": \"label\", \"label\": \"\u{441}\u{43e}\u{440}\u{443}\", \"reason\": \"x\"},
                      {\"id\": \"tokens\", \"tool\": \"read_file\", \"detect\": [\"api_token\"],
                       \"action\": \"label\", \"label\": \"s\u{435}cret\", \"reason\": \"x\"}]}",
    );
    let label_problem = |place: &str, part: &str| {
        problems
            .iter()
            .any(|problem| problem.place == place && problem.message.contains(part))
    };
    assert!(
        label_problem(
            r#"results[0] (id "keys").label"#,
            "label is drawn like an ASCII label (skeleton \"copy\")"
        ) && label_problem(r#"results[1] (id "tokens").label"#, "label mixes scripts"),
        "{problems:#?}"
    );
    // Ids and labels in one script each, and a label read as written by many rules, load.
    let registry = tools(&Arc::default());
    let policy = "{\"rules\": [
        {\"id\": \"\u{43a}\u{430}\u{440}\u{442}\u{44b}\", \"tool\": \"read_file\", \"action\": \"allow\", \"reason\": \"x\"},
        {\"id\": \"cards\", \"tool\": \"exec\", \"action\": \"allow\", \"reason\": \"x\"}],
        \"labels\": {\"secret\": [\"read_file\"]},
        \"results\": [{\"id\": \"keys\", \"tool\": \"read_file\", \"detect\": [\"private_key\"],
                     \"action\": \"label\", \"label\": \"secret\", \"reason\": \"x\"}]}";
    RulePolicy::from_json(policy, &registry).unwrap_or_else(|error| panic!("{error}"));
}

/// Principal ids and groups a rule or its approvers name are compared with the identity
/// provider's as written: a look-alike or mixed-script one is a rule that never holds (a second
/// attack: `іnterns` with a Cyrillic і on a deny rule; approvers nobody can be). Latin with Han
/// or Hangul is within UTS #39's highly restrictive level, and loads.
#[cfg(feature = "unicode")]
#[test]
fn load_error_principals_and_groups_drawn_alike_but_written_apart() {
    let problems = load_problems(
        "{\"rules\": [
        {\"id\": \"a\", \"tool\": \"read_file\", \"action\": \"deny\", \"reason\": \"x\",
         \"principals\": {\"groups\": [\"\u{456}nterns\"]}},
        {\"id\": \"b\", \"tool\": \"exec\", \"action\": \"deny\", \"reason\": \"x\",
         \"principals\": {\"groups\": [\"oca\"], \"ids\": [\"b\u{43e}t\"]}},
        {\"id\": \"c\", \"tool\": \"exec\", \"action\": \"ask\", \"reason\": \"x\",
         \"principals\": {\"groups\": [\"other\"]},
         \"approvers\": {\"groups\": [\"\u{43e}\u{441}\u{430}\"]}},
        {\"id\": \"d\", \"tool\": \"exec\", \"action\": \"deny\", \"reason\": \"x\",
         \"principals\": {\"groups\": [\"\u{1d0f}ps\", \"adm\u{131}n\"]}}]}",
    );
    let at = |place: &str, part: &str| {
        problems
            .iter()
            .any(|problem| problem.place == place && problem.message.contains(part))
    };
    assert!(
        at(
            r#"rules[0] (id "a").principals.groups"#,
            "group mixes scripts"
        ) && at(
            r#"rules[1] (id "b").principals.ids"#,
            "principal id mixes scripts"
        ) && at(
            r#"rules[2] (id "c").approvers.groups"#,
            r#"group is drawn like an ASCII group (skeleton "oca")"#
        ),
        "{problems:#?}"
    );
    // A third attack: drawn like the identity provider's `ops` and `admin`, in one script each.
    let drawn_like_ascii = problems
        .iter()
        .filter(|problem| {
            problem.place == r#"rules[3] (id "d").principals.groups"#
                && problem.message.contains("drawn like an ASCII group")
        })
        .count();
    assert_eq!(drawn_like_ascii, 2, "{problems:#?}");
    let registry = tools(&Arc::default());
    let policy = "{\"rules\": [
        {\"id\": \"pii-\u{68c0}\u{6d4b}\", \"tool\": \"read_file\", \"action\": \"allow\", \"reason\": \"x\",
         \"principals\": {\"groups\": [\"ops\", \"api-\u{c0ad}\u{c81c}\"]}},
        {\"id\": \"b\", \"tool\": \"exec\", \"action\": \"ask\", \"reason\": \"x\",
         \"approvers\": {\"groups\": [\"ops\", \"Stra\u{df}e\", \"Fu\u{df}ball\", \"Z\u{fc}rich\"]}}]}";
    RulePolicy::from_json(policy, &registry).unwrap_or_else(|error| panic!("{error}"));
}
