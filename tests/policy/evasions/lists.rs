//! Class 5, lists: every element is judged, objects field by field, and a pointer to one index of a
//! list is a load error.

use super::*;

const LISTS: &str = r#"{"paths": {"working_directory": "/work"}, "rules": [
  {"id": "copy-ws", "tool": "copy", "action": "allow", "reason": "every path in the workspace",
   "when": {"every": {"pointer": "/paths", "condition": {"path_within": {"pointer": "", "roots": ["/work"]}}}}},
  {"id": "copy-secret", "tool": "copy", "action": "deny", "reason": "no secrets",
   "when": {"some": {"pointer": "/paths", "condition": {"path_glob": {"pointer": "", "pattern": "/work/secrets/**"}}}}}
]}"#;

#[test]
fn lists_every_element_is_judged() {
    let policy = load(LISTS);
    let paths = |p: Value| json!({"paths": p});
    let cases = vec![
        (paths(json!(["/work/a", "/work/b"])), Allow),
        (paths(json!(["a", "b/c"])), Allow),
        (paths(json!([])), Allow),
        (paths(json!(["/work/a", "/etc/passwd"])), Deny),
        (paths(json!(["/etc/passwd", "/work/a"])), Deny),
        (paths(json!(["/work/a", "/work/secrets/key"])), Deny),
        (paths(json!(["/work/a", "secrets//key"])), Deny),
        (paths(json!(["/work/a", "x/../secrets/key"])), Deny),
        (paths(json!(["/work/a", 7])), Deny),
        (paths(json!(["/work/a", null])), Deny),
        (paths(json!(["/work/a", ["/etc/passwd"]])), Deny),
        (paths(json!("/work/a")), Deny),
        (paths(json!({"0": "/work/a"})), Deny),
        (json!({}), Deny),
    ];
    expect_all(&policy, "copy", &cases);
}

#[test]
fn lists_of_objects_are_judged_field_by_field() {
    let policy = load(
        r#"{"rules": [
      {"id": "ro", "tool": "copy", "action": "allow", "reason": "read-only files in /work",
       "when": {"every": {"pointer": "/files", "condition": {"all": [
          {"path_within": {"pointer": "/path", "roots": ["/work"]}},
          {"equals": {"pointer": "/mode", "value": "r"}}]}}}},
      {"id": "w", "tool": "copy", "action": "ask", "reason": "a write",
       "when": {"some": {"pointer": "/files", "condition": {"equals": {"pointer": "/mode", "value": "w"}}}}}
    ]}"#,
    );
    let files = |f: Value| json!({"files": f});
    let cases = vec![
        (files(json!([{"path": "/work/a", "mode": "r"}])), Allow),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"path": "/work/b", "mode": "r"}])),
            Allow,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"path": "/work/b", "mode": "w"}])),
            Ask,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "w"}, {"path": "/work/b", "mode": "r"}])),
            Ask,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"path": "/etc/b", "mode": "r"}])),
            Deny,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"mode": "r"}])),
            Deny,
        ),
        (
            files(json!([{"path": "/work/a", "mode": "r"}, {"path": "/work/b"}])),
            Deny,
        ),
        (files(json!([{"path": "/work/a", "mode": "r"}, "x"])), Deny),
        (files(json!([{"path": 1, "mode": "r"}])), Deny),
        (files(json!([{"path": "/work/a", "mode": ["w"]}])), Deny),
    ];
    expect_all(&policy, "copy", &cases);
}

#[test]
fn lists_a_pointer_to_one_index_of_a_list_is_a_load_error() {
    for pointer in ["/paths/0", "/paths/1", "/files/0/path", "/paths/-"] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "d", "tool": "copy", "action": "deny", "reason": "d",
                "when": {{"equals": {{"pointer": "{pointer}", "value": "x"}}}}}}]}}"#
        ));
        assert!(
            problems[0].message.contains("every or some"),
            "{pointer}: {problems:?}"
        );
    }
    // A tuple position (prefixItems) is a field of its own.
    load(
        r#"{"rules": [{"id": "a", "tool": "copy", "action": "allow", "reason": "a",
            "when": {"equals": {"pointer": "/pair/0", "value": "x"}}}]}"#,
    );
    // every / some need a list and a condition on the element's own fields.
    for (pointer, inner) in [
        ("/pair/0", r#"{"equals": {"pointer": "", "value": "x"}}"#),
        (
            "/paths",
            r#"{"equals": {"pointer": "/path", "value": "x"}}"#,
        ),
        (
            "/files",
            r#"{"equals": {"pointer": "/owner", "value": "x"}}"#,
        ),
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "a", "tool": "copy", "action": "allow", "reason": "a",
                "when": {{"every": {{"pointer": "{pointer}", "condition": {inner}}}}}}}]}}"#
        ));
        assert!(!problems.is_empty(), "{pointer} {inner}");
    }
}
