//! `[oauth]`: the resource, its metadata's place, the issuers and their checks.

use std::path::Path;
use std::time::Duration;

use super::super::parse;
use super::{MINIMAL, problems, refused_naming};

const ISSUER: &str = "\n[oauth]\nresource = \"https://gw.example.com/team/mcp\"\nscopes = [\"mcp\", \"tools.read\"]\n[[oauth.issuers]]\nissuer = \"https://login.example.com/realms/team\"\n";

#[test]
fn an_issuer_is_accepted_with_defaults_and_the_metadata_sits_at_the_resource_path() {
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}{ISSUER}"),
    )
    .expect("loads");
    let oauth = config.oauth.expect("configured");
    assert_eq!(oauth.resource, "https://gw.example.com/team/mcp");
    assert_eq!(
        oauth.metadata_path,
        "/.well-known/oauth-protected-resource/team/mcp"
    );
    assert_eq!(
        oauth.metadata_url,
        "https://gw.example.com/.well-known/oauth-protected-resource/team/mcp"
    );
    assert_eq!(oauth.scopes, ["mcp", "tools.read"]);
    let issuer = &oauth.issuers[0];
    // The audience is the resource unless configured (RFC 8707).
    assert_eq!(issuer.audience, "https://gw.example.com/team/mcp");
    assert_eq!(issuer.claims.id_claim, "sub");
    assert_eq!(issuer.claims.groups_claim, "groups");
    assert_eq!(issuer.claims.scope_group_prefix, None);
    assert_eq!(issuer.leeway_s, 30);
    assert_eq!(issuer.refresh, Duration::from_secs(900));
    assert_eq!(issuer.max_age, Duration::from_secs(3600));
    assert_eq!(issuer.refetch_min, Duration::from_secs(30));
}

#[test]
fn oauth_alone_lets_the_http_listener_serve_without_api_keys() {
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}[listen]\nhttp = \"127.0.0.1:8080\"\n{ISSUER}"),
    )
    .expect("loads");
    assert!(config.clients.is_empty() && config.oauth.is_some());
}

#[test]
fn each_wrong_key_is_named() {
    for (text, key, says) in [
        (
            "\n[oauth]\n[[oauth.issuers]]\nissuer = \"https://a.example\"\n",
            "oauth.resource",
            "missing",
        ),
        (
            "\n[oauth]\nresource = \"http://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\n",
            "oauth.resource",
            "plain http",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp?x=1\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\n",
            "oauth.resource",
            "query",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp#f\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\n",
            "oauth.resource",
            "fragment",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n",
            "oauth.issuers",
            "at least one",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\nscopes = [\"a b\"]\n[[oauth.issuers]]\nissuer = \"https://a.example\"\n",
            "oauth.scopes[0]",
            "RFC 6749",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\nscopes = [\"a\\\"b\"]\n[[oauth.issuers]]\nissuer = \"https://a.example\"\n",
            "oauth.scopes[0]",
            "quotes",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\n",
            "oauth.issuers[0].issuer",
            "missing",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"http://login.example.com\"\n",
            "oauth.issuers[0].issuer",
            "plain http",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nleeway_s = 301\n",
            "oauth.issuers[0].leeway_s",
            "at most 300",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nkeys_refresh_s = 5\n",
            "oauth.issuers[0].keys_refresh_s",
            "from 10",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nkeys_refresh_s = 600\nkeys_max_age_s = 60\n",
            "oauth.issuers[0].keys_max_age_s",
            "keys_refresh_s (600)",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nkeys_refetch_min_s = 3601\n",
            "oauth.issuers[0].keys_refetch_min_s",
            "from 1 to 3600",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\ngroups_claim = \"\"\n",
            "oauth.issuers[0].groups_claim",
            "not empty",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nid_prefix = \"a:\"\n[[oauth.issuers]]\nissuer = \"https://b.example\"\n",
            "oauth.issuers[1].id_prefix",
            "several issuers",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nid_prefix = \"x:\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nid_prefix = \"y:\"\n",
            "oauth.issuers[1].issuer",
            "named twice",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nid_prefix = \"x:\"\n[[oauth.issuers]]\nissuer = \"https://b.example\"\nid_prefix = \"x:\"\n",
            "oauth.issuers[1].id_prefix",
            "starts the same way",
        ),
        (
            "\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nissuer_url = \"x\"\n",
            "oauth.issuers",
            "issuer_url",
        ),
    ] {
        refused_naming(&format!("{MINIMAL}{text}"), key, says);
    }
}

#[test]
fn plain_http_is_allowed_to_loopback_only() {
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}\n[oauth]\nresource = \"http://127.0.0.1:8080/mcp\"\n[[oauth.issuers]]\nissuer = \"http://localhost:9000\"\naudience = \"api://gateway\"\n"),
    )
    .expect("loads");
    let oauth = config.oauth.expect("configured");
    assert_eq!(
        oauth.metadata_url,
        "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(oauth.issuers[0].audience, "api://gateway");
}

