mod identities;
mod oauth;
mod own_names;
mod shared_counters;
mod timings_and_traces;
mod tool_sets;

use std::path::Path;

use super::parse;
use crate::config::{ApprovalStoreConfig, AuditTarget, StateKeySource, UpstreamTransport};

fn problems(text: &str) -> Vec<String> {
    match parse(Path::new("/etc/gw/gateway.toml"), text) {
        Ok(config) => panic!("loaded: {config:?}"),
        Err(problems) => problems.iter().map(ToString::to_string).collect(),
    }
}

/// `text` does not load, and one of its problems names `key` and says `says`.
fn refused_naming(text: &str, key: &str, says: &str) {
    let found = problems(text);
    assert!(
        found
            .iter()
            .any(|problem| problem.contains(key) && problem.contains(says)),
        "{text}: expected {key} saying {says:?}, got {found:?}"
    );
}

const MINIMAL: &str = r#"
[upstreams.files]
command = "npx"
args = ["-y", "server"]
[policy]
layers = ["policy.json"]
"#;

#[test]
fn a_minimal_config_loads_with_paths_relative_to_its_file() {
    let config = parse(Path::new("/etc/gw/gateway.toml"), MINIMAL).expect("loads");
    assert_eq!(config.separator.as_deref(), Some("__"));
    assert_eq!(config.served_name("files", "read"), "files__read");
    assert_eq!(config.policy_layers, [Path::new("/etc/gw/policy.json")]);
    let UpstreamTransport::Stdio {
        command, args, cwd, ..
    } = &config.upstreams[0].transport
    else {
        panic!("a stdio upstream")
    };
    assert_eq!((command.as_str(), args.len()), ("npx", 2));
    assert_eq!(cwd.as_deref(), Some(Path::new("/etc/gw")));
    assert!(config.audit.is_none());
    assert!(matches!(config.approvals, ApprovalStoreConfig::Sqlite(_)));
}

#[test]
fn every_section_is_read() {
    let text = format!(
        "{MINIMAL}\n[gateway]\nseparator = \".\"\npolicy_poll_ms = 200\n\
         [audit]\njsonl = \"logs/audit.jsonl\"\n\
         [approvals]\nstore = \"sqlite\"\npath = \"approvals.db\"\n\
         [limits]\nmax_message_bytes = 2048\nstartup_timeout_ms = 1500\ncall_timeout_ms = 9000\n\
         max_list_pages = 3\nlist_timeout_ms = 700\n"
    );
    let config = parse(Path::new("/etc/gw/gateway.toml"), &text).expect("loads");
    assert_eq!(config.served_name("files", "read"), "files.read");
    assert_eq!(config.policy_poll.as_millis(), 200);
    assert!(
        matches!(&config.audit, Some(AuditTarget::Jsonl(path)) if path == Path::new("/etc/gw/logs/audit.jsonl"))
    );
    assert!(
        matches!(&config.approvals, ApprovalStoreConfig::Sqlite(path) if path == Path::new("/etc/gw/approvals.db"))
    );
    let limits = config.limits;
    assert_eq!(
        (
            limits.max_message_bytes,
            limits.startup_timeout.as_millis(),
            limits.call_timeout.as_millis(),
            limits.max_list_pages,
            limits.list_timeout.as_millis()
        ),
        (2048, 1500, 9000, 3, 700)
    );
}

#[test]
fn an_unknown_key_is_refused_naming_the_file_the_key_and_the_line() {
    let found = problems(&MINIMAL.replace("command =", "comand ="));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .starts_with("/etc/gw/gateway.toml: upstreams.files.comand: unknown field `comand`"),
        "{found:?}"
    );
    assert!(found[0].contains("line 3"), "{found:?}");
    let found = problems(&format!("{MINIMAL}\n[limits]\nmax_reply = 1\n"));
    assert!(
        found[0].starts_with("/etc/gw/gateway.toml: limits.max_reply: unknown field `max_reply`"),
        "{found:?}"
    );
    let found = problems(&format!("{MINIMAL}\n[listener]\nhttp = \"x\"\n"));
    assert!(found[0].contains("unknown field `listener`"), "{found:?}");
}

