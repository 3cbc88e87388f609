//! `[tool_sets.NAME]`: names, patterns, what they need, and the reserved group prefix.

use std::path::Path;

use super::super::parse;
use super::{MINIMAL, refused_naming};

#[test]
fn tool_sets_are_checked_and_their_group_prefix_is_reserved() {
    let http = "[listen]\nhttp = \"127.0.0.1:8080\"\n[[clients]]\nid = \"a\"\napi_key_sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\n";
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}{http}[tool_sets.ops]\ntools = [\"files__read\", \"git__*\"]\npolicy = \"ops.json\"\n[tool_sets.docs]\ntools = [\"files__read\"]\n"),
    )
    .expect("loads");
    let names: Vec<&str> = config
        .tool_sets
        .iter()
        .map(|set| set.name.as_str())
        .collect();
    assert_eq!(names, ["docs", "ops"]);
    assert_eq!(
        config.tool_sets[1].policy.as_deref(),
        Some(Path::new("/etc/gw/ops.json"))
    );
    for (text, key, says) in [
        (
            format!("{MINIMAL}[tool_sets.ops]\ntools = [\"a\"]\n"),
            "tool_sets",
            "listen.http",
        ),
        (
            format!("{MINIMAL}{http}[tool_sets.Ops]\ntools = [\"a\"]\n"),
            "tool_sets.Ops",
            "lowercase",
        ),
        (
            format!("{MINIMAL}{http}[tool_sets.\"a/b\"]\ntools = [\"a\"]\n"),
            "tool_sets.a/b",
            "lowercase",
        ),
        (
            format!("{MINIMAL}{http}[tool_sets.ops]\n"),
            "tool_sets.ops.tools",
            "missing",
        ),
        (
            format!("{MINIMAL}{http}[tool_sets.ops]\ntools = [\"a b*\"]\n"),
            "tool_sets.ops.tools[0]",
            "without spaces",
        ),
        (
            format!("{MINIMAL}{http}[tool_sets.ops]\ntools = [\"\"]\n"),
            "tool_sets.ops.tools[0]",
            "served tool name",
        ),
        (
            format!(
                "{MINIMAL}[listen]\nhttp = \"127.0.0.1:8080\"\n[[clients]]\nid = \"a\"\ngroups = [\"toolset:ops\"]\napi_key_sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\n"
            ),
            "clients[0].groups[0]",
            "no client may claim",
        ),
        (
            format!(
                "{MINIMAL}{http}[tool_sets.ops]\ntools = [\"a\"]\n[oauth]\nresource = \"https://gw.example.com/gateway\"\n[[oauth.issuers]]\nissuer = \"https://a.example\"\n"
            ),
            "oauth.resource",
            "ends in /mcp",
        ),
    ] {
        refused_naming(&text, key, says);
    }
}
