mod approvals;
mod audit;
mod identities;
mod listen;
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
    // A user or password in the URL is refused, and never printed (it reached the error log).
    for spelled in [
        "https://svc:S3cretPassw0rd@mcp.example.com/mcp",
        "https://S3cretPassw0rd@mcp.example.com",
        "http://a:S3cretPassw0rd@127.0.0.1:8080?x=1",
    ] {
        let found = problems(&remote.replace("https://mcp.example.com/mcp", spelled));
        assert!(
            found[0].contains("upstreams.r.url: holds a user name or password"),
            "{found:?}"
        );
        assert!(!found[0].contains("S3cret"), "{found:?}");
    }
    // An `@` past the host (a path, a query) is no user.
    let text = remote.replace(
        "https://mcp.example.com/mcp",
        "https://mcp.example.com/mcp/@team?u=a@b",
    );
    assert!(
        parse(Path::new("/etc/gw/gateway.toml"), &text).is_ok(),
        "{text}"
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
fn a_table_or_key_given_twice_is_named() {
    // It said only "duplicate key (line 9, column 2)" (an independent attack).
    let found = problems(&format!(
        "{MINIMAL}[limits]\ncall_timeout_ms = 1000\n[limits]\n"
    ));
    assert!(found[0].contains("limits: duplicate key"), "{found:?}");
    let found = problems(&MINIMAL.replace("args =", "command = \"y\"\nargs ="));
    assert!(found[0].contains("command: duplicate key"), "{found:?}");
}
