//! Tool groups: a rule's `tool` may be a pattern over the whole tool name (`server__*`). Patterns
//! are expanded into each matching tool's rule lists at load, so deciding a registered tool costs
//! nothing more; a tool registered later is decided from the patterns themselves.

use super::Rule;
use super::condition::{GlobToken, glob_match, tokenize_glob};
use crate::decision::PolicyAction;
use crate::registry::ToolRegistry;

/// Whether a rule's `tool` is a pattern rather than an exact name.
pub(super) fn is_pattern(tool: &str) -> bool {
    tool.contains(['*', '?'])
}

/// A `tool` as a rule, limit or source list writes it — an exact name or a pattern — compiled
/// once, so a decision never tokenizes a pattern.
#[derive(Debug)]
pub(super) enum ToolName {
    Exact(String),
    Pattern(ToolPattern),
}

impl ToolName {
    pub(super) fn new(tool: &str) -> Self {
        if is_pattern(tool) {
            Self::Pattern(ToolPattern::new(tool))
        } else {
            Self::Exact(tool.to_owned())
        }
    }

    /// Whether `name` is this tool, or matches this pattern.
    pub(super) fn matches(&self, name: &str) -> bool {
        match self {
            Self::Exact(tool) => tool == name,
            Self::Pattern(pattern) => pattern.matches(name),
        }
    }
}

/// A tool-name pattern as the rule language reads a rule's `tool` — for another subset of the
/// tools than a rule's, written in the same words (the gateway's tool sets).
///
/// `*` matches any run of characters, `?` one, `\` escapes the next; the whole name must match,
/// case and all. As for an allow or ask rule, a pattern holds a *gate* (a server's
/// `resources/read`, `prompts/get`, …) only if it ends with the gate's method: `files__*` holds
/// `files__read` but not `files__resources/read`; `files__*resources/read` holds that.
///
/// ```
/// use toolgate::rules::ToolNamePattern;
///
/// let reads = ToolNamePattern::new("files__read_*");
/// assert!(reads.holds("files__read_file") && !reads.holds("files__write"));
/// assert!(!ToolNamePattern::new("files__*").holds("files__resources/read"));
/// ```
#[derive(Debug)]
pub struct ToolNamePattern(ToolPattern);

impl ToolNamePattern {
    /// `pattern`, read once (match with [`holds`](Self::holds) as often as needed).
    pub fn new(pattern: &str) -> Self {
        Self(ToolPattern::new(pattern))
    }

    /// Whether the pattern holds the tool `name`, as an allow rule with it would cover it.
    pub fn holds(&self, name: &str) -> bool {
        self.0.covers(name, PolicyAction::Allow)
    }
}

/// A pattern over whole tool names: `*` any run of characters, `?` one, `\` escapes the next.
///
/// A pattern allows or asks for a *gate* — the registry entry standing for an MCP server's
/// `resources/read`, `prompts/get`, or an upstream's `sampling/createMessage` or
/// `elicitation/create`, named with that method as suffix — only if the pattern itself ends with
/// that method (`files__*resources/read`, `*prompts/get`): a rule written for tools (`files__*`,
/// `*`) does not start allowing a server's resources when it begins to serve them. A deny
/// pattern covers gates like tools (a `*` deny stops everything), and so do the patterns of rate
/// limits and flow labels.
#[derive(Debug)]
pub(super) struct ToolPattern {
    tokens: Vec<GlobToken>,
    /// The gate method the pattern ends with, if any.
    gate_method: Option<&'static str>,
}

impl ToolPattern {
    pub(super) fn new(pattern: &str) -> Self {
        Self {
            tokens: tokenize_glob(pattern),
            gate_method: crate::gate_names::gate_method(pattern),
        }
    }

    /// Whether the whole of `name` matches (case matters, as it does for exact names).
    pub(super) fn matches(&self, name: &str) -> bool {
        glob_match(&self.tokens, name, false)
    }

    /// Whether a rule with this pattern and `action` applies to `name`: as
    /// [`matches`](Self::matches), except that an allow or ask covers a gate only if the pattern
    /// ends with the gate's method.
    pub(super) fn covers(&self, name: &str, action: PolicyAction) -> bool {
        if action != PolicyAction::Deny
            && let Some(method) = crate::gate_names::gate_method(name)
            && self.gate_method != Some(method)
        {
            return false;
        }
        self.matches(name)
    }

    /// The names of `registry`'s tools that match, gates included, in registration order.
    pub(super) fn tools<'r>(&self, registry: &'r ToolRegistry) -> Vec<&'r str> {
        self.covered(registry, PolicyAction::Deny)
    }

    /// The names of `registry`'s tools a rule with this pattern and `action` covers, in
    /// registration order.
    pub(super) fn covered<'r>(
        &self,
        registry: &'r ToolRegistry,
        action: PolicyAction,
    ) -> Vec<&'r str> {
        registry
            .specs()
            .map(|spec| spec.name.as_str())
            .filter(|name| self.covers(name, action))
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
    for group in groups
        .iter()
        .filter(|group| group.pattern.covers(tool, group.action))
    {
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
