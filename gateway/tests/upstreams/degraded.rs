//! Round-4 item 4: one broken upstream never stops the rest. At start — as while running — an
//! upstream that never answers the handshake or pages its tools forever is held back (its pinned
//! tools answer "unavailable, nothing ran") and started again with backoff; a pinned tool whose
//! definition changed or that vanished is held back under its pinned definition when the policy
//! names it. `/healthz` says `degraded` naming each, the metrics count them, and `check` reports
//! them as problems.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

/// Two upstreams from the hostile script: `h` serving, `b` in `b_mode`; the policy allows
/// `h__echo` and `b__echo`; an admin listener on `admin`.
fn two_upstreams(work: &Work, b_mode: &str, admin: u16) -> std::path::PathBuf {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/hostile_upstream.py");
    work.write(
        "policy.json",
        r#"{"rules": [
          {"id": "h-echo", "tool": "h__echo", "action": "allow", "reason": "harmless"},
          {"id": "b-echo", "tool": "b__echo", "action": "allow", "reason": "harmless"}
        ]}"#,
    );
    let (h, b) = (work.path("h.jsonl"), work.path("b.jsonl"));
    work.write(
        "gateway.toml",
        &format!(
            "[upstreams.h]\ncommand = \"python3\"\nargs = [{script:?}, \"serve\", {h:?}]\n\
             [upstreams.b]\ncommand = \"python3\"\nargs = [{script:?}, {b_mode:?}, {b:?}]\n\
             [policy]\nlayers = [\"policy.json\"]\n\
             [limits]\nstartup_timeout_ms = 1000\nmax_list_pages = 5\n\
             [listen]\nstdio = true\nadmin = \"127.0.0.1:{admin}\"\n"
        ),
    )
}

fn records(work: &Work, name: &str) -> usize {
    work.read(name).lines().count()
}

#[tokio::test]
async fn an_upstream_silent_at_start_is_held_back_the_rest_served_and_it_joins_when_it_answers() {
    let work = Work::new("degraded-silent");
    let admin = free_port();
    let config = two_upstreams(&work, "silent-until-ready", admin);
    let config_arg = config.to_str().unwrap();
    // Pinned while both answer: the pins keep their definitions.
    work.write("b.jsonl.ready", "");
    let output = run(&["pin", "--config", config_arg]);
    assert!(output.status.success(), "{:?}", text(&output));
    assert!(work.read("gateway.pins.json").contains("\"definitions\""));
    std::fs::remove_file(work.path("b.jsonl.ready")).unwrap();

    // `check` names it as a problem, after saying what would be served.
    let started = Instant::now();
    let output = run(&["check", "--config", config_arg]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("upstream h: "), "{stdout}");
    assert!(
        stderr.contains("upstream `b` is held back: upstream `b` (python3 ")
            && stderr.contains("did not answer the MCP handshake within 1000 ms"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));

    // `serve` serves the rest; b's tools answer "unavailable" and nothing reaches it.
    let client = serve(&config).await;
    assert_eq!(
        call(&client, "h__echo", json!({"text": "a"})).await,
        ("echo: a".to_owned(), false)
    );
    let (message, is_error) = call(&client, "b__echo", json!({"text": "a"})).await;
    assert!(
        is_error
            && message.contains("upstream `b` is unavailable")
            && message.contains("nothing ran"),
        "{message}"
    );
    // The operator's log quotes its stderr; a caller is told only what happened.
    assert!(
        message.contains("did not answer the MCP handshake")
            && !message.contains("will never answer"),
        "{message}"
    );
    assert_eq!(records(&work, "b.jsonl"), 0);
    let health = http_get(admin, "/healthz");
    assert!(!health.contains("will never answer"), "{health}");
    assert!(health.starts_with("HTTP/1.1 503"), "{health}");
    assert!(
        health.contains("degraded") && health.contains("upstream `b` is down:"),
        "{health}"
    );
    assert!(!health.contains("upstream `h`"), "{health}");
    let metrics = http_get(admin, "/metrics");
    assert!(
        metrics.contains("toolgate_upstream_up{upstream=\"b\"} 0")
            && metrics.contains("toolgate_upstream_up{upstream=\"h\"} 1"),
        "{metrics}"
    );

    // Once it answers, the supervisor's next start brings it in.
    work.write("b.jsonl.ready", "");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (message, is_error) = call(&client, "b__echo", json!({"text": "back"})).await;
        if !is_error {
            assert_eq!(message, "echo: back");
            break;
        }
        assert!(message.contains("nothing ran"), "{message}");
        assert!(Instant::now() < deadline, "never joined: {message}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        records(&work, "b.jsonl"),
        1,
        "the calls while down never left"
    );
    let health = http_get(admin, "/healthz");
    assert!(health.ends_with("\r\n\r\nok\n"), "{health}");
}

#[tokio::test]
async fn an_upstream_paging_forever_at_start_is_held_back_and_the_rest_served() {
    let work = Work::new("degraded-endless");
    let admin = free_port();
    // Never pinned while it answered: nothing stands in for its tools, so a policy naming them
    // cannot load — and says why.
    let config = two_upstreams(&work, "endless", admin);
    let output = run(&["check", "--config", config.to_str().unwrap()]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("tool \"b__echo\" is not in the registry")
            && stderr.contains("its tools/list gave more than 5 pages (limits.max_list_pages)")
            && stderr.contains("no pinned definitions of its tools are kept"),
        "{stderr}"
    );
    // A policy that does not name them: the rest is served, b held back.
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "h-echo", "tool": "h__echo", "action": "allow", "reason": "harmless"}]}"#,
    );
    let client = serve(&config).await;
    assert_eq!(
        call(&client, "h__echo", json!({"text": "a"})).await,
        ("echo: a".to_owned(), false)
    );
    let health = http_get(admin, "/healthz");
    assert!(
        health.contains("degraded")
            && health.contains("upstream `b` is down:")
            && health.contains("more than 5 pages"),
        "{health}"
    );
}

#[tokio::test]
async fn an_upstream_back_with_a_changed_tool_it_will_not_list_again_is_sent_nothing() {
    let work = Work::new("degraded-unverified");
    let admin = free_port();
    let config = two_upstreams(&work, "silent-until-ready", admin);
    work.write("b.jsonl.ready", "");
    assert!(
        run(&["pin", "--config", config.to_str().unwrap()])
            .status
            .success()
    );
    std::fs::remove_file(work.path("b.jsonl.ready")).unwrap();
    let client = serve(&config).await;
    // It comes back rewritten (echo's description changed), answers the list its restart
    // takes and fails every later one: what it serves is never judged against the pins.
    work.write("b.jsonl.mutated", "");
    work.write("b.jsonl.list-once", "");
    work.write("b.jsonl.ready", "");
    let deadline = Instant::now() + Duration::from_secs(12);
    while Instant::now() < deadline {
        let (message, is_error) = call(&client, "b__echo", json!({"text": "x"})).await;
        assert!(is_error && message.contains("nothing ran"), "{message}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(records(&work, "b.jsonl"), 0, "the changed tool never ran");
    assert!(
        work.read("b.jsonl.starts").lines().count() >= 3,
        "it was started again"
    );
    let health = http_get(admin, "/healthz");
    assert!(
        health.starts_with("HTTP/1.1 503") && health.contains("upstream `b` is down"),
        "{health}"
    );
    assert_eq!(
        call(&client, "h__echo", json!({"text": "a"})).await,
        ("echo: a".to_owned(), false)
    );
}
