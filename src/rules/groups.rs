//! Tool groups: a rule's `tool` may be a pattern over the whole tool name (`server__*`). Patterns
//! are expanded into each matching tool's rule lists at load, so deciding a registered tool costs
//! nothing more; a tool registered later is decided from the patterns themselves.

use super::Rule;
use super::condition::{GlobToken, glob_match, tokenize_glob};
use crate::policy::PolicyAction;
use crate::registry::ToolRegistry;

/// Whether a rule's `tool` is a pattern rather than an exact name.
pub(super) fn is_pattern(tool: &str) -> bool {
    tool.contains(['*', '?'])
}

/// A pattern over whole tool names: `*` any run of characters, `?` one, `\` escapes the next.
///
/// A pattern without a `/` matches no name holding one: such names are the gates of an MCP
/// server's resources, prompts and an upstream's requests (`mcp::passthrough`), which no tool
/// name can hold, and a rule written for tools (`files__*`, `*`) must not start allowing them
/// when a server begins to serve them. `files__*/*` or `*/read` name gates on purpose.
#[derive(Debug)]
pub(super) struct ToolPattern {
    tokens: Vec<GlobToken>,
    slash: bool,
}

impl ToolPattern {
    pub(super) fn new(pattern: &str) -> Self {
        Self {
            tokens: tokenize_glob(pattern),
            slash: pattern.contains('/'),
        }
    }

    /// Whether the whole of `name` matches (case matters, as it does for exact names).
    pub(super) fn matches(&self, name: &str) -> bool {
        (self.slash || !name.contains('/')) && glob_match(&self.tokens, name, false)
    }

    /// The names of `registry`'s tools that match, in registration order.
    pub(super) fn tools<'r>(&self, registry: &'r ToolRegistry) -> Vec<&'r str> {
        registry
            .specs()
            .map(|spec| spec.name.as_str())
            .filter(|name| self.matches(name))
            .collect()
    }
}

/// One pattern rule compiled once, for tools that were not registered when the policy was loaded
/// (the controller checked the registry holding them, [`Policy::check_registry`], so every pointer
/// of the rule names a field of theirs; a compiled condition does not depend on the schema).
///
/// [`Policy::check_registry`]: crate::Policy::check_registry
#[derive(Debug)]
pub(super) struct GroupRule {
    pub(super) pattern: ToolPattern,
    pub(super) action: PolicyAction,
    pub(super) rule: Rule,
}

/// The pattern rules covering `tool`, by action in precedence order, each sorted by id; `None`
/// if no pattern covers it.
pub(super) fn rules_for<'r>(
    groups: &'r [GroupRule],
    tool: &str,
) -> Option<[(PolicyAction, Vec<&'r Rule>); 3]> {
    let mut lists = [
        (PolicyAction::Deny, Vec::new()),
        (PolicyAction::Ask, Vec::new()),
        (PolicyAction::Allow, Vec::new()),
    ];
    let mut any = false;
    for group in groups.iter().filter(|group| group.pattern.matches(tool)) {
        any = true;
        if let Some((_, list)) = lists.iter_mut().find(|(action, _)| *action == group.action) {
            list.push(&group.rule);
        }
    }
    for (_, list) in &mut lists {
        list.sort_by(|a, b| a.id.cmp(&b.id));
    }
    any.then_some(lists)
}
