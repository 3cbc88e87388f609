//! One call's paths, each normalized once however many rules judge it.

use std::borrow::Cow;

use super::Undetermined;
use super::glob::ComponentPattern;
use super::paths::{PathSettings, within_components};

/// The policy's path settings and the argument strings normalized so far during one decision.
///
/// A tool with ten rules on `/path` judged the same string ten times, normalizing it (and
/// allocating its components) each time; now the first rule normalizes it and the others reuse
/// the components. Normalization is a pure function of the string and the settings, so a reused
/// result is the one that would be computed.
#[derive(Debug)]
pub(crate) struct CallPaths<'a> {
    settings: &'a PathSettings,
    // Keyed by the judged string itself (address and length): the same argument value reached by
    // several rules. Another value with the same text is normalized again, to the same result.
    // `None`: the string cannot be judged lexically.
    normalized: Vec<(&'a str, Option<Vec<Cow<'a, str>>>)>,
}

impl<'a> CallPaths<'a> {
    /// Nothing normalized yet; allocates nothing until a path is judged.
    pub(crate) fn new(settings: &'a PathSettings) -> Self {
        Self {
            settings,
            normalized: Vec::new(),
        }
    }

    /// The components of `path`, normalized once per string; `None` when it cannot be judged.
    pub(crate) fn components(&mut self, path: &'a str) -> Option<&[Cow<'a, str>]> {
        let index = match self
            .normalized
            .iter()
            .position(|(judged, _)| std::ptr::eq(*judged, path))
        {
            Some(index) => index,
            None => {
                self.normalized.push((path, self.settings.components(path)));
                self.normalized.len() - 1
            }
        };
        self.normalized[index].1.as_deref()
    }

    /// Why `path` cannot be judged, once `within` or `matches` said it cannot.
    pub(crate) fn undetermined(&self, path: &str) -> Undetermined {
        self.settings.undetermined(path)
    }

    /// Whether `path` lies inside one of `roots`; `None` when it cannot be judged.
    pub(crate) fn within(&mut self, path: &'a str, roots: &[Vec<String>]) -> Option<bool> {
        Some(within_components(self.components(path)?, roots))
    }

    /// Whether `path`, normalized, matches the compiled pattern; `None` when it cannot be judged.
    // Fast path: inlined across codegen units on every indexed decision (~100 instr. otherwise).
    #[inline]
    pub(crate) fn matches(&mut self, path: &'a str, pattern: &[ComponentPattern]) -> Option<bool> {
        let settings = self.settings;
        Some(settings.matches_components(self.components(path)?, pattern))
    }
}
