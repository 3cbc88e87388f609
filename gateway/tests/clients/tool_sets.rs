//! Named tool sets served at their own paths: a set lists only its tools, refuses the others as
//! tools that do not exist, judges its calls with its own layer too, keeps its sessions apart from
//! `/mcp`'s, and (with `[oauth]`) takes only tokens issued for its own resource.

use crate::support;

use serde_json::{Value, json};
use support::oidc::Provider;
use support::*;

use crate::raw::{INITIALIZE, INITIALIZED, Reply, request_at};

const KEY: &str = "tg_tool_sets_alice_0123456789";

/// Opens a session at `path` with `credential`: its id.
fn session(mcp: u16, path: &str, credential: &str) -> String {
    let reply = request_at(mcp, path, "POST", credential, &[], INITIALIZE);
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    let id = reply.session().expect("a session id");
    let ready = request_at(
        mcp,
        path,
        "POST",
        credential,
        &[("Mcp-Session-Id", &id)],
        INITIALIZED,
    );
    assert_eq!(ready.status, 202, "{path}: {}", ready.body);
    id
}

fn rpc(mcp: u16, path: &str, credential: &str, id: &str, method: &str, params: Value) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    request_at(
        mcp,
        path,
        "POST",
        credential,
        &[("Mcp-Session-Id", id)],
        &body,
    )
}

/// The JSON-RPC answer in a reply: its JSON body, or the event stream's message.
fn answer(reply: &Reply) -> Value {
    let text = reply
        .body
        .lines()
        .find_map(|line| {
            line.strip_prefix("data: ")
                .filter(|data| data.starts_with('{'))
        })
        .unwrap_or(&reply.body);
    serde_json::from_str(text).unwrap_or_else(|_| panic!("{}", reply.body))
}

