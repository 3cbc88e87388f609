//! The gateway's log as an operator reads it: at the debug level the guide suggests, no call's
//! arguments or results (the SDK logs whole messages at its debug level); no colour codes in a
//! file; JSON lines when asked.

use crate::raw::*;
use crate::support;

use support::*;

const MARKER: &str = "ARGUMENT-MARKER-7f3c9e";

fn call_echo(port: u16) {
    let session = opened(port, ALICE_KEY);
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"h__echo","arguments":{{"text":"{MARKER}"}}}}}}"#
    );
    let reply = request(
        port,
        "POST",
        ALICE_KEY,
        &[("Mcp-Session-Id", &session)],
        &call,
    );
    assert_eq!(reply.status, 200, "{}", reply.head);
    assert!(reply.body.contains(MARKER), "the call ran: {}", reply.body);
}

#[test]
fn the_debug_level_writes_no_argument_and_no_colour_to_a_file() {
    let work = Work::new("logs-debug");
    let (child, port, _) = serve_raw_with(&work, "", &[("TOOLGATE_LOG", "debug")]);
    let stopped = Stopped(child);
    call_echo(port);
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(stopped);
    let log = work.read("gateway.log");
    assert!(log.contains("DEBUG") || log.contains("INFO"), "{log}");
    assert!(!log.contains(MARKER), "an argument reached the log:\n{log}");
    assert!(!log.contains('\u{1b}'), "colour codes in a file:\n{log}");
}

#[test]
fn naming_the_sdk_is_what_lets_its_debug_lines_through() {
    // The control: with the SDK named, its debug lines (which carry messages whole) are written,
    // so the test above would see the marker if the gateway let them through by default.
    let work = Work::new("logs-debug-sdk");
    let (child, port, _) = serve_raw_with(&work, "", &[("TOOLGATE_LOG", "debug,rmcp=debug")]);
    let stopped = Stopped(child);
    call_echo(port);
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(stopped);
    assert!(work.read("gateway.log").contains(MARKER));
}

#[test]
fn json_lines_when_asked() {
    let work = Work::new("logs-json");
    let (child, port, _) = serve_raw_with(&work, "", &[("TOOLGATE_LOG_FORMAT", "json")]);
    let stopped = Stopped(child);
    let _ = open(port, "not-a-key");
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(stopped);
    let log = work.read("gateway.log");
    let mut lines = 0;
    for line in log.lines() {
        let entry: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line:?}"));
        assert!(
            entry["level"].is_string() && entry["fields"]["message"].is_string(),
            "{line}"
        );
        lines += 1;
    }
    assert!(lines >= 3, "{log}");
    assert!(log.contains("refused (401)"), "{log}");
}
