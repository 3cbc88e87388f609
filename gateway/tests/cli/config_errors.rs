//! `check` on configs a file or key of which is wrong: every problem names the config file and
//! the key, and keeps the operating system's reason; nothing is said to be ok first.

use crate::support::*;

/// The hostile upstream's config (`h`, its tools allowed) with `policy` as its `[policy]` table
/// and `extra` TOML after it.
fn config(work: &Work, name: &str, policy: &str, extra: &str) -> std::path::PathBuf {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/hostile_upstream.py");
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "echo", "tool": "h__echo", "action": "allow", "reason": "test"}]}"#,
    );
    let record = work.path("record.jsonl");
    work.write(
        name,
        &format!(
            "[upstreams.h]\ncommand = \"python3\"\nargs = [{script:?}, \"serve\", {record:?}]\n\
             {policy}\n{extra}"
        ),
    )
}

/// `check --config CONFIG`: its exit code, stdout and stderr.
fn check(config: &std::path::Path) -> (Option<i32>, String, String) {
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

#[test]
fn a_file_a_config_key_names_that_cannot_be_read_is_reported_with_the_file_and_the_key() {
    let work = Work::new("config-errors");
    let layers = "[policy]\nlayers = [\"policy.json\", \"nope.json\"]";
    let cases = [
        (
            "layer.toml",
            config(&work, "layer.toml", layers, ""),
            "layer.toml: policy.layers[1]: policy ",
            "No such file or directory",
        ),
        (
            "set.toml",
            config(
                &work,
                "set.toml",
                "[policy]\nlayers = [\"policy.json\"]",
                "[listen]\nhttp = \"127.0.0.1:1\"\n[[clients]]\nid = \"a\"\n\
                 api_key_sha256 = \"4ec7d7e04819f231bd08a45cf660360becf5acae30de7e6e3ef1d8484e90739a\"\n\
                 [tool_sets.ops]\ntools = [\"h__echo\"]\npolicy = \"noset.json\"\n",
            ),
            "set.toml: tool_sets.ops.policy: policy ",
            "No such file or directory",
        ),
        (
            "key.toml",
            config(
                &work,
                "key.toml",
                "[gateway]\nstate_key_file = \"nokey\"\n[policy]\nlayers = [\"policy.json\"]",
                "",
            ),
            "key.toml: gateway.state_key_file: ",
            "No such file or directory",
        ),
        (
            "audit.toml",
            config(
                &work,
                "audit.toml",
                "[policy]\nlayers = [\"policy.json\"]",
                "[audit]\njsonl = \"no/such/dir/audit.jsonl\"\n",
            ),
            "audit.toml: audit.jsonl: ",
            "No such file or directory",
        ),
        (
            "checkpoint.toml",
            config(
                &work,
                "checkpoint.toml",
                "[policy]\nlayers = [\"policy.json\"]",
                "[audit]\njsonl = \"audit.jsonl\"\ncheckpoint_key_file = \"nokey.key\"\n\
                 checkpoint_origin = \"example.test/log\"\n",
            ),
            "checkpoint.toml: audit.checkpoint_key_file: ",
            "No such file or directory",
        ),
    ];
    for (name, path, names, reason) in cases {
        let (code, stdout, stderr) = check(&path);
        assert_eq!(code, Some(1), "{name}: {stdout}{stderr}");
        let problem = stderr
            .lines()
            .find(|line| line.contains(reason))
            .unwrap_or_else(|| panic!("{name}: no line gives the reason: {stderr}"));
        assert!(problem.contains(names), "{name}: {problem}");
        assert!(!stdout.contains(": ok"), "{name}: said ok first: {stdout}");
    }
}

#[test]
fn a_tool_set_that_holds_no_served_tool_is_a_warning_of_check() {
    let work = Work::new("config-set-empty");
    let path = config(
        &work,
        "gateway.toml",
        "[policy]\nlayers = [\"policy.json\"]",
        "[listen]\nhttp = \"127.0.0.1:1\"\n[[clients]]\nid = \"a\"\n\
         api_key_sha256 = \"4ec7d7e04819f231bd08a45cf660360becf5acae30de7e6e3ef1d8484e90739a\"\n\
         [tool_sets.ops]\ntools = [\"h__nonexistent\"]\n[tool_sets.reads]\ntools = [\"h__ech?\"]\n",
    );
    let (code, stdout, stderr) = check(&path);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "warning: tool_sets.ops: its tools (h__nonexistent) match no tool served; its endpoint /sets/ops/mcp lists none"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("tool_sets.reads"), "{stdout}");
}

/// A file the config names that never ends — a device, a FIFO nobody writes to — or that is past
/// its bound is refused at once, naming the file and the key: an independent attack had `check`
/// wait forever on a FIFO and take 19.7 GB from `/dev/zero`.
#[cfg(unix)]
#[test]
fn a_file_that_never_ends_or_is_too_long_is_refused_naming_the_key() {
    let work = Work::new("config-endless");
    let fifo = work.path("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Private, as a state key must be: refused for what it is, not for who may read it.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o600)).unwrap();
    let big = work.path("big.json");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(toolgate::files::MAX_POLICY_FILE_BYTES + 1)
        .unwrap();
    let cases = [
        (
            "[policy]\nlayers = [\"/dev/zero\"]",
            "",
            "policy.layers[0]",
            "not a regular file",
        ),
        (
            "[policy]\nlayers = [\"fifo\"]",
            "",
            "policy.layers[0]",
            "not a regular file",
        ),
        (
            "[policy]\nlayers = [\"big.json\"]",
            "",
            "policy.layers[0]",
            "longer than",
        ),
        (
            "[gateway]\nstate_key_file = \"fifo\"\n[policy]\nlayers = [\"policy.json\"]",
            "",
            "gateway.state_key_file",
            "not a regular file",
        ),
    ];
    for (index, (policy, extra, key, reason)) in cases.into_iter().enumerate() {
        let path = config(&work, &format!("endless-{index}.toml"), policy, extra);
        let (code, stdout, stderr) = check(&path);
        assert_eq!(code, Some(1), "{policy}: {stdout}{stderr}");
        let problem = stderr
            .lines()
            .find(|line| line.contains(reason))
            .unwrap_or_else(|| panic!("{policy}: no line gives the reason: {stderr}"));
        assert!(problem.contains(key), "{policy}: {problem}");
    }
}
