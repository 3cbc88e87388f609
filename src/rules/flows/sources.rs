//! Where results come from: the policy's `sources` (which tools are trusted) and the named
//! sources provenance conditions read, compiled once at load.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::Covers;
use crate::provenance::{ResultSources, Trust};
use crate::rules::groups::ToolName;

/// Which tools return content a third party can write: the policy's `sources`.
///
/// ```json
/// "sources": {"trusted": ["bank__list_payees"], "untrusted": ["web__*", "mail__read_*"]}
/// ```
///
/// A tool both lists name is untrusted; a tool neither names is `default` (untrusted unless set).
///
/// `lookups` names trusted tools whose results are directories (`chat__list_users`,
/// `contacts__list`): called without arguments, a record of one — a line of its text, an object
/// in its structured content — holding a name the person said makes the record's values named
/// by the person, so "Ana" in the person's request names `ana.silva` on the directory's line
/// `ana.silva - Ana Silva`. See [`crate::provenance`] for what counts as a name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SourcesConfig {
    /// Tools (exact names or patterns) whose results the deployment vouches for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trusted: Vec<String>,
    /// Tools (exact names or patterns) whose results anyone may have written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untrusted: Vec<String>,
    /// The class of every other tool.
    #[serde(default)]
    pub default: Trust,
    /// Trusted tools (exact names or patterns) whose results are directories, read against what
    /// the person asked; a tool these name that the policy does not trust is refused at load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lookups: Vec<String>,
}

/// The trust classes of tools and the named sources results are recorded under.
#[derive(Debug, Default)]
pub(super) struct Classes {
    // The policy's `sources`, compiled: untrusted, trusted, the default; `None` without one.
    configured: Option<(Vec<ToolName>, Vec<ToolName>, Trust)>,
    // Its `lookups`, compiled.
    lookups: Vec<ToolName>,
    pub(super) named: Vec<(Arc<str>, Covers)>,
}

impl Classes {
    pub(super) fn new(configured: Option<SourcesConfig>) -> Self {
        let compile = |tools: &[String]| tools.iter().map(|tool| ToolName::new(tool)).collect();
        let lookups = configured
            .as_ref()
            .map(|config| compile(&config.lookups))
            .unwrap_or_default();
        Self {
            lookups,
            configured: configured.map(|config| {
                (
                    compile(&config.untrusted),
                    compile(&config.trusted),
                    config.default,
                )
            }),
            named: Vec::new(),
        }
    }

    /// What `tool`'s results count as; `None` when nothing reads provenance.
    pub(super) fn of(&self, tool: &str, observed: bool) -> Option<ResultSources> {
        if !observed && self.configured.is_none() {
            return None;
        }
        let names = |list: &[ToolName]| list.iter().any(|name| name.matches(tool));
        let trust = match &self.configured {
            Some((untrusted, _, _)) if names(untrusted) => Trust::Untrusted,
            Some((_, trusted, _)) if names(trusted) => Trust::Trusted,
            Some((_, _, default)) => *default,
            None => Trust::Untrusted,
        };
        let mut sources = ResultSources::new(trust);
        sources.classified = self.configured.is_some();
        sources.lookup = trust == Trust::Trusted && names(&self.lookups);
        sources.named = self
            .named
            .iter()
            .filter(|(_, covers)| covers.matches(tool))
            .map(|(name, _)| Arc::clone(name))
            .collect();
        Some(sources)
    }
}
