//! Each caller lists only what it may call (issue 40, item 3), through the gateway over
//! Streamable HTTP with two API keys: a tool only Alice's rule allows is not in Bob's
//! `tools/list`, and calling it by name is still denied.

use crate::raw::*;
use crate::support;

use support::*;

const LIST_CALL: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn names(body: &str) -> Vec<String> {
    // A JSON body, or server-sent events whose data line holds the reply.
    let json = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.starts_with('{'))
        .unwrap_or(body);
    let reply: serde_json::Value = serde_json::from_str(json.trim()).expect("a JSON reply");
    reply["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_tool_only_another_callers_rule_allows_is_not_listed_and_stays_denied() {
    let work = Work::new("listing-per-caller");
    let policy = r#"{"rules": [
        {"id": "echo", "tool": "h__echo", "action": "allow", "reason": "anyone"},
        {"id": "alice-writes", "tool": "h__write", "action": "allow", "reason": "alice writes",
         "principals": {"ids": ["alice"]}}]}"#;
    let (child, port, _) = serve_raw_policy(&work, "", &[], Some(policy));
    let _stopped = Stopped(child);
    let (alice, bob) = (opened(port, ALICE_KEY), opened(port, BOB_KEY));
    let listed = |key: &str, session: &str| {
        let reply = request(port, "POST", key, &[("Mcp-Session-Id", session)], LIST_CALL);
        assert_eq!(reply.status, 200, "{}", reply.head);
        names(&reply.body)
    };
    let alices = listed(ALICE_KEY, &alice);
    assert!(
        alices.contains(&"h__write".to_owned()) && alices.contains(&"h__echo".to_owned()),
        "{alices:?}"
    );
    let bobs = listed(BOB_KEY, &bob);
    assert!(
        !bobs.contains(&"h__write".to_owned()) && bobs.contains(&"h__echo".to_owned()),
        "{bobs:?}"
    );
    // The same answer the second time (kept per caller).
    assert_eq!(listed(BOB_KEY, &bob), bobs);
    // Bob's call by name is refused as a tool that does not exist is: neither the denial nor
    // what the schema says of bad arguments tells him it is there.
    let text_of = |name: &str, arguments: &str| {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
        );
        let reply = request(port, "POST", BOB_KEY, &[("Mcp-Session-Id", &bob)], &call);
        assert!(reply.body.contains("\"isError\":true"), "{}", reply.body);
        let json = reply
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.starts_with('{'))
            .unwrap_or(&reply.body)
            .to_owned();
        let reply: serde_json::Value = serde_json::from_str(&json).expect("a JSON reply");
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .replace(name, "NAME")
    };
    let missing = text_of("h__nothing", "{}");
    assert_eq!(missing, "unknown tool: NAME");
    for arguments in [
        r#"{"path":"/srv/x"}"#,
        r#"{"path":5}"#,
        r#"{"zzz":1}"#,
        "{}",
    ] {
        assert_eq!(text_of("h__write", arguments), missing, "{arguments}");
    }
    let writes = work
        .read("record.jsonl")
        .matches(r#""tool": "write""#)
        .count();
    assert_eq!(writes, 0);
    // Alice's call of it is decided as it always was.
    let call = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"h__write","arguments":{"path":"/srv/x"}}}"#;
    let reply = request(port, "POST", ALICE_KEY, &[("Mcp-Session-Id", &alice)], call);
    assert!(!reply.body.contains("\"isError\":true"), "{}", reply.body);
}

