//! `init` as a new user runs it (issue 40, item 5): against a real upstream (the Python SDK), the
//! files it writes pass `check`, the gateway serves them over HTTP with the key it printed and
//! asks about every call; and on every way it can fail it leaves nothing behind.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::*;

fn rich_upstream() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/rich_upstream.py")
        .display()
        .to_string()
}

fn init(dir: &Path, extra: &[&str], upstream: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(GATEWAY)
        .arg("init")
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .arg("--")
        .args(upstream)
        .output()
        .expect("the gateway runs");
    let (stdout, stderr) = text(&output);
    (output.status.code(), stdout, stderr)
}

/// A free port whose next one is free too, both kept from every other test: `init --http` puts
/// the admin listener on the next port, and a port another test happens to hold there would
/// make `serve` fail.
fn free_port_and_next() -> u16 {
    loop {
        let (first, second) = (free_port(), free_port());
        if second == first + 1 {
            return first;
        }
    }
}

#[test]
fn init_writes_a_config_and_policy_that_check_and_serve_asking_about_every_call() {
    let Some(python) = python() else { return };
    let python = python.to_str().expect("a UTF-8 path").to_owned();
    let work = Work::new("init-served");
    let dir = work.path("gateway");
    let port = free_port_and_next();
    let address = format!("127.0.0.1:{port}");
    let upstream = [python.as_str(), &rich_upstream()];
    let (code, stdout, stderr) = init(&dir, &["--upstream", "rich", "--http", &address], &upstream);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let key = stdout
        .lines()
        .find(|line| line.starts_with("tg_"))
        .expect("the key is printed")
        .to_owned();
    let config = std::fs::read_to_string(dir.join("gateway.toml")).unwrap();
    assert!(!config.contains(&key), "only the key's hash is written");
    let policy: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("policy.json")).unwrap()).unwrap();
    assert_eq!(policy["rules"][0]["action"], "ask");
    assert!(
        policy["examples"]
            .as_array()
            .is_some_and(|examples| !examples.is_empty())
    );
    let check = Command::new(GATEWAY)
        .args(["check", "--config"])
        .arg(dir.join("gateway.toml"))
        .output()
        .unwrap();
    let (out, err) = text(&check);
    assert_eq!(check.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("examples decided as written"), "{out}");
    // Served with the printed key: every tool listed, a call held for a person (this client
    // cannot be asked, so it is refused and nothing runs).
    let mut child = Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(dir.join("gateway.toml"))
        .stdin(Stdio::null())
        .spawn()
        .expect("serve starts");
    wait_for_port(port);
    let session = crate::raw::opened(port, &key);
    let header = [("Mcp-Session-Id", session.as_str())];
    let listed = crate::raw::request(port, "POST", &key, &header, crate::raw::LIST).body;
    let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rich__picture","arguments":{}}}"#;
    let called = crate::raw::request(port, "POST", &key, &header, call).body;
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        listed.contains("rich__picture") && listed.contains("rich__read_file"),
        "{listed}"
    );
    assert!(
        called.contains("ask-rich") || called.contains("a person confirms"),
        "{called}"
    );
    // Run again: nothing is overwritten without --force.
    let before = std::fs::read_to_string(dir.join("policy.json")).unwrap();
    let (code, _, stderr) = init(&dir, &["--upstream", "rich"], &upstream);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("gateway.toml exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("policy.json")).unwrap(),
        before
    );
    let (code, stdout, stderr) = init(&dir, &["--upstream", "rich", "--force"], &upstream);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let config = std::fs::read_to_string(dir.join("gateway.toml")).unwrap();
    assert!(
        config.contains("# [listen]"),
        "stdio only without --http:\n{config}"
    );
}

#[test]
fn init_refuses_what_it_cannot_write_and_leaves_nothing_behind() {
    let work = Work::new("init-refused");
    let dir = work.path("gateway");
    let broken = ["/nonexistent/mcp-server"];
    let (code, _, stderr) = init(&dir, &["--upstream", "files"], &broken);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/mcp-server"),
        "the command is named: {stderr}"
    );
    assert!(!dir.join("gateway.toml").exists() && !dir.join("policy.json").exists());
    for (extra, says) in [
        (&["--upstream", "my__files"][..], "upstream name"),
        (&["--upstream", "bad name"][..], "upstream name"),
        (
            &["--upstream", "files", "--http", "0.0.0.0:8080"][..],
            "loopback",
        ),
    ] {
        let (code, _, stderr) = init(&dir, extra, &["true"]);
        assert_eq!(code, Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
        assert!(!dir.join("gateway.toml").exists());
    }
}

/// `--force` replaces files in one step and only once everything worked: a failed run keeps the
/// files that were there, a symbolic link is replaced and never written through, and without
/// `--force` a symbolic link — dangling or not — counts as a file that exists.
#[cfg(unix)]
#[test]
fn init_never_loses_or_writes_through_a_file_it_did_not_make() {
    let work = Work::new("init-files");
    let dir = work.path("gateway");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("gateway.toml"), "# mine\n").unwrap();
    std::fs::write(dir.join("policy.json"), "{\"rules\": []}\n").unwrap();
    let (code, _, stderr) = init(&dir, &["--upstream", "x", "--force"], &["/bin/false"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("gateway.toml")).unwrap(),
        "# mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("policy.json")).unwrap(),
        "{\"rules\": []}\n"
    );
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 2, "no scratch file left: {left:?}");
    // A link to a file elsewhere, and a dangling one: refused without --force.
    let outside = work.write("outside.txt", "keep me\n");
    let linked = work.path("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&outside, linked.join("gateway.toml")).unwrap();
    std::os::unix::fs::symlink(work.path("nowhere"), linked.join("policy.json")).unwrap();
    let (code, _, stderr) = init(&linked, &["--upstream", "x"], &["/bin/false"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("exists"), "{stderr}");
    assert!(
        !work.path("nowhere").exists(),
        "nothing written through a dangling link"
    );
    let Some(python) = python() else { return };
    let python = python.to_str().expect("a UTF-8 path").to_owned();
    // With --force and a working upstream: the links are replaced, their targets untouched.
    let upstream = [python.as_str(), &rich_upstream(), "a\u{7f}b"];
    let (code, stdout, stderr) = init(&linked, &["--upstream", "x", "--force"], &upstream);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me\n");
    assert!(!work.path("nowhere").exists());
    let config = std::fs::read_to_string(linked.join("gateway.toml")).unwrap();
    assert!(
        !std::fs::symlink_metadata(linked.join("gateway.toml"))
            .unwrap()
            .is_symlink()
    );
    assert!(
        config.contains("\"a\\u007Fb\""),
        "DEL written as TOML reads it:\n{config}"
    );
    // The highest port: the approval page goes one below, not to port 0.
    let top = work.path("top");
    let (code, _, stderr) = init(
        &top,
        &["--upstream", "x", "--http", "127.0.0.1:65535"],
        &upstream,
    );
    assert_eq!(code, Some(0), "{stderr}");
    let config = std::fs::read_to_string(top.join("gateway.toml")).unwrap();
    assert!(config.contains("admin = \"127.0.0.1:65534\""), "{config}");
}
