//! Class 3, paths are judged by what they name: every spelling of a denied file, relative
//! spellings, case-insensitive file systems, raw comparisons and the whole file system as a root.

use super::*;

const PATHS: &str = r#"{"paths": {"working_directory": "/work"}, "rules": [
  {"id": "ws", "tool": "read_file", "action": "allow", "reason": "workspace",
   "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}},
  {"id": "secrets", "tool": "read_file", "action": "deny", "reason": "secrets",
   "when": {"path_glob": {"pointer": "/path", "pattern": "/work/secrets/**"}}},
  {"id": "keys", "tool": "read_file", "action": "deny", "reason": "keys",
   "when": {"path_glob": {"pointer": "/path", "pattern": "*.pem"}}}
]}"#;

#[test]
fn paths_every_spelling_of_a_denied_file_is_denied() {
    let policy = load(PATHS);
    let path = |p: &str| json!({"path": p});
    let cases: Vec<(Value, PolicyAction)> = [
        "/work/secrets/key",
        "/work//secrets/key",
        "/work/./secrets/key",
        "/work/x/../secrets/key",
        "//work/secrets/key",
        "/work/secrets/./key",
        "/work/secrets//key",
        "/work/secrets/",
        "/work/secrets",
        "/work/secrets/.",
        "/work/secrets/a/b/c",
        "secrets/key",
        "./secrets/key",
        "x/../secrets/key",
        "x/y/../../secrets/key",
        "/../work/secrets/key",
        "/work/keys/server.pem",
        "server.pem",
        "a/b/./c.pem",
        "/work/secrets\\key",
        "C:\\work\\secrets\\key",
        "C:/work/secrets/key",
        "\\\\host\\share\\key",
        "file:///work/secrets/key",
        "~/secrets/key",
        "$PWD/secrets/key",
        "%2fwork%2fsecrets%2fkey",
        "/work/secrets\u{0}/../ok",
        "/work/\nsecrets/key",
        "",
    ]
    .into_iter()
    .map(|p| (path(p), Deny))
    .collect();
    expect_all(&policy, "read_file", &cases);
    // Inside the workspace and not denied: allowed, whatever the spelling.
    let allowed: Vec<(Value, PolicyAction)> = [
        "/work/a.txt",
        "a.txt",
        "./a.txt",
        "/work//src/./lib.rs",
        "src/../a.txt",
        "/work/secretsx/key",
        "/work/secret/key",
        "/work/secrets.txt",
        "/work/pem",
        "/work/a.pem.txt",
    ]
    .into_iter()
    .map(|p| (path(p), Allow))
    .collect();
    expect_all(&policy, "read_file", &allowed);
}

#[test]
fn paths_relative_spellings_resolve_against_the_one_working_directory_only() {
    let policy = load(
        r#"{"paths": {"working_directory": "/work"}, "rules": [
      {"id": "ws", "tool": "read_file", "action": "allow", "reason": "w",
       "when": {"path_within": {"pointer": "/path", "roots": ["/work", "/tmp/scratch"]}}},
      {"id": "tmp-secret", "tool": "read_file", "action": "deny", "reason": "s",
       "when": {"path_glob": {"pointer": "/path", "pattern": "/tmp/scratch/secret"}}}
    ]}"#,
    );
    let cases: Vec<(Value, PolicyAction)> = vec![
        // Relative paths are /work/…, never /tmp/scratch/…: not the denied file, but inside /work.
        (json!({"path": "secret"}), Allow),
        (json!({"path": "./secret"}), Allow),
        (json!({"path": "../tmp/scratch/secret"}), Deny),
        (json!({"path": "../../tmp/scratch/secret"}), Deny),
        (json!({"path": "../tmp/scratch/a"}), Allow),
        (json!({"path": "../etc/passwd"}), Deny),
        (json!({"path": "/tmp/scratch/secret"}), Deny),
        (json!({"path": "/tmp/scratch//secret"}), Deny),
        (json!({"path": "/tmp/scratch/x/../secret"}), Deny),
        (json!({"path": "/tmp/scratch/a"}), Allow),
        (json!({"path": ".."}), Deny),
    ];
    expect_all(&policy, "read_file", &cases);

    // Without a working directory, a relative path cannot be judged: never allowed.
    let unanchored = load(
        r#"{"rules": [{"id": "ws", "tool": "read_file", "action": "allow", "reason": "w",
            "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}}]}"#,
    );
    for relative in ["a.txt", "./a.txt", "src/lib.rs", "..", "."] {
        assert_eq!(
            unanchored
                .decide_arguments("read_file", &json!({"path": relative}))
                .action,
            Deny,
            "{relative}"
        );
    }
    assert_eq!(
        unanchored
            .decide_arguments("read_file", &json!({"path": "/work/a.txt"}))
            .action,
        Allow
    );
}

