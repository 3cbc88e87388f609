//! Names every provider accepts, mapped reversibly from names it refuses.
//!
//! MCP tools are often named `server.tool`, and generated names can pass 64 characters; OpenAI,
//! Anthropic and Gemini refuse both. A [`NameMap`] gives each refused name a wire name the
//! provider accepts — its allowed characters kept, the rest replaced by `_`, cut short, then `_`
//! and 10 hex digits of the SHA-256 of the original — and takes calls back to the original name.
//!
//! Guarantees, for the specs a map was built from:
//! - every wire name meets the provider's rule, and no two tools share one (a clash with another
//!   tool's name, accepted as it is or mapped, is resolved by lengthening the digest, and if that
//!   cannot help the map is not built);
//! - a name the provider accepts is its own wire name; mapping is a pure function of the set of
//!   names, so the same registry maps the same way in every process;
//! - [`NameMap::restore`] renames a call only when its name is a wire name of this map, to that
//!   tool's original name; any other name is left as it is (the registry then decides).
//!
//! ```
//! use serde_json::json;
//! use toolgate::providers::{names::{NameMap, Provider}, openai};
//! use toolgate::{ToolCall, ToolSpec};
//!
//! let specs = [ToolSpec::new("github.create_issue", "Open an issue.", json!({"type": "object"}))];
//! let names = NameMap::new(Provider::OpenAi, &specs)?;
//! let wire = names.wire_name("github.create_issue").unwrap().to_owned();
//! assert!(wire.starts_with("github_create_issue_"));
//! let tools = openai::tools(&names.specs(&specs), false)?;
//! assert_eq!(tools[0]["function"]["name"], wire.as_str());
//! let call = names.restore(Ok(ToolCall::new("call_1", wire, json!({}))));
//! assert_eq!(call.unwrap().tool_name, "github.create_issue");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

use sha2::Digest as _;

use super::{ExportError, NameRule, ParsedCall};
use crate::contract::ToolSpec;

/// A provider whose naming rule a [`NameMap`] follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions and Responses (and compatible APIs): 1 to 64 of `a-zA-Z0-9_-`.
    OpenAi,
    /// Anthropic Messages: 1 to 64 of `a-zA-Z0-9_-`.
    Anthropic,
    /// Gemini: 1 to 64 of `a-zA-Z0-9_-`, starting with a letter or `_`.
    Gemini,
}

impl Provider {
    fn rule(self) -> &'static NameRule {
        match self {
            Self::OpenAi => &super::OPENAI_NAMES,
            Self::Anthropic => &super::anthropic::NAMES,
            Self::Gemini => &super::gemini::NAMES,
        }
    }

    fn accepts(self, name: &str) -> bool {
        let rule = self.rule();
        let fits = !name.is_empty()
            && name.len() <= rule.max_len
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || rule.extra.contains(c));
        fits && (self != Self::Gemini
            || name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
    }
}

/// Original tool names ↔ names a provider accepts. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameMap {
    /// Invariant: a bijection between the specs' names and wire names the provider accepts.
    to_wire: BTreeMap<String, String>,
    from_wire: BTreeMap<String, String>,
}

/// The fewest hex digits of the digest a mapped name carries; more are used on a clash.
const MIN_DIGEST: usize = 10;

impl NameMap {
    /// Maps the names of `specs` for `provider`.
    ///
    /// # Errors
    ///
    /// [`ExportError::InvalidName`] if two specs share a name, or a clash cannot be resolved
    /// (which takes two names whose SHA-256 digests agree on 40 hex digits).
    pub fn new<'a>(
        provider: Provider,
        specs: impl IntoIterator<Item = &'a ToolSpec>,
    ) -> Result<Self, ExportError> {
        let names: Vec<&str> = specs.into_iter().map(|spec| spec.name.as_str()).collect();
        let refused = |name: &str| ExportError::InvalidName {
            tool: name.to_owned(),
            provider: provider.rule().provider,
            rule: "a name map needs distinct names whose mapped forms do not clash",
        };
        let mut map = Self {
            to_wire: BTreeMap::new(),
            from_wire: BTreeMap::new(),
        };
        // Accepted names keep themselves and are placed first, so a mapped name never takes one.
        let mut taken = BTreeSet::new();
        for name in &names {
            if provider.accepts(name) && !taken.insert((*name).to_owned()) {
                return Err(refused(name));
            }
        }
        let mut sorted = names.clone();
        sorted.sort_unstable();
        for pair in sorted.windows(2) {
            if pair[0] == pair[1] {
                return Err(refused(pair[0]));
            }
        }
        for name in sorted {
            let wire = if provider.accepts(name) {
                name.to_owned()
            } else {
                (MIN_DIGEST..=40)
                    .step_by(2)
                    .map(|digits| mapped(provider, name, digits))
                    .find(|wire| !taken.contains(wire))
                    .ok_or_else(|| refused(name))?
            };
            taken.insert(wire.clone());
            map.from_wire.insert(wire.clone(), name.to_owned());
            map.to_wire.insert(name.to_owned(), wire);
        }
        Ok(map)
    }

    /// The name the provider sees for `original`, if it is one of the map's tools.
    pub fn wire_name(&self, original: &str) -> Option<&str> {
        self.to_wire.get(original).map(String::as_str)
    }

    /// The original name behind `wire`, if it is one of the map's wire names.
    pub fn original_name(&self, wire: &str) -> Option<&str> {
        self.from_wire.get(wire).map(String::as_str)
    }

    /// The specs with their wire names, ready for the provider's `tools` function. A spec not
    /// in the map keeps its name.
    pub fn specs<'a>(&self, specs: impl IntoIterator<Item = &'a ToolSpec>) -> Vec<ToolSpec> {
        specs
            .into_iter()
            .map(|spec| {
                let mut spec = spec.clone();
                if let Some(wire) = self.to_wire.get(&spec.name) {
                    spec.name.clone_from(wire);
                }
                spec
            })
            .collect()
    }

    /// A call under its original name: a wire name of this map becomes its tool's original
    /// name; any other name (and an error result) is returned unchanged.
    pub fn restore(&self, call: ParsedCall) -> ParsedCall {
        call.map(|mut call| {
            if let Some(original) = self.from_wire.get(&call.tool_name) {
                call.tool_name.clone_from(original);
            }
            call
        })
    }
}

/// `name` with refused characters as `_`, cut so that `_` and `digits` hex digits of its
/// SHA-256 fit the provider's length, prefixed with `_` for Gemini if it does not start with a
/// letter or `_`.
fn mapped(provider: Provider, name: &str, digits: usize) -> String {
    let rule = provider.rule();
    let digest = crate::canonical::hex_digest(&sha2::Sha256::digest(name.as_bytes()));
    let digest = &digest["sha256:".len().."sha256:".len() + digits];
    let mut kept: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || rule.extra.contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if provider == Provider::Gemini
        && !kept.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
    {
        kept.insert(0, '_');
    }
    kept.truncate(rule.max_len - 1 - digits);
    format!("{kept}_{digest}")
}
