//! Upstreams that fail the way real ones do — silent, dying at start, paging forever, replying
//! too much, crashing mid-call, slow to come back — each a real process
//! (`tests/mcp/hostile_upstream.py`), and what the operator and the client see.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

#[test]
fn an_upstream_that_never_answers_the_handshake_fails_startup_naming_command_and_stderr() {
    let work = Work::new("health-silent");
    let config = work.hostile_config("silent", "[limits]\nstartup_timeout_ms = 1000\n");
    let started = Instant::now();
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(stderr.contains("upstream `h` (python3 "), "{stderr}");
    assert!(
        stderr.contains("did not answer the MCP handshake within 1000 ms (limits.startup_timeout_ms); it was stopped"),
        "{stderr}"
    );
    assert!(stderr.contains("booting, will never answer"), "{stderr}");
    // Each cause once, in the operator's terms: no SDK internals.
    assert_eq!(stderr.matches("did not answer").count(), 1, "{stderr}");
    assert!(!stderr.to_lowercase().contains("transport"), "{stderr}");
}

#[test]
fn an_upstream_that_exits_at_start_is_reported_with_its_status_and_last_stderr_lines() {
    let work = Work::new("health-exit");
    let config = work.hostile_config("exit", "");
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("exited with exit status 7 before completing the MCP handshake"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fatal: missing configuration FOO_TOKEN"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("exit status 7").count(), 1, "{stderr}");
}

#[test]
fn a_command_that_does_not_exist_is_named() {
    let work = Work::new("health-nocommand");
    let config = work.write(
        "gateway.toml",
        "[upstreams.x]\ncommand = \"/nonexistent/mcp-server\"\n[policy]\nlayers = [\"p.json\"]\n",
    );
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .contains("upstream `x` (/nonexistent/mcp-server) could not be started: No such file"),
        "{stderr}"
    );
}

#[test]
fn endless_tools_list_paging_is_cut_at_the_page_bound() {
    let work = Work::new("health-endless");
    let config = work.hostile_config("endless", "[limits]\nmax_list_pages = 5\n");
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "upstream `h`: its tools/list gave more than 5 pages (limits.max_list_pages)"
        ),
        "{stderr}"
    );
}

#[test]
fn check_summarizes_tools_left_out_names_and_policy_digests() {
    let work = Work::new("health-check");
    let config = work.hostile_config("serve", "");
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("upstream h: 5 of 8 tools served"),
        "{stdout}"
    );
    // Zero-width, mixed-script and bidi names are left out at import, each said why.
    assert_eq!(stdout.matches("left out: ").count(), 3, "{stdout}");
    assert!(
        stdout.contains("policy layer ") && stdout.contains("digest sha256:"),
        "{stdout}"
    );
}

