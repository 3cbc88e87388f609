//! The `[tool_sets.NAME]` tables: named subsets of the served tools, each served at
//! `/sets/NAME/mcp`, optionally with a policy layer of its own.

use std::collections::BTreeMap;
use std::path::Path;

use super::super::ToolSetSection;
use crate::tool_sets::ToolSetConfig;

/// The tool sets, checked: a name of 1 to 64 lowercase letters, digits, `-` or `_` (it is a path
/// segment and part of a group name); at least one tool pattern, read as a rule's `tool` is; a
/// policy file relative to `base`.
pub(super) fn tool_sets(
    written: BTreeMap<String, ToolSetSection>,
    base: &Path,
    served_over_http: bool,
    problem: &mut dyn FnMut(&str, String),
) -> Vec<ToolSetConfig> {
    if !written.is_empty() && !served_over_http {
        problem(
            "tool_sets",
            "tool sets are served over HTTP at /sets/NAME/mcp: set listen.http".to_owned(),
        );
    }
    let mut sets = Vec::new();
    for (name, section) in written {
        let key = format!("tool_sets.{name}");
        let mut fine = true;
        if name.is_empty()
            || name.len() > 64
            || !name.bytes().all(|byte| {
                byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-' || byte == b'_'
            })
        {
            problem(
                &key,
                "a set's name is 1 to 64 lowercase letters, digits, `-` or `_`: it is the path /sets/NAME/mcp".to_owned(),
            );
            fine = false;
        }
        let tools = section.tools.unwrap_or_default();
        if tools.is_empty() {
            problem(
                &format!("{key}.tools"),
                "missing: the served tool names the set holds, e.g. [\"files__read_file\", \"git__*\"]".to_owned(),
            );
            fine = false;
        }
        for (index, pattern) in tools.iter().enumerate() {
            if pattern.is_empty() || pattern.chars().any(|c| c.is_control() || c.is_whitespace()) {
                problem(
                    &format!("{key}.tools[{index}]"),
                    format!(
                        "{pattern:?}: a served tool name or a pattern of them (`*`, `?`, as a rule's `tool`), without spaces or control characters"
                    ),
                );
                fine = false;
            }
        }
        if fine {
            sets.push(ToolSetConfig {
                name,
                tools,
                policy: section.policy.map(|policy| base.join(policy)),
            });
        }
    }
    sets
}