#[test]
fn paths_case_insensitive_file_systems_fold_case() {
    let policy = load(
        r#"{"paths": {"working_directory": "/Work", "case_insensitive": true}, "rules": [
      {"id": "ws", "tool": "read_file", "action": "allow", "reason": "w",
       "when": {"path_within": {"pointer": "/path", "roots": ["/Work"]}}},
      {"id": "secrets", "tool": "read_file", "action": "deny", "reason": "s",
       "when": {"path_glob": {"pointer": "/path", "pattern": "/work/Secrets/**"}}}
    ]}"#,
    );
    let path = |p: &str| json!({"path": p});
    let cases = vec![
        (path("/work/secrets/key"), Deny),
        (path("/WORK/SECRETS/KEY"), Deny),
        (path("/Work/sEcReTs/key"), Deny),
        (path("SECRETS/key"), Deny),
        (path("/work/x/../SECRETS/key"), Deny),
        (path("/work/secrets/clé"), Deny), // non-ASCII: undetermined under case folding
        (path("/work/ſecrets/key"), Deny), // ſ folds to s on some file systems
        (path("/work/secrets./key"), Deny), // Windows drops trailing dots and spaces
        (path("/work/secrets /key"), Deny),
        (path("/work/key.pem."), Deny),
        (path("/work/SECRE~1/key"), Deny), // an 8.3 short name
        (path("//work/x"), Deny),          // a UNC path: another machine
        (path("/WORK/a.txt"), Allow),
        (path("/work/A.TXT"), Allow),
        (path("a.txt"), Allow),
        (path("/elsewhere/a"), Deny),
    ];
    expect_all(&policy, "read_file", &cases);
}

#[test]
fn paths_raw_comparisons_on_path_fields_are_load_errors() {
    for (condition, why) in [
        (
            r#"{"glob": {"pointer": "/path", "pattern": "/work/secrets/*"}}"#,
            "judged as a path",
        ),
        (
            r#"{"glob": {"pointer": "/path", "pattern": "*.pem"}}"#,
            "judged as a path",
        ),
        (
            r#"{"equals": {"pointer": "/path", "value": "/work/secrets/key"}}"#,
            "judged as a path",
        ),
        (
            r#"{"one_of": {"pointer": "/path", "values": ["/work/.env"]}}"#,
            "judged as a path",
        ),
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [
          {{"id": "ws", "tool": "read_file", "action": "allow", "reason": "w",
           "when": {{"path_within": {{"pointer": "/path", "roots": ["/work"]}}}}}},
          {{"id": "d", "tool": "read_file", "action": "deny", "reason": "d", "when": {condition}}}
        ]}}"#
        ));
        assert!(
            problems[0].message.contains(why),
            "{condition}: {problems:?}"
        );
    }
    // Where no path condition judges the field, a deny or ask comparing text with '/' is refused
    // too, unless the glob says it means the raw string.
    for (action, condition) in [
        (
            "deny",
            r#"{"glob": {"pointer": "/path", "pattern": "/etc/*"}}"#,
        ),
        (
            "ask",
            r#"{"equals": {"pointer": "/path", "value": "/etc/shadow"}}"#,
        ),
        (
            "deny",
            r#"{"one_of": {"pointer": "/path", "values": ["a", "/etc/shadow"]}}"#,
        ),
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "d", "tool": "read_file", "action": "{action}", "reason": "d", "when": {condition}}}]}}"#
        ));
        assert!(problems[0].message.contains("re-spelling"), "{problems:?}");
    }
    // Under a `not` in an allow rule, the comparison must catch every spelling as well.
    let problems = load_problems(
        r#"{"rules": [{"id": "a", "tool": "read_file", "action": "allow", "reason": "a",
            "when": {"not": {"glob": {"pointer": "/path", "pattern": "/etc/*"}}}}]}"#,
    );
    assert!(problems[0].message.contains("re-spelling"), "{problems:?}");
    // A positive allow may compare raw text (it can only be stricter), and a raw glob opts out.
    load(
        r#"{"rules": [
      {"id": "a", "tool": "fetch", "action": "allow", "reason": "a",
       "when": {"one_of": {"pointer": "/url", "values": ["http://internal/"]}}},
      {"id": "d", "tool": "fetch", "action": "deny", "reason": "d",
       "when": {"glob": {"pointer": "/url", "pattern": "http://evil/*", "raw": true}}}
    ]}"#,
    );
}

#[test]
fn paths_the_whole_file_system_as_a_root_needs_an_opt_in() {
    for root in ["/", "//", "/.", "/..", "/tmp/.."] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "a", "tool": "read_file", "action": "allow", "reason": "a",
                "when": {{"path_within": {{"pointer": "/path", "roots": ["{root}"]}}}}}}]}}"#
        ));
        assert!(
            problems[0].message.contains("whole file system"),
            "{root}: {problems:?}"
        );
    }
    let everything = load(
        r#"{"rules": [{"id": "a", "tool": "read_file", "action": "allow", "reason": "a",
            "when": {"path_within": {"pointer": "/path", "roots": ["/"], "allow_root": true}}}]}"#,
    );
    assert_eq!(
        everything
            .decide_arguments("read_file", &json!({"path": "/etc/passwd"}))
            .action,
        Allow
    );
    for bad in ["relative", "C:\\", "~/x", "/a/$B"] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "a", "tool": "read_file", "action": "allow", "reason": "a",
                "when": {{"path_within": {{"pointer": "/path", "roots": [{bad:?}]}}}}}}]}}"#
        ));
        assert!(
            problems[0].message.contains("not a plain absolute path"),
            "{bad}"
        );
    }
}