/// A subscription is asked about again at each update: once a new policy hides the resource from
/// the subscriber, its updates stop reaching it (found by an attack session: they did not).
#[test]
fn a_resource_hidden_after_a_subscription_stops_sending_its_updates() {
    let work = Work::new("listing-subscription");
    std::fs::write(work.path("record.jsonl.subscriptions"), "").unwrap();
    let policy = |readers: &str| {
        format!(
            r#"{{"rules": [
            {{"id": "echo", "tool": "h__echo", "action": "allow", "reason": "anyone"}},
            {{"id": "readers", "tool": "h__resources/read", "action": "allow", "reason": "readers",
             "principals": {{"ids": [{readers}]}}}}]}}"#
        )
    };
    let (child, port, _) = serve_raw_policy(
        &work,
        "[gateway]\npolicy_poll_ms = 100\n",
        &[],
        Some(&policy(r#""alice", "bob""#)),
    );
    let _stopped = Stopped(child);
    let (alice, bob) = (opened(port, ALICE_KEY), opened(port, BOB_KEY));
    let subscribe = r#"{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"test://watched"}}"#;
    let reply = request(
        port,
        "POST",
        BOB_KEY,
        &[("Mcp-Session-Id", &bob)],
        subscribe,
    );
    assert!(
        reply.status == 200 && !reply.body.contains("\"error\""),
        "{}{}",
        reply.head,
        reply.body
    );
    // One stream of Bob's, open throughout: Alice's call says the resource changed while Bob
    // may read it, then again after a new policy hid it from him. (A new stream would replay
    // what the session's last one was sent, so one stream tells them apart.)
    let session = bob.clone();
    let stream = std::thread::spawn(move || {
        request(port, "GET", BOB_KEY, &[("Mcp-Session-Id", &session)], "").body
    });
    let touch = || {
        let touch = r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"h__echo","arguments":{"text":"touch:test://watched"}}}"#;
        let reply = request(
            port,
            "POST",
            ALICE_KEY,
            &[("Mcp-Session-Id", &alice)],
            touch,
        );
        assert!(reply.body.contains("touch:"), "{}", reply.body);
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    touch();
    work.write("policy.json", &policy(r#""alice""#));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    touch();
    let sent = stream.join().expect("the stream is read");
    assert!(
        sent.contains("notifications/tools/list_changed"),
        "the new policy was in force: {sent}"
    );
    assert_eq!(
        sent.matches("notifications/resources/updated").count(),
        1,
        "one update while Bob may read it, none after: {sent}"
    );
}

/// A resource hidden from a caller answers its reads as one nobody serves: with two upstreams
/// serving resources, reading the hidden one's URI and a URI nobody lists read alike (the
/// denial told which upstream served it).
#[test]
fn a_hidden_resource_reads_as_one_nobody_serves() {
    let work = Work::new("listing-hidden-resource");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/hostile_upstream.py");
    for (name, uri) in [("a", "test://a"), ("b", "test://b")] {
        std::fs::write(work.path(&format!("{name}.jsonl.subscriptions")), uri).unwrap();
    }
    work.write(
        "policy.json",
        r#"{"rules": [
        {"id": "alice-reads-a", "tool": "a__resources/read", "action": "allow", "reason": "a",
         "principals": {"ids": ["alice"]}},
        {"id": "anyone-reads-b", "tool": "b__resources/read", "action": "allow", "reason": "b"}]}"#,
    );
    let (mcp, admin) = (free_port(), free_port());
    let upstream = |name: &str| {
        format!(
            "[upstreams.{name}]\ncommand = \"python3\"\nargs = [{:?}, \"serve\", {:?}]\n",
            script.display().to_string(),
            work.path(&format!("{name}.jsonl")).display().to_string()
        )
    };
    let config = work.write(
        "gateway.toml",
        &format!(
            "{}{}[policy]\nlayers = [\"policy.json\"]\n\
             [listen]\nhttp = \"127.0.0.1:{mcp}\"\nadmin = \"127.0.0.1:{admin}\"\n\
             [[clients]]\nid = \"alice\"\napi_key_sha256 = \"{}\"\n\
             [[clients]]\nid = \"bob\"\napi_key_sha256 = \"{}\"\n",
            upstream("a"),
            upstream("b"),
            sha256(ALICE_KEY),
            sha256(BOB_KEY)
        ),
    );
    let child = std::process::Command::new(GATEWAY)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .stderr(std::fs::File::create(work.path("gateway.log")).expect("log file"))
        .spawn()
        .expect("the gateway starts");
    let _stopped = Stopped(child);
    wait_for_port(mcp);
    let read = |key: &str, uri: &str| {
        let session = opened(mcp, key);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{{"uri":"{uri}"}}}}"#
        );
        request(mcp, "POST", key, &[("Mcp-Session-Id", &session)], &body)
            .body
            .replace(uri, "URI")
    };
    let alices = read(ALICE_KEY, "test://a");
    assert!(alices.contains("\"text\":\"read\""), "{alices}");
    let nobodys = read(BOB_KEY, "test://nowhere");
    assert!(
        nobodys.contains("no upstream serves a resource at this URI"),
        "{nobodys}"
    );
    assert_eq!(read(BOB_KEY, "test://a"), nobodys);
    assert!(read(BOB_KEY, "test://b").contains("\"text\":\"read\""));
}