fn listed(reply: &Reply) -> Vec<String> {
    let body = answer(reply);
    body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

fn call(mcp: u16, path: &str, credential: &str, id: &str, tool: &str) -> Value {
    let reply = rpc(
        mcp,
        path,
        credential,
        id,
        "tools/call",
        json!({"name": tool, "arguments": {"text": "hi"}}),
    );
    answer(&reply)
}

#[test]
fn a_set_lists_and_runs_only_its_tools_under_its_own_layer_too() {
    let work = Work::new("tool-sets");
    work.write(
        "ops-policy.json",
        r#"{"rules": [{"id": "ops-echo-asks", "tool": "h__echo", "action": "ask", "reason": "the ops set asks before echoing"}]}"#,
    );
    let served = serve_http(
        &work,
        &format!(
            "[[clients]]\nid = \"alice\"\ngroups = [\"ops\"]\napi_key_sha256 = \"{}\"\n\
             [tool_sets.ops]\ntools = [\"h__echo\", \"h__w*\"]\npolicy = \"ops-policy.json\"\n\
             [tool_sets.echo]\ntools = [\"h__echo\"]\n",
            sha256(KEY)
        ),
    );
    let mcp = served.mcp;
    let main = session(mcp, "/mcp", KEY);
    let ops = session(mcp, "/sets/ops/mcp", KEY);
    let echo = session(mcp, "/sets/echo/mcp", KEY);
    let everything = listed(&rpc(mcp, "/mcp", KEY, &main, "tools/list", json!({})));
    // What alice may call at all (the rest of the upstream's tools no rule allows her).
    assert_eq!(everything, ["h__echo", "h__write"]);
    assert_eq!(
        listed(&rpc(
            mcp,
            "/sets/ops/mcp",
            KEY,
            &ops,
            "tools/list",
            json!({})
        )),
        ["h__echo", "h__write"]
    );
    assert_eq!(
        listed(&rpc(
            mcp,
            "/sets/echo/mcp",
            KEY,
            &echo,
            "tools/list",
            json!({})
        )),
        ["h__echo"]
    );

    // At /mcp the main policy allows alice's echo; through `echo` too; through `ops` its own
    // layer asks first.
    let ran = call(mcp, "/mcp", KEY, &main, "h__echo");
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    let ran = call(mcp, "/sets/echo/mcp", KEY, &echo, "h__echo");
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    let held = call(mcp, "/sets/ops/mcp", KEY, &ops, "h__echo");
    assert!(held.to_string().contains("waits for a person"), "{held}");
    assert!(held.to_string().contains("the ops set asks"), "{held}");
    // A tool outside the set is a tool that does not exist there.
    let outside = call(mcp, "/sets/echo/mcp", KEY, &echo, "h__write");
    let text = outside.to_string();
    assert!(
        text.contains("h__write") && !text.contains("a person confirms writes"),
        "{text}"
    );
    assert!(
        text.to_lowercase().contains("unknown")
            || text.contains("not exist")
            || text.contains("no tool"),
        "{text}"
    );

    // A session opened at one path is unknown at another.
    let crossed = rpc(mcp, "/sets/echo/mcp", KEY, &main, "tools/list", json!({}));
    assert_eq!(crossed.status, 404, "{}", crossed.body);
    let crossed = rpc(mcp, "/mcp", KEY, &ops, "tools/list", json!({}));
    assert_eq!(crossed.status, 404, "{}", crossed.body);
    // An unknown set is no endpoint.
    let unknown = request_at(mcp, "/sets/nope/mcp", "POST", KEY, &[], INITIALIZE);
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    // Each endpoint answers at its path exactly: no alias a proxy would read differently.
    for alias in [
        "/sets/echo/mcp/",
        "/sets/echo/mcp/x",
        "/sets/echo/mcp/../../../mcp",
        "/mcp/../sets/echo/mcp",
        "/mcp/",
        "/mcp/x",
    ] {
        let reply = request_at(mcp, alias, "POST", KEY, &[], INITIALIZE);
        assert_eq!(reply.status, 404, "{alias}: {}", reply.body);
    }

    // The audit log names the set's group on the calls made through it.
    let audit = work.read("audit.jsonl");
    assert!(audit.contains("ops-echo-asks"), "{audit}");
}

#[test]
fn with_oauth_each_set_is_its_own_resource() {
    let Some(node) = node_dir() else { return };
    let work = Work::new("tool-sets-oauth");
    let provider = Provider::start(&node, &work, free_port(), "k1");
    let (mcp, admin) = (free_port(), free_port());
    let resource = format!("http://127.0.0.1:{mcp}/mcp");
    let set_resource = format!("http://127.0.0.1:{mcp}/sets/ops/mcp");
    let _served = serve_http_at(
        &work,
        mcp,
        admin,
        &format!(
            "[oauth]\nresource = \"{resource}\"\n[[oauth.issuers]]\nissuer = \"{}\"\n\
             [tool_sets.ops]\ntools = [\"h__echo\"]\n",
            provider.issuer
        ),
    );
    // The set's metadata names its own resource; a 401 there points at it.
    let reply = crate::raw::exchange(
        mcp,
        "GET",
        "/.well-known/oauth-protected-resource/sets/ops/mcp",
        &[],
        "",
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let metadata: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(metadata["resource"], set_resource.as_str());
    assert_eq!(metadata["authorization_servers"], json!([provider.issuer]));
    let refused = request_at(mcp, "/sets/ops/mcp", "POST", "", &[], INITIALIZE);
    assert_eq!(refused.status, 401);
    assert!(
        refused.head.contains(&format!("resource_metadata=\"http://127.0.0.1:{mcp}/.well-known/oauth-protected-resource/sets/ops/mcp\"")),
        "{}",
        refused.head
    );
    // A token for /mcp works there and not at the set; the set's own token the other way round.
    let for_main = provider.token("svc", &resource);
    let for_set = provider.token("svc", &set_resource);
    assert_eq!(
        request_at(mcp, "/mcp", "POST", &for_main, &[], INITIALIZE).status,
        200
    );
    assert_eq!(
        request_at(mcp, "/sets/ops/mcp", "POST", &for_main, &[], INITIALIZE).status,
        401
    );
    assert_eq!(
        request_at(mcp, "/sets/ops/mcp", "POST", &for_set, &[], INITIALIZE).status,
        200
    );
    assert_eq!(
        request_at(mcp, "/mcp", "POST", &for_set, &[], INITIALIZE).status,
        401
    );
}
