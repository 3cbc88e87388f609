//! `[approvals]`: a durable store and a kept state key by default, a store's own keys, webhooks
//! (https or loopback, a token only with a URL), and when the approval page is served.

use super::*;

#[test]
fn a_store_given_keys_it_does_not_take_is_refused() {
    let found = problems(&format!(
        "{MINIMAL}\n[approvals]\nstore = \"memory\"\npath = \"x.db\"\n"
    ));
    assert!(
        found[0].contains("approvals: store \"memory\" takes no other key"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[approvals]\nstore = \"sqlite\"\npostgres_url_env = \"PG\"\n"
    ));
    assert!(found[0].contains("takes at most `path`"), "{found:?}");
}

#[test]
fn approvals_are_durable_and_state_keys_kept_by_default_and_a_key_source_is_one_of_two() {
    let config = parse(Path::new("/etc/gw/gateway.toml"), MINIMAL).expect("loads");
    assert!(
        matches!(&config.approvals, ApprovalStoreConfig::Sqlite(path) if path == Path::new("/etc/gw/gateway.approvals.sqlite")),
        "{:?}",
        config.approvals
    );
    assert!(
        matches!(&config.state_key, StateKeySource::File { path, create: true } if path == Path::new("/etc/gw/gateway.state-key")),
        "{:?}",
        config.state_key
    );
    let text = format!("[gateway]\nstate_key_file = \"keys/k\"\n{MINIMAL}");
    let config = parse(Path::new("/etc/gw/gateway.toml"), &text).expect("loads");
    assert!(
        matches!(&config.state_key, StateKeySource::File { path, create: false } if path == Path::new("/etc/gw/keys/k")),
        "{:?}",
        config.state_key
    );
    let text = format!("[gateway]\nstate_key_file = \"k\"\nstate_key_env = \"K\"\n{MINIMAL}");
    let found = problems(&text);
    assert!(
        found[0].contains("gateway.state_key_file: set at most one of"),
        "{found:?}"
    );
    let text = format!("{MINIMAL}\n[approvals]\nstore = \"memory\"\n");
    let config = parse(Path::new("/etc/gw/gateway.toml"), &text).expect("loads");
    assert!(matches!(config.approvals, ApprovalStoreConfig::Memory));
}

#[test]
fn a_webhook_is_https_or_loopback_and_its_token_needs_a_url() {
    for (url, ok) in [
        ("https://hooks.example.com/x", true),
        ("http://127.0.0.1:9000/hook", true),
        ("http://localhost/hook", true),
        ("http://[::1]:80", true),
        ("http://hooks.example.com/x", false),
        ("http://127.0.0.1.evil.example/x", false),
        ("ftp://127.0.0.1/x", false),
    ] {
        let text = format!("{MINIMAL}\n[approvals]\nwebhook_url = \"{url}\"\n");
        let loaded = parse(Path::new("/etc/gw/gateway.toml"), &text);
        assert_eq!(loaded.is_ok(), ok, "{url}: {loaded:?}");
        if let Err(problems) = loaded {
            assert!(
                problems[0]
                    .to_string()
                    .contains("approvals.webhook_url: must be https://")
            );
        }
    }
    let found = problems(&format!(
        "{MINIMAL}\n[approvals]\nwebhook_arguments = true\n"
    ));
    assert!(
        found[0].contains("approvals.webhook_arguments: says what a webhook notice holds"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[approvals]\nwebhook_bearer_token_env = \"T\"\n"
    ));
    assert!(
        found[0].contains("approvals.webhook_bearer_token_env: names a token"),
        "{found:?}"
    );
}

#[test]
fn the_approval_page_is_served_with_an_admin_listener_and_someone_to_sign_in() {
    let admin = "[listen]\nstdio = true\nadmin = \"127.0.0.1:9090\"\n";
    let client = "[[clients]]\nid = \"sam\"\napi_key_sha256 = \"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\"\n";
    let page = |text: &str| {
        parse(Path::new("/etc/gw/gateway.toml"), text)
            .map(|config| config.approval_page.map(|page| page.secure_cookies))
    };
    // By default: served when both are there, quietly not otherwise.
    assert_eq!(
        page(&format!("{MINIMAL}\n{admin}{client}")).unwrap(),
        Some(false)
    );
    assert_eq!(page(&format!("{MINIMAL}\n{admin}")).unwrap(), None);
    assert_eq!(page(MINIMAL).unwrap(), None);
    let secure = format!("{MINIMAL}\n[approvals]\npage_secure_cookies = true\n{admin}{client}");
    assert_eq!(page(&secure).unwrap(), Some(true));
    let off = format!("{MINIMAL}\n[approvals]\npage = false\n{admin}{client}");
    assert_eq!(page(&off).unwrap(), None);
    // Asked for but impossible: an error naming the key and why.
    let found = problems(&format!("{MINIMAL}\n[approvals]\npage = true\n"));
    assert!(
        found[0].contains("approvals.page: needs listen.admin"),
        "{found:?}"
    );
    let found = problems(&format!("{MINIMAL}\n[approvals]\npage = true\n{admin}"));
    assert!(
        found[0].contains("approvals.page: nobody could sign in"),
        "{found:?}"
    );
}