const PAGE: &str = "[listen]\nadmin = \"127.0.0.1:9090\"\n[[clients]]\nid = \"ci\"\napi_key_sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\n";

#[test]
fn the_page_signs_people_in_at_the_only_issuer_by_default() {
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}{PAGE}{ISSUER}[oauth.page]\nclient_id = \"approvals\"\nredirect_url = \"https://gw-admin.example.com/approvals/oauth/callback\"\n"),
    )
    .expect("loads");
    let page = config
        .oauth
        .expect("configured")
        .page
        .expect("page sign-in");
    assert_eq!(page.issuer, 0);
    assert_eq!(page.client_id, "approvals");
    assert_eq!(page.client_secret_env, None);
    assert_eq!(page.scopes, ["openid", "mcp", "tools.read"]);
    assert_eq!(page.label, "Sign in with login.example.com");
    assert!(page.credential_sign_in);
}

#[test]
fn each_wrong_page_key_is_named() {
    let page = |keys: &str| format!("{MINIMAL}{PAGE}{ISSUER}[oauth.page]\n{keys}");
    let good_redirect =
        "redirect_url = \"https://gw-admin.example.com/approvals/oauth/callback\"\n";
    for (text, key, says) in [
        (page(good_redirect), "oauth.page.client_id", "missing"),
        (
            page("client_id = \"a\"\n"),
            "oauth.page.redirect_url",
            "is not a URL",
        ),
        (
            page("client_id = \"a\"\nredirect_url = \"https://gw-admin.example.com/callback\"\n"),
            "oauth.page.redirect_url",
            "/approvals/oauth/callback",
        ),
        (
            page(
                "client_id = \"a\"\nredirect_url = \"http://gw-admin.example.com/approvals/oauth/callback\"\n",
            ),
            "oauth.page.redirect_url",
            "plain http",
        ),
        (
            page(&format!(
                "client_id = \"a\"\n{good_redirect}issuer = \"https://other.example\"\n"
            )),
            "oauth.page.issuer",
            "not one of",
        ),
        (
            page(&format!(
                "client_id = \"a\"\n{good_redirect}client_secret_env = \"\"\n"
            )),
            "oauth.page.client_secret_env",
            "empty",
        ),
        (
            page(&format!(
                "client_id = \"a\"\n{good_redirect}scopes = [\"a b\"]\n"
            )),
            "oauth.page.scopes[0]",
            "RFC 6749",
        ),
        (
            page(&format!("client_id = \"a\"\n{good_redirect}label = \"\"\n")),
            "oauth.page.label",
            "1 to 100",
        ),
        (
            format!("{MINIMAL}{ISSUER}[oauth.page]\nclient_id = \"a\"\n{good_redirect}"),
            "oauth.page",
            "not served",
        ),
        (
            format!(
                "{MINIMAL}{PAGE}\n[oauth]\nresource = \"https://gw.example.com/mcp\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\nid_prefix = \"a:\"\n[[oauth.issuers]]\nissuer = \"https://b.example\"\nid_prefix = \"b:\"\n[oauth.page]\nclient_id = \"a\"\n{good_redirect}"
            ),
            "oauth.page.issuer",
            "several issuers",
        ),
    ] {
        refused_naming(&text, key, says);
    }
}

