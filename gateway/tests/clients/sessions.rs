//! Streamable HTTP sessions (2025-11-25 revision) as an attacker holding a key of its own sees
//! them: a session answers only the principal that opened it (every method, every spelling of the
//! header), sessions are capped per principal and in all, idle ones are closed, and memory stays
//! bounded however many sessions one key asks for. Raw HTTP, so each header is the test's own.

use crate::support;

use std::time::{Duration, Instant};

use support::*;

use crate::raw::*;

#[test]
fn a_session_answers_only_the_principal_that_opened_it() {
    let work = Work::new("sessions-bound");
    let (child, port, _) = serve_raw(&work, "");
    let _stopped = Stopped(child);
    let alice = opened(port, ALICE_KEY);
    // Bob, with a key of his own and Alice's session id: every method is told "no such
    // session", as for an id nobody opened — in any case of the header's name.
    for name in ["Mcp-Session-Id", "mcp-session-id", "MCP-SESSION-ID"] {
        for (method, body) in [("POST", LIST), ("GET", ""), ("DELETE", "")] {
            let reply = request(port, method, BOB_KEY, &[(name, &alice)], body);
            assert_eq!(reply.status, 404, "bob {method} {name}: {}", reply.head);
        }
    }
    let unknown = request(
        port,
        "POST",
        BOB_KEY,
        &[("Mcp-Session-Id", "no-such-session")],
        LIST,
    );
    assert_eq!(unknown.status, 404);
    // Spellings of the id that are not Alice's are not Alice's session either (spaces around a
    // header value are not part of it in HTTP, so they are not another spelling).
    for spelled in [
        alice.to_uppercase(),
        format!("{alice}0"),
        alice[1..].to_owned(),
        format!("{alice}\u{200b}"),
        format!("{alice},{alice}"),
    ] {
        let reply = request(
            port,
            "POST",
            ALICE_KEY,
            &[("Mcp-Session-Id", &spelled)],
            LIST,
        );
        assert_eq!(reply.status, 404, "{spelled:?}");
    }
    // Alice's session was neither read nor ended by Bob.
    let listed = request(port, "POST", ALICE_KEY, &[("Mcp-Session-Id", &alice)], LIST);
    assert_eq!(listed.status, 200, "{}", listed.head);
    assert!(listed.body.contains("h__echo"), "{}", listed.body);
    // Alice ends it: 200 (the SDKs log a 202 as a failed termination); then it is gone.
    let ended = request(port, "DELETE", ALICE_KEY, &[("Mcp-Session-Id", &alice)], "");
    assert_eq!(ended.status, 200, "{}", ended.head);
    let gone = request(port, "POST", ALICE_KEY, &[("Mcp-Session-Id", &alice)], LIST);
    assert_eq!(gone.status, 404);
}

/// The person's request (`_meta["dev.toolgate/personRequest"]`) counts for the principal whose
/// key carried it, and only on a session that principal opened: Bob naming a path, on his own
/// session or on Alice's, never makes it Alice's person's word.
#[test]
fn a_persons_request_counts_only_for_the_principal_whose_session_carried_it() {
    let work = Work::new("sessions-person-request");
    let policy = r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "flows decide"}],
        "flows": [{"id": "path-the-person-named", "tool": "h__write", "action": "deny",
                   "reason": "a path the person did not name",
                   "provenance": {"pointer": "/path", "not_seen_in": ["person"]}}]}"#;
    let (child, port, _) = serve_raw_policy(&work, "", &[], Some(policy));
    let _stopped = Stopped(child);
    let (alice, bob) = (opened(port, ALICE_KEY), opened(port, BOB_KEY));
    let call = |key: &str, session: &str, id: u32, tool: &str, arguments: &str, person: &str| {
        let meta = if person.is_empty() {
            String::new()
        } else {
            format!(r#","_meta":{{"dev.toolgate/personRequest":"{person}"}}"#)
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}{meta}}}}}"#
        );
        request(port, "POST", key, &[("Mcp-Session-Id", session)], &body)
    };
    let writes = || {
        work.read("record.jsonl")
            .matches(r#""tool": "write""#)
            .count()
    };
    let named = call(
        BOB_KEY,
        &bob,
        3,
        "h__echo",
        r#"{"text":"hi"}"#,
        "please write /srv/bobs/notes",
    );
    assert_eq!(named.status, 200, "{}{}", named.head, named.body);
    let denied = call(
        ALICE_KEY,
        &alice,
        4,
        "h__write",
        r#"{"path":"/srv/bobs/notes"}"#,
        "",
    );
    assert!(
        denied.body.contains("path-the-person-named") && writes() == 0,
        "alice writes what only bob's person named: {}",
        denied.body
    );
    // Bob's key on Alice's session: no such session, nothing recorded for anyone.
    let foreign = call(
        BOB_KEY,
        &alice,
        5,
        "h__echo",
        r#"{"text":"hi"}"#,
        "write /srv/shared/x",
    );
    assert_eq!(foreign.status, 404, "{}", foreign.head);
    let still = call(
        ALICE_KEY,
        &alice,
        6,
        "h__write",
        r#"{"path":"/srv/shared/x"}"#,
        "",
    );
    assert!(
        still.body.contains("path-the-person-named") && writes() == 0,
        "{}",
        still.body
    );
    // Bob writes what his person named; Alice writes what hers names.
    let ran = call(
        BOB_KEY,
        &bob,
        7,
        "h__write",
        r#"{"path":"/srv/bobs/notes"}"#,
        "",
    );
    assert!(
        !ran.body.contains("path-the-person-named") && writes() == 1,
        "{}",
        ran.body
    );
    let hers = call(
        ALICE_KEY,
        &alice,
        8,
        "h__write",
        r#"{"path":"/srv/shared/x"}"#,
        "write /srv/shared/x please",
    );
    assert!(
        !hers.body.contains("path-the-person-named") && writes() == 2,
        "{}",
        hers.body
    );
}

