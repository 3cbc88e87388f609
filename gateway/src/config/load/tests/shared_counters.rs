//! `[rate_limits]` with PostgreSQL: counters are keyed by the deployment the operator names.

use std::path::Path;

use super::super::parse;
use super::{MINIMAL, problems};

#[test]
fn shared_counters_are_keyed_by_the_named_deployment_not_by_the_file() {
    let load = |path: &str, deployment: &str| {
        let text = format!(
            "{MINIMAL}\n[rate_limits]\npostgres_url_env = \"PG\"\ndeployment = \"{deployment}\"\n"
        );
        parse(Path::new(path), &text)
            .expect("loads")
            .shared_counters
            .expect("shared")
    };
    // Two instances of one deployment, each with a file of its own: one key.
    let first = load("/etc/gw/instance-1.toml", "payments-prod");
    let second = load("/srv/other/gateway.toml", "payments-prod");
    assert_eq!(first.deployment, second.deployment);
    assert_eq!(first.url_env, "PG");
    // Two deployments with files of the same name: two keys.
    assert_ne!(
        load("/etc/a/gateway.toml", "a").deployment,
        load("/etc/b/gateway.toml", "b").deployment
    );
    for ok in ["x", "a.b_c-d", &"d".repeat(64)] {
        assert_eq!(load("/g.toml", ok).deployment, ok);
    }
    assert!(
        parse(Path::new("/g.toml"), MINIMAL)
            .expect("loads")
            .shared_counters
            .is_none()
    );
}

#[test]
fn a_missing_or_malformed_deployment_is_refused_naming_the_key() {
    let found = problems(&format!(
        "{MINIMAL}\n[rate_limits]\npostgres_url_env = \"PG\"\n"
    ));
    assert!(
        found[0]
            .contains("gateway.toml: rate_limits.deployment: is required with `postgres_url_env`"),
        "{found:?}"
    );
    let found = problems(&format!("{MINIMAL}\n[rate_limits]\ndeployment = \"a\"\n"));
    assert!(
        found[0].contains("rate_limits.deployment: names whose counters"),
        "{found:?}"
    );
    // Empty, too long, a path, spaces, invisible and bidi characters, non-ASCII look-alikes.
    let too_long = "d".repeat(65);
    for bad in [
        "",
        &too_long,
        "../x",
        "a b",
        "a/b",
        "a\u{200b}",
        "\u{202e}a",
        "а",
        "a:b",
    ] {
        let text = format!(
            "{MINIMAL}\n[rate_limits]\npostgres_url_env = \"PG\"\ndeployment = {}\n",
            toml_string(bad)
        );
        let found = problems(&text);
        assert!(
            found[0].contains("rate_limits.deployment: must be 1 to 64 characters"),
            "{bad:?}: {found:?}"
        );
    }
    let found = problems(&format!(
        "{MINIMAL}\n[rate_limits]\npostgres_url_env = \"PG\"\ndeployment = 7\n"
    ));
    assert!(found[0].contains("deployment"), "{found:?}");
}

/// `text` as a TOML basic string, every character escaped as `\uXXXX` where it is not plain.
fn toml_string(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || " ./-_:".contains(c) {
            quoted.push(c);
        } else {
            quoted.push_str(&format!("\\u{:04X}", u32::from(c)));
        }
    }
    quoted.push('"');
    quoted
}