#[test]
fn urls_are_canonical_and_prefixes_cannot_overlap() {
    let with = |oauth: &str| format!("{MINIMAL}\n[oauth]\n{oauth}");
    let resource = "resource = \"https://gw.example.com/mcp\"\n";
    let issuer = "[[oauth.issuers]]\nissuer = \"https://a.example\"\n";
    for (text, key, says) in [
        (
            with(&format!("{resource}{issuer}keys_refetch_min_s = 0\n")),
            "oauth.issuers[0].keys_refetch_min_s",
            "from 1 to 3600",
        ),
        (
            with(&format!(
                "resource = \"https://GW.example.com/mcp\"\n{issuer}"
            )),
            "oauth.resource",
            "write it as \"https://gw.example.com/mcp\"",
        ),
        (
            with(&format!(
                "resource = \"https://gw.example.com/:mcp\"\n{issuer}"
            )),
            "oauth.resource",
            "letters, digits",
        ),
        (
            with(&format!(
                "resource = \"https://gw.example.com/{{x}}/mcp\"\n{issuer}"
            )),
            "oauth.resource",
            "write it as",
        ),
        (
            with(&format!(
                "{resource}[[oauth.issuers]]\nissuer = \"https://a.example/?x=1\"\n"
            )),
            "oauth.issuers[0].issuer",
            "query",
        ),
        (
            with(&format!(
                "{resource}[[oauth.issuers]]\nissuer = \"https://u:p@a.example\"\n"
            )),
            "oauth.issuers[0].issuer",
            "credentials",
        ),
        (
            with(&format!("{resource}{issuer}id_prefix = \"a\u{202e}:\"\n")),
            "oauth.issuers[0].id_prefix",
            "bidi",
        ),
        (
            with(&format!(
                "{resource}{issuer}id_prefix = \"corp:\"\n[[oauth.issuers]]\nissuer = \"https://b.example\"\nid_prefix = \"corp:eu:\"\n"
            )),
            "oauth.issuers[1].id_prefix",
            "starts the same way",
        ),
    ] {
        refused_naming(&text, key, says);
    }
}

#[test]
fn oauth_ids_stay_apart_from_jwt_and_api_key_ids() {
    let jwks = std::env::temp_dir().join(format!("toolgate-oauth-ids-{}.json", std::process::id()));
    std::fs::write(
        &jwks,
        r#"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "yDqFbLq92n3FFoifeFNwiuB94DDVIzEWht_sA6RiZ5A"}]}"#,
    )
    .unwrap();
    let jwt = format!(
        "[jwt]\njwks_file = {:?}\nissuer = \"https://idp.example\"\naudience = \"gw\"\n",
        jwks.display().to_string()
    );
    let beside_jwt = problems(&format!("{MINIMAL}{jwt}{ISSUER}"));
    assert!(
        beside_jwt
            .iter()
            .any(|problem| problem.contains("oauth.issuers[0].id_prefix")
                && problem.contains("beside [jwt]")),
        "{beside_jwt:?}"
    );
    let with_prefix = format!("{ISSUER}id_prefix = \"corp:\"\n");
    parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}{jwt}{with_prefix}"),
    )
    .expect("apart with a prefix");
    let client = "[[clients]]\nid = \"corp:bot\"\napi_key_sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\n";
    let found = problems(&format!("{MINIMAL}{client}{with_prefix}"));
    assert!(
        found
            .iter()
            .any(|problem| problem.contains("clients[0].id") && problem.contains("id_prefix")),
        "{found:?}"
    );
    let _ = std::fs::remove_file(jwks);
}

#[test]
fn scopes_may_not_become_the_gateways_groups() {
    refused_naming(
        &format!("{MINIMAL}{ISSUER}scope_group_prefix = \"toolset:\"\n"),
        "oauth.issuers[0].scope_group_prefix",
        "the gateway's",
    );
}