#[test]
fn a_wrong_type_names_its_key() {
    let found = problems(&MINIMAL.replace("args = [\"-y\", \"server\"]", "args = \"-y server\""));
    assert!(
        found[0].starts_with("/etc/gw/gateway.toml: upstreams.files.args: "),
        "{found:?}"
    );
    let found = problems(&format!("{MINIMAL}\n[limits]\nmax_list_pages = -1\n"));
    assert!(
        found[0].starts_with("/etc/gw/gateway.toml: limits.max_list_pages: "),
        "{found:?}"
    );
}

#[test]
fn a_syntax_error_names_the_file_and_line() {
    let found = problems("[upstreams.files\ncommand = 1");
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("/etc/gw/gateway.toml: "), "{found:?}");
    assert!(found[0].contains("line 1"), "{found:?}");
}

#[test]
fn every_meaning_problem_is_reported_at_once() {
    let text = r#"
[gateway]
separator = ""
[upstreams."bad name"]
command = "x"
[upstreams.a__b]
command = "y"
[upstreams.nocommand]
args = ["z"]
[policy]
layers = ["p.json", "./p.json", "p.json"]
[audit]
jsonl = "a.jsonl"
postgres_url_env = "PG"
[approvals]
store = "redis"
[limits]
startup_timeout_ms = 0
max_message_bytes = 10
max_list_pages = 0
"#;
    let found = problems(text);
    let keys: Vec<&str> = found
        .iter()
        .map(|problem| {
            problem
                .trim_start_matches("/etc/gw/gateway.toml: ")
                .split(": ")
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        keys,
        [
            "gateway.separator",
            "upstreams.bad name",
            "upstreams.nocommand.command",
            // `./p.json` is `p.json`: both repeat layer 0.
            "policy.layers[1]",
            "policy.layers[2]",
            "audit",
            "approvals.store",
            "limits.startup_timeout_ms",
            "limits.max_message_bytes",
            "limits.max_list_pages",
        ],
        "{found:#?}"
    );
}

#[test]
fn an_upstream_name_holding_the_separator_and_a_config_with_nothing_are_refused() {
    let found = problems(&MINIMAL.replace("[upstreams.files]", "[upstreams.my__files]"));
    assert!(
        found[0].contains("upstreams.my__files: an upstream name may not contain the separator"),
        "{found:?}"
    );
    let found = problems("");
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("upstreams: no upstream is configured"));
    assert!(found[1].contains("policy.layers: name at least one policy file"));
}

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

const HASH: &str = "2c76bfb8880e6bf4c277240005f246da8bd822cc475cffde27cd7ea4180eafe6";

#[test]
fn http_listens_on_loopback_with_clients_and_their_principals() {
    let text = format!(
        "{MINIMAL}\n[listen]\nhttp = \"127.0.0.1:8080\"\nadmin = \"[::1]:9090\"\n\
         [[clients]]\nid = \"alice\"\ngroups = [\"ops\"]\napi_key_sha256 = \"{}\"\n",
        HASH.to_ascii_uppercase()
    );
    let config = parse(Path::new("/etc/gw/gateway.toml"), &text).expect("loads");
    assert!(
        !config.listen.stdio,
        "stdio is off once http is on, unless asked for"
    );
    assert_eq!(config.listen.http.unwrap().port(), 8080);
    assert_eq!(config.listen.admin.unwrap().port(), 9090);
    assert_eq!(
        config.clients[0].principal,
        toolgate::Principal::new("alice", ["ops"])
    );
    assert_eq!(config.clients[0].key_sha256[0], 0x2c);
    let with_stdio = text.replace("[listen]\n", "[listen]\nstdio = true\n");
    assert!(
        parse(Path::new("g.toml"), &with_stdio)
            .unwrap()
            .listen
            .stdio
    );
}