#[test]
fn tools_prints_served_names_and_argument_fields_as_json() {
    let work = Work::new("health-tools");
    let config = work.hostile_config("serve", "");
    let output = run(&["tools", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let listing: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    let upstream = &listing["upstreams"][0];
    assert_eq!(upstream["upstream"], "h");
    let echo = upstream["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["served_as"] == "h__echo")
        .expect("echo is served as h__echo");
    assert_eq!(echo["upstream_name"], "echo");
    assert_eq!(
        echo["fields"],
        json!([{"pointer": "/text", "type": "string", "required": true}])
    );
    assert_eq!(
        upstream["left_out"].as_array().unwrap().len(),
        3,
        "{stdout}"
    );
}

/// The served tools, and each left-out tool (its name quoted) with why, of `tools --config CONFIG`
/// for upstream `h`.
fn served_and_left_out(config: &std::path::Path) -> (Vec<String>, Vec<(String, String)>) {
    let output = run(&["tools", "--config", config.to_str().unwrap()]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let listing: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    let upstream = &listing["upstreams"][0];
    let served = upstream["tools"].as_array().unwrap().iter();
    let left = upstream["left_out"].as_array().unwrap().iter();
    (
        served
            .map(|tool| tool["served_as"].as_str().unwrap().to_owned())
            .collect(),
        left.map(|tool| {
            let field = |key: &str| tool[key].as_str().unwrap_or_default().to_owned();
            (field("name"), field("why"))
        })
        .collect(),
    )
}

/// A look-alike listed before the ASCII name it resembles does not push that tool out, and one
/// that appears after the ASCII tool was pinned is left out as a look-alike — not as "new", which
/// `pin` would never cure (it pins only tools served) — and `pin` keeps the ASCII tool's pin.
#[test]
fn a_fullwidth_look_alike_listed_first_leaves_the_ascii_tool_served_and_pinned() {
    let work = Work::new("health-fullwidth");
    let config = work.hostile_config("serve", "");
    std::fs::write(work.path("record.jsonl.fullwidth"), "").unwrap();
    let (served, left) = served_and_left_out(&config);
    // Served in the upstream's order, though ASCII names claimed theirs first.
    assert_eq!(
        served,
        [
            "h__\u{ff4c}\u{ff49}\u{ff53}\u{ff54}",
            "h__echo",
            "h__write",
            "h__huge",
            "h__crash",
            "h__mutate"
        ],
    );
    let look_alike = left
        .iter()
        .find(|(tool, _)| tool.contains('\u{ff45}'))
        .unwrap_or_else(|| panic!("the fullwidth tool is left out: {left:?}"));
    assert!(look_alike.1.contains("look alike"), "{look_alike:?}");

    // Pinned without the look-alike, then listed with it first.
    let work = Work::new("health-fullwidth-pinned");
    let config = work.hostile_config("serve", "");
    let output = run(&["pin", "--config", config.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
    std::fs::write(work.path("record.jsonl.fullwidth"), "").unwrap();
    for _ in 0..2 {
        let (served, left) = served_and_left_out(&config);
        assert!(served.contains(&"h__echo".to_owned()), "{served:?}");
        let look_alike = left.iter().find(|(tool, _)| tool.contains('\u{ff45}'));
        let look_alike = look_alike.expect("the fullwidth tool is left out");
        assert!(
            look_alike.1.contains("look alike") && !look_alike.1.contains("new since"),
            "{look_alike:?}"
        );
        // Accepting the upstream's list again changes nothing: echo stays pinned and served.
        let output = run(&["pin", "--config", config.to_str().unwrap()]);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(!stdout.contains('\u{ff45}'), "{stdout}");
    }
}

#[tokio::test]
async fn an_oversized_reply_ends_that_call_with_an_error_and_the_gateway_keeps_serving() {
    let work = Work::new("health-huge");
    let config = work.hostile_config("serve", "");
    let client = serve(&config).await;
    let asked = Instant::now();
    let (message, is_error) = call(&client, "h__huge", json!({})).await;
    let took = asked.elapsed();
    assert!(is_error, "{message}");
    assert!(
        message.contains("upstream `h` ran the call, but its reply was larger than 4194304 bytes"),
        "{message}"
    );
    eprintln!("an oversized reply was answered in {took:?}");
    let (message, is_error) = call(&client, "h__echo", json!({"text": "after"})).await;
    assert!(!is_error && message == "echo: after", "{message}");
    // One bound, the config's (4 MiB by default): a 2 MiB reply passes whole (the library's own
    // 1 MiB output cap refused it before), 3.9 MiB too.
    for bytes in [2 << 20, (4 << 20) - 100_000] {
        let (message, is_error) = call(&client, "h__huge", json!({"bytes": bytes})).await;
        assert!(!is_error, "{bytes}: {}", &message[..message.len().min(300)]);
        assert_eq!(message.len(), bytes);
    }
    assert_eq!(work.recorded(), ["huge", "echo", "huge", "huge"]);
}

/// A reply the SDK cannot read as one message (a lone surrogate escape, a result and an error at
/// once) ends its call at once with an error saying the upstream answered — not after the call's
/// time bound with "did not answer" — and the gateway keeps serving.
#[tokio::test]
async fn an_unreadable_reply_ends_that_call_at_once_saying_the_upstream_answered() {
    let work = Work::new("health-malformed");
    let config = work.hostile_config("serve", "[limits]\ncall_timeout_ms = 20000\n");
    let client = serve(&config).await;
    for (text, why) in [
        ("lone-surrogate", "lone UTF-16 surrogate escape"),
        ("result-and-error", "a result and an error at once"),
    ] {
        let asked = Instant::now();
        let (message, is_error) = call(&client, "h__echo", json!({"text": text})).await;
        assert!(is_error, "{message}");
        assert!(
            message.starts_with("upstream `h` answered the call, but its reply could not be read")
                && message.contains(why)
                && message.ends_with("the call may have taken effect"),
            "{message}"
        );
        assert!(
            asked.elapsed() < Duration::from_secs(10),
            "answered after {:?}",
            asked.elapsed()
        );
    }
    let (message, is_error) = call(&client, "h__echo", json!({"text": "after"})).await;
    assert!(!is_error && message == "echo: after", "{message}");
}

/// `limits.max_message_bytes` set lower bounds a reply there too, and the refusal says the
/// upstream ran the call.
#[tokio::test]
async fn the_configured_message_bound_is_the_one_bound_on_a_reply() {
    let work = Work::new("health-bound");
    let config = work.hostile_config(
        "serve",
        "[limits]
max_message_bytes = 100000
",
    );
    let client = serve(&config).await;
    let (message, is_error) = call(&client, "h__huge", json!({"bytes": 90_000})).await;
    assert!(!is_error, "{}", &message[..message.len().min(300)]);
    let (message, is_error) = call(&client, "h__huge", json!({"bytes": 200_000})).await;
    assert!(is_error);
    assert!(
        message.contains("ran the call") && message.contains("100000 bytes"),
        "{message}"
    );
}

#[tokio::test]
async fn a_crashed_upstream_answers_unavailable_nothing_ran_until_restarted() {
    let work = Work::new("health-crash");
    let config = work.hostile_config("slow-restart", "");
    let client = serve(&config).await;
    let (message, is_error) = call(&client, "h__crash", json!({})).await;
    assert!(is_error, "{message}");
    assert!(
        message.contains("whether the call took effect is unknown"),
        "{message}"
    );
    // Its restart takes 2 s to answer: meanwhile calls are not sent.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (message, is_error) = call(&client, "h__echo", json!({"text": "down"})).await;
    assert!(is_error, "{message}");
    assert!(
        message.contains("upstream `h` is unavailable") && message.contains("nothing ran"),
        "{message}"
    );
    assert_eq!(work.recorded(), ["crash"], "the call while down never left");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (message, is_error) = call(&client, "h__echo", json!({"text": "back"})).await;
        if !is_error {
            assert_eq!(message, "echo: back");
            break;
        }
        assert!(message.contains("nothing ran"), "{message}");
        assert!(Instant::now() < deadline, "not restarted: {message}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(work.recorded(), ["crash", "echo"]);
    assert_eq!(work.read("record.jsonl.starts").lines().count(), 2);
}
