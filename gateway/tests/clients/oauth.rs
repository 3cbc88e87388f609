//! The gateway as an OAuth 2.1 resource server in front of a real OpenID provider
//! (`oidc-provider` from npm, run by `tests/mcp/oidc_provider.mjs`), signed in to by the official
//! Python and TypeScript SDKs' OAuth clients (`tests/mcp/oauth_client.{py,mjs}`): discovery from
//! the 401, dynamic registration, authorization code with PKCE, a call allowed by a group the
//! token carries and one refused for a principal without it; then, with tokens the provider
//! issues: a token for another resource, an expired token, and keys rotated at the provider.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::oidc::Provider;
use support::*;

fn serve(work: &Work, provider: &Provider) -> (Served, String) {
    let (mcp, admin) = (free_port(), free_port());
    let resource = format!("http://127.0.0.1:{mcp}/mcp");
    let served = serve_http_at(
        work,
        mcp,
        admin,
        &format!(
            "[oauth]\nresource = \"{resource}\"\nscopes = [\"mcp\"]\n\
             [[oauth.issuers]]\nissuer = \"{}\"\nleeway_s = 0\nkeys_refetch_min_s = 1\n",
            provider.issuer
        ),
    );
    (served, resource)
}

/// One SDK client run: `program script URL h__echo ARGS --login-hint WHO`, its JSON line.
fn sdk_client(
    program: &Path,
    script: &Path,
    resource: &str,
    who: &str,
    env: &[(&str, PathBuf)],
) -> Value {
    let output = Command::new(program)
        .arg(script)
        .args([
            resource,
            "h__echo",
            r#"{"text": "signed in"}"#,
            "--login-hint",
            who,
        ])
        .envs(env.iter().map(|(name, value)| (*name, value)))
        .output()
        .expect("the client runs");
    let (stdout, stderr) = text(&output);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("{who}: {stdout}\n{stderr}"))
}

#[test]
fn sdk_clients_sign_in_at_the_provider_and_their_groups_decide() {
    let (Some(python), Some(node)) = (python(), node_dir()) else {
        return;
    };
    let work = Work::new("oauth-sdks");
    let provider = Provider::start(&node, &work, free_port(), "k1");
    let (served, resource) = serve(&work, &provider);
    let python_client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/oauth_client.py");
    let alice = sdk_client(Path::new(&python), &python_client, &resource, "alice", &[]);
    assert!(
        alice["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("h__echo")),
        "{alice}"
    );
    assert_eq!(alice["result"]["isError"], false, "{alice}");
    assert!(alice["result"].to_string().contains("signed in"), "{alice}");
    // Bob signs in too, but no rule allows his principal (no `ops` group in his token).
    let bob = sdk_client(Path::new(&python), &python_client, &resource, "bob", &[]);
    assert_eq!(bob["result"]["isError"], true, "{bob}");
    let ts_client = node.join(format!("oauth_client-{}.mjs", std::process::id()));
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/oauth_client.mjs"),
        &ts_client,
    )
    .unwrap();
    let sdk = node.join("node_modules/@modelcontextprotocol/sdk");
    let alice = sdk_client(
        Path::new("node"),
        &ts_client,
        &resource,
        "alice",
        &[("MCP_TS_SDK", sdk)],
    );
    assert_eq!(alice["result"]["isError"], false, "{alice}");
    // The audit log names the principal the tokens named, and never a token.
    let audit = work.read("audit.jsonl");
    let principals: Vec<String> = audit
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|line| line["event"]["principal"].as_str().map(str::to_owned))
        .collect();
    assert!(principals.iter().any(|id| id == "alice"), "{audit}");
    assert!(principals.iter().any(|id| id == "bob"), "{audit}");
    assert!(!audit.contains("eyJ"), "a token in the audit log");
    drop(served);
}