#[test]
fn http_without_clients_plain_http_off_loopback_and_bad_keys_are_refused() {
    let found = problems(&format!("{MINIMAL}\n[listen]\nhttp = \"127.0.0.1:8080\"\n"));
    assert!(
        found[0].contains("clients: listen.http is set but no client is"),
        "{found:?}"
    );
    let client = format!("[[clients]]\nid = \"a\"\napi_key_sha256 = \"{HASH}\"\n");
    let found = problems(&format!(
        "{MINIMAL}\n[listen]\nhttp = \"0.0.0.0:8080\"\n{client}"
    ));
    assert!(
        found[0].contains("listen.http: 0.0.0.0:8080 is not a loopback address"),
        "{found:?}"
    );
    let allowed =
        format!("{MINIMAL}\n[listen]\nhttp = \"0.0.0.0:8080\"\nallow_plain_http = true\n{client}");
    assert!(parse(Path::new("g.toml"), &allowed).is_ok());
    let found = problems(&format!(
        "{MINIMAL}\n[listen]\nhttp = \"localhost\"\n{client}"
    ));
    assert!(
        found[0].contains("listen.http: \"localhost\" is not an address and port"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[listen]\nhttp = \"127.0.0.1:1\"\nadmin = \"127.0.0.1:1\"\n{client}"
    ));
    assert!(found[0].contains("listen.admin: must differ"), "{found:?}");
    let found = problems(&format!("{MINIMAL}\n[listen]\nstdio = false\n"));
    assert!(found[0].contains("listen: serves nothing"), "{found:?}");
    let found = problems(&format!(
        "{MINIMAL}\n[[clients]]\nid = \"a\"\napi_key_sha256 = \"abc\"\n\
         [[clients]]\nid = \"b c\"\napi_key_sha256 = \"{HASH}\"\n\
         [[clients]]\nid = \"d\"\napi_key_sha256 = \"{HASH}\"\n\
         [[clients]]\nid = \"d\"\napi_key_sha256 = \"{}\"\n",
        "0".repeat(64)
    ));
    let keys: Vec<&str> = found
        .iter()
        .map(|p| p.split(": ").nth(1).unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "clients[0].api_key_sha256",
            "clients[1].id",
            "clients[3].id"
        ],
        "{found:#?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[[clients]]\nid = \"a\"\napi_key_sha256 = \"{HASH}\"\n[[clients]]\nid = \"b\"\napi_key_sha256 = \"{HASH}\"\n"
    ));
    assert!(
        found[0].contains("clients[1].api_key_sha256: is another client's key"),
        "{found:?}"
    );
}

#[test]
fn a_config_named_without_a_directory_is_relative_to_the_working_directory() {
    let config = parse(Path::new("gateway.toml"), MINIMAL).expect("loads");
    assert_eq!(config.policy_layers, [Path::new("./policy.json")]);
    let UpstreamTransport::Stdio { cwd, .. } = &config.upstreams[0].transport else {
        panic!("a stdio upstream")
    };
    assert_eq!(cwd.as_deref(), Some(Path::new(".")));
}