#[test]
fn sessions_are_capped_per_principal_and_in_all_and_idle_ones_close() {
    let work = Work::new("sessions-capped");
    let (child, port, admin) = serve_raw(
        &work,
        "max_sessions = 5\nmax_sessions_per_principal = 3\nsession_idle_timeout_s = 3\n",
    );
    let _stopped = Stopped(child);
    let alice: Vec<String> = (0..3).map(|_| opened(port, ALICE_KEY)).collect();
    let refused = open(port, ALICE_KEY);
    assert_eq!(refused.status, 429, "{}", refused.head);
    assert!(
        refused.body.contains("listen.max_sessions_per_principal"),
        "{}",
        refused.body
    );
    assert!(refused.session().is_none());
    let bob: Vec<String> = (0..2).map(|_| opened(port, BOB_KEY)).collect();
    let refused = open(port, BOB_KEY);
    assert_eq!(refused.status, 429);
    assert!(
        refused.body.contains("listen.max_sessions"),
        "{}",
        refused.body
    );
    let metrics = http_get(admin, "/metrics");
    assert!(
        metrics.contains("toolgate_mcp_sessions_open 5"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolgate_mcp_sessions_refused_total{outcome=\"cap\"} 2"),
        "{metrics}"
    );
    // Ending one frees its place.
    let ended = request(port, "DELETE", BOB_KEY, &[("Mcp-Session-Id", &bob[0])], "");
    assert_eq!(ended.status, 200);
    let again = opened(port, BOB_KEY);
    // Keep one of Alice's in use past the timeout; the rest go idle and are closed.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(6) {
        let used = request(
            port,
            "POST",
            ALICE_KEY,
            &[("Mcp-Session-Id", &alice[0])],
            LIST,
        );
        assert_eq!(used.status, 200, "a session in use stays open");
        std::thread::sleep(Duration::from_millis(500));
    }
    for id in [&alice[1], &alice[2], &bob[1], &again] {
        let owner = if alice.contains(id) {
            ALICE_KEY
        } else {
            BOB_KEY
        };
        let reply = request(port, "POST", owner, &[("Mcp-Session-Id", id)], LIST);
        assert_eq!(reply.status, 404, "idle session {id} still open");
    }
    let metrics = http_get(admin, "/metrics");
    assert!(
        metrics.contains("toolgate_mcp_sessions_open 1"),
        "{metrics}"
    );
    // With the idle ones closed, Alice may open two more again.
    opened(port, ALICE_KEY);
    opened(port, ALICE_KEY);
}

#[test]
fn memory_stays_bounded_however_many_sessions_one_key_asks_for() {
    let work = Work::new("sessions-memory");
    let (child, port, _) = serve_raw(&work, "");
    let pid = child.id();
    let _stopped = Stopped(child);
    // Warm up: the first sessions allocate what every later one reuses.
    for _ in 0..40 {
        let _ = open(port, ALICE_KEY);
    }
    let before = rss_kib(pid);
    let mut refused = 0;
    for _ in 0..3000 {
        if open(port, ALICE_KEY).status == 429 {
            refused += 1;
        }
    }
    let after = rss_kib(pid);
    println!("resident memory: {before} KiB before 3,000 refused sessions, {after} KiB after");
    // 32 sessions at most (the default per principal) were ever open.
    assert_eq!(refused, 3000, "every request past the cap is refused");
    // 8,000 sessions took 860 MB before the cap; 3,000 refused ones may not take 32 MB.
    assert!(
        after < before + 32 * 1024,
        "resident memory grew from {before} KiB to {after} KiB"
    );
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}