#[test]
fn the_metadata_the_challenge_and_the_tokens_the_gateway_refuses() {
    let Some(node) = node_dir() else {
        return;
    };
    let work = Work::new("oauth-tokens");
    let port = free_port();
    let mut provider = Provider::start(&node, &work, port, "k1");
    let (served, resource) = serve(&work, &provider);
    let mcp = served.mcp;

    // The protected-resource metadata, at the resource's path and at the root, no credential.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = crate::raw::exchange(mcp, "GET", path, &[], "");
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        let metadata: Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!(metadata["resource"], resource.as_str());
        assert_eq!(metadata["authorization_servers"], json!([provider.issuer]));
        assert_eq!(metadata["scopes_supported"], json!(["mcp"]));
    }
    // A request without a token is told where to sign in.
    let reply = crate::raw::request(mcp, "POST", "", &[], "{}");
    assert_eq!(reply.status, 401);
    let challenge = format!(
        "www-authenticate: bearer resource_metadata=\"http://127.0.0.1:{mcp}/.well-known/oauth-protected-resource/mcp\", scope=\"mcp\""
    );
    assert!(
        reply.head.to_ascii_lowercase().contains(&challenge),
        "{}",
        reply.head
    );

    let good = provider.token("svc", &resource);
    assert!(crate::jwt::status_with(mcp, &good).starts_with("HTTP/1.1 200"));
    // A token the provider issued for another service.
    let elsewhere = provider.token("svc", "http://127.0.0.1:1/other");
    let reply = crate::raw::request(mcp, "POST", &elsewhere, &[], "{}");
    assert_eq!(reply.status, 401);
    assert!(
        reply.head.contains("error=\"invalid_token\""),
        "{}",
        reply.head
    );
    // A token that expired (two seconds, no leeway).
    let short = provider.token("short", &resource);
    assert!(crate::jwt::status_with(mcp, &short).starts_with("HTTP/1.1 200"));
    std::thread::sleep(Duration::from_millis(3100));
    assert!(crate::jwt::status_with(mcp, &short).starts_with("HTTP/1.1 401"));

    // The provider rotates to a new key: its first token is taken (the gateway fetches the keys
    // on the unknown kid), and the withdrawn key's tokens stop working.
    drop(provider);
    provider = Provider::start(&node, &work, port, "k2");
    let rotated = provider.token("svc", &resource);
    assert!(crate::jwt::status_with(mcp, &rotated).starts_with("HTTP/1.1 200"));
    assert!(crate::jwt::status_with(mcp, &good).starts_with("HTTP/1.1 401"));
    // The gateway said why in its log, never with the token.
    drop(served);
}