#[test]
fn a_url_upstream_takes_headers_and_a_token_variable_and_nothing_of_a_child() {
    let remote = "[upstreams.r]\nurl = \"https://mcp.example.com/mcp\"\nbearer_token_env = \"R_TOKEN\"\nheaders = { \"X-Team\" = \"a\" }\n[policy]\nlayers = [\"p.json\"]\n";
    let config = parse(Path::new("g.toml"), remote).expect("loads");
    let UpstreamTransport::Http {
        url,
        headers,
        bearer_token_env,
    } = &config.upstreams[0].transport
    else {
        panic!("an http upstream")
    };
    assert_eq!(
        (url.as_str(), headers.len(), bearer_token_env.as_deref()),
        ("https://mcp.example.com/mcp", 1, Some("R_TOKEN"))
    );
    for (change, key, message) in [
        (
            "url = \"https://mcp.example.com/mcp\"",
            "upstreams.r.url",
            "not both",
        ),
        (
            "args = [\"x\"]",
            "upstreams.r.args",
            "is for a child process",
        ),
        ("cwd = \".\"", "upstreams.r.cwd", "is for a child process"),
    ] {
        let text = remote.replace(
            "bearer_token_env",
            &format!(
                "{}\nbearer_token_env",
                if key.ends_with("url") {
                    "command = \"x\""
                } else {
                    change
                }
            ),
        );
        let found = problems(&text);
        assert!(
            found[0].contains(&format!("{key}: ")) && found[0].contains(message),
            "{change}: {found:?}"
        );
    }
    let found = problems(&remote.replace("https://mcp.example.com/mcp", "ftp://x"));
    assert!(
        found[0].contains("upstreams.r.url: \"ftp://x\" is not an http:// or https:// URL"),
        "{found:?}"
    );
    let found = problems(&remote.replace(
        "\"X-Team\" = \"a\"",
        "\"Authorization\" = \"Bearer s3cret\"",
    ));
    assert!(
        found[0].contains(
            "upstreams.r.headers.Authorization: put the token in an environment variable"
        ),
        "{found:?}"
    );
    let found = problems(&remote.replace("\"X-Team\"", "\"bad header\""));
    assert!(found[0].contains("is not a valid HTTP header"), "{found:?}");
    let found = problems(&MINIMAL.replace("args =", "bearer_token_env = \"T\"\nargs ="));
    assert!(
        found[0].contains(
            "upstreams.files.headers: `headers` and `bearer_token_env` are for a `url` upstream"
        ),
        "{found:?}"
    );
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

#[test]
fn checkpoints_need_a_key_an_origin_and_a_jsonl_log() {
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\ncheckpoint_key_file = \"k\"\ncheckpoint_origin = \"o\"\n"),
    )
    .expect("loads");
    let checkpoints = config.checkpoints.unwrap();
    assert_eq!(checkpoints.key_file, Path::new("/etc/gw/k"));
    assert_eq!(checkpoints.file, Path::new("/etc/gw/a.jsonl.checkpoint"));
    assert_eq!(checkpoints.every.as_secs(), 300);
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\ncheckpoint_key_file = \"k\"\n"
    ));
    assert!(
        found[0].contains("audit.checkpoint_key_file: signed checkpoints need both"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\npostgres_url_env = \"P\"\ncheckpoint_key_file = \"k\"\ncheckpoint_origin = \"o\"\n"
    ));
    assert!(found[0].contains("set `audit.jsonl`"), "{found:?}");
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a\"\ncheckpoint_key_file = \"k\"\ncheckpoint_origin = \"o\"\ncheckpoint_every_s = 0\n"
    ));
    assert!(found[0].contains("audit.checkpoint_every_s"), "{found:?}");
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a\"\ncheckpoint_key_file = \"k\"\ncheckpoint_origin = \"o\"\ncheckpoint_webhook_url = \"http://example.com/x\"\n"
    ));
    assert!(
        found[0].contains("audit.checkpoint_webhook_url: must be https"),
        "{found:?}"
    );
}

#[test]
fn a_jsonl_log_reserves_zeros_ahead_only_when_asked_and_within_bounds() {
    let load = |extra: &str| {
        parse(
            Path::new("/etc/gw/gateway.toml"),
            &format!("{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\n{extra}"),
        )
    };
    assert_eq!(load("").expect("loads").audit_jsonl_reserve, 0);
    let config = load("jsonl_reserve_mib = 16\n").expect("loads");
    assert_eq!(config.audit_jsonl_reserve, 16 << 20);
    assert_eq!(
        load("jsonl_reserve_mib = 1024\n")
            .expect("loads")
            .audit_jsonl_reserve,
        1 << 30
    );
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\njsonl_reserve_mib = 1025\n"
    ));
    assert!(
        found[0].contains("audit.jsonl_reserve_mib: is 1025: at most 1024"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\npostgres_url_env = \"P\"\njsonl_reserve_mib = 16\n"
    ));
    assert!(
        found[0].contains("audit.jsonl_reserve_mib: reserves space in a JSON Lines log"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\njsonl_reserve_mib = -1\n"
    ));
    assert!(found[0].contains("jsonl_reserve_mib"), "{found:?}");
}