#[test]
fn approvers_sign_in_to_the_page_at_the_provider_and_the_session_ends_with_the_token() {
    let (Some(python), Some(node)) = (python(), node_dir()) else {
        return;
    };
    let work = Work::new("oauth-page");
    let (mcp, admin) = (free_port(), free_port());
    let callback = format!("http://127.0.0.1:{admin}/approvals/oauth/callback");
    let provider = Provider::start_with(&node, &work, free_port(), "k1", &callback);
    let resource = format!("http://127.0.0.1:{mcp}/mcp");
    let key = "tg_page_key_that_may_not_sign_in";
    let _served = serve_http_with(
        &work,
        mcp,
        admin,
        &format!(
            "[[clients]]\nid = \"bob\"\ngroups = [\"ops\"]\napi_key_sha256 = \"{}\"\n\
             [oauth]\nresource = \"{resource}\"\nscopes = [\"mcp\"]\n\
             [[oauth.issuers]]\nissuer = \"{}\"\n\
             [oauth.page]\nclient_id = \"page\"\nclient_secret_env = \"TG_PAGE_SECRET\"\n\
             redirect_url = \"{callback}\"\ncredential_sign_in = false\n",
            sha256(key),
            provider.issuer
        ),
        &[("TG_PAGE_SECRET", "page-secret"), ("TOOLGATE_LOG", "debug")],
    );
    wait_for_port(admin);
    // One sign-in at the provider as `who`, as a browser makes it: what each step answered.
    let sign_in_as = |who: &str| -> Value {
        let output = Command::new(&python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/page_sign_in.py"))
            .args([&format!("http://127.0.0.1:{admin}"), who, key])
            .output()
            .expect("python runs");
        let (stdout, stderr) = text(&output);
        serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("{stdout}\n{stderr}"))
    };
    let seen = sign_in_as("alice");
    let host = url_host(&provider.issuer);
    assert_eq!(
        seen["ways"],
        json!({"credential": false, "links": [
            {"label": format!("Sign in with {host}"), "path": "/approvals/oauth/start"}
        ]}),
        "{seen}"
    );
    assert_eq!(seen["start"], 303, "{seen}");
    assert_eq!(seen["flood"], json!([303]), "{seen}");
    assert_eq!(
        seen["asked"],
        json!({"response_type": "code", "code_challenge_method": "S256", "resource": resource, "scope": "openid mcp"}),
        "{seen}"
    );
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/approvals/oauth"] {
        assert!(
            seen["state_cookie_attributes"]
                .to_string()
                .contains(attribute),
            "{seen}"
        );
    }
    assert_eq!(seen["callback_elsewhere"][0], 400, "{seen}");
    assert!(
        seen["callback_elsewhere"][1]
            .as_str()
            .unwrap()
            .contains("not started in this browser")
    );
    assert_eq!(seen["callback_forged_state"], 400, "{seen}");
    assert_eq!(seen["callback_made_up_state"][0], 400, "{seen}");
    assert!(
        seen["callback_made_up_state"][1]
            .as_str()
            .unwrap()
            .contains("not started here")
    );
    assert_eq!(seen["callback_without_iss"][0], 400, "{seen}");
    assert!(
        seen["callback_without_iss"][1]
            .as_str()
            .unwrap()
            .contains("RFC 9207")
    );
    assert_eq!(seen["callback"], 303, "{seen}");
    assert_eq!(seen["callback_location"], "/approvals");
    assert!(seen["state_cookie_cleared"].as_bool().unwrap(), "{seen}");
    // Signed in as the token's principal with its groups, for at most the token's lifetime.
    assert_eq!(seen["session"][0], 200, "{seen}");
    assert_eq!(seen["session"][1]["approver"], "alice");
    assert_eq!(seen["session"][1]["groups"], json!(["ops", "security"]));
    let max_age: u64 = seen["session_cookie_attributes"][0]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|attribute| attribute.as_str()?.strip_prefix("Max-Age="))
        .expect("Max-Age")
        .parse()
        .unwrap();
    assert!(
        (295..=300).contains(&max_age),
        "cut at the token's 300 s: {max_age}"
    );
    assert_eq!(seen["callback_again"][0], 400, "{seen}");
    assert!(
        seen["callback_again"][1]
            .as_str()
            .unwrap()
            .contains("used already"),
        "{seen}"
    );
    // API keys sign nobody in to the page here (credential_sign_in = false).
    assert_eq!(seen["typed_credential"], 403, "{seen}");

    // The provider's account `bob` is not the API-key client `bob`: one principal, one source.
    let seen = sign_in_as("bob");
    assert_eq!(seen["callback"], 401, "{seen}");
    assert!(
        seen["callback_said"]
            .as_str()
            .unwrap()
            .contains("[[clients]]"),
        "{seen}"
    );
    assert_eq!(seen["session"][0], 401, "{seen}");

    // At the debug level the log holds no code, no client secret and no token.
    let log = work.read("gateway.log");
    assert!(log.contains("signed in to the approval page"), "{log}");
    for secret in [seen["code"].as_str().unwrap(), "page-secret", "eyJ"] {
        assert!(!log.contains(secret), "{secret} in the log");
    }
}

fn url_host(url: &str) -> &str {
    url.split("://").nth(1).unwrap().split(':').next().unwrap()
}
