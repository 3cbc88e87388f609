//! The set of tools the model may call.

use std::sync::Arc;

use crate::contract::ToolSpec;
use crate::definition::ToolDefinition;
use crate::names::FastMap;

mod lookalike;

pub use lookalike::LookAlikes;

/// The first character of `text` that shows nothing where it stands — a control character, a
/// zero-width or bidi control (U+200B, U+202E, …), any Unicode default-ignorable or format
/// character — with its position in characters; `None` if every character is seen. What the
/// registry refuses in tool names, for callers that screen other names a person reads (principal
/// ids, group names): `alice\u{200b}` looks like `alice`, and `\u{202e}ecila` shows as `alice`.
///
/// # Examples
///
/// ```
/// use toolgate::registry::first_invisible;
///
/// assert_eq!(first_invisible("alice"), None);
/// assert_eq!(first_invisible("alice\u{200b}"), Some((5, '\u{200b}')));
/// assert_eq!(first_invisible("\u{202e}ecila"), Some((0, '\u{202e}')));
/// ```
pub fn first_invisible(text: &str) -> Option<(usize, char)> {
    text.chars()
        .enumerate()
        .find(|(_, c)| crate::text::is_invisible(*c))
}

/// Why a [`ToolRegistry`] could not be built. The caller assembled the tool set wrongly.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two definitions share a name; the model could not tell them apart. Rename one.
    #[error("duplicate tool name: {name}")]
    DuplicateTool {
        /// The name given twice.
        name: String,
    },
    /// A name holds a character that shows nothing where it stands (a control, whitespace, a
    /// zero-width character, a bidi control): two names could look the same. Remove it.
    #[error(
        "tool name {name:?} holds an invisible character (U+{code_point:04X}) at character {index}"
    )]
    InvisibleCharacter {
        /// The name.
        name: String,
        /// The character's position, counted in characters.
        index: usize,
        /// The character.
        code_point: u32,
    },
    /// Two names differ only in case, width or characters drawn alike: a model or a person
    /// could take one for the other. Rename one.
    #[error("tool names {name:?} and {other:?} look alike")]
    LookAlike {
        /// The name registered second.
        name: String,
        /// The name registered first.
        other: String,
    },
    /// A name holds characters outside ASCII, which only the `unicode` feature can check for
    /// look-alikes. Use an ASCII name (every provider requires one) or enable the feature.
    #[error(
        "tool name {name:?} is not ASCII: enable toolgate's `unicode` feature to have it checked for look-alikes"
    )]
    NonAsciiName {
        /// The name.
        name: String,
    },
    /// A name mixes scripts (a Cyrillic letter in a Latin name): the mark of a look-alike.
    /// Spell it in one script.
    #[error("tool name {name:?} mixes scripts")]
    MixedScripts {
        /// The name.
        name: String,
    },
}

/// The tools the model may call, by exact name, in registration order.
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::{ToolDefinition, ToolError, ToolRegistry, ToolSpec};
///
/// let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
/// let registry = ToolRegistry::new([
///     ToolDefinition::new(ToolSpec::new("read_file", "Read a file.", json!({"type": "object"})), noop)?,
///     ToolDefinition::new(ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"})), noop)?,
/// ])?;
/// let names: Vec<&str> = registry.specs().map(|spec| spec.name.as_str()).collect();
/// assert_eq!(names, ["read_file", "apply_patch"]);
/// assert!(registry.resolve("Read_File").is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct ToolRegistry {
    // Invariant: `by_name` maps each definition's spec name to its position in `in_order`, and
    // nothing else.
    by_name: FastMap<String, usize>,
    in_order: Vec<Arc<ToolDefinition>>,
}

impl ToolRegistry {
    /// Builds a registry from definitions.
    ///
    /// Names a model or a person could take for one another are refused: a name holding an
    /// invisible character (zero-width, bidi control, control, whitespace), and two names that
    /// differ only in case — or, with the `unicode` feature, in width, compatibility forms or
    /// characters drawn alike (UTS #39 skeletons), a name mixing scripts included. Without the
    /// feature, names must be ASCII.
    ///
    /// # Errors
    ///
    /// [`RegistryError::DuplicateTool`] naming the first name given twice;
    /// [`RegistryError::InvisibleCharacter`], [`RegistryError::LookAlike`],
    /// [`RegistryError::NonAsciiName`] or [`RegistryError::MixedScripts`] for the first name
    /// that could be taken for another.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::{ToolDefinition, ToolError, ToolRegistry, ToolSpec};
    /// use toolgate::registry::RegistryError;
    ///
    /// let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    /// let twice = || ToolDefinition::new(ToolSpec::new("x", "", json!({})), noop);
    /// let error = ToolRegistry::new([twice()?, twice()?]).unwrap_err();
    /// assert_eq!(error.to_string(), "duplicate tool name: x");
    /// # Ok::<(), toolgate::definition::DefinitionError>(())
    /// ```
    pub fn new(
        definitions: impl IntoIterator<Item = ToolDefinition>,
    ) -> Result<Self, RegistryError> {
        let mut registry = Self::default();
        let mut look_alikes = lookalike::LookAlikes::default();
        for definition in definitions {
            let name = definition.spec().name.clone();
            if registry.by_name.contains_key(&name) {
                return Err(RegistryError::DuplicateTool { name });
            }
            look_alikes.check(&name)?;
            registry.by_name.insert(name, registry.in_order.len());
            registry.in_order.push(Arc::new(definition));
        }
        Ok(registry)
    }

    /// The specs to show the model, in registration order.
    pub fn specs(&self) -> impl ExactSizeIterator<Item = &ToolSpec> {
        self.in_order.iter().map(|definition| definition.spec())
    }

    /// The definition registered under exactly `name` (no case folding, trimming or
    /// normalization).
    pub fn resolve(&self, name: &str) -> Option<&Arc<ToolDefinition>> {
        self.position(name).map(|(_, definition)| definition)
    }

    /// The definition registered under exactly `name`, with its position in registration order:
    /// one lookup gives both, so a per-tool table kept beside the registry needs no second one.
    #[inline]
    pub(crate) fn position(&self, name: &str) -> Option<(usize, &Arc<ToolDefinition>)> {
        let index = *self.by_name.get(name)?;
        self.in_order
            .get(index)
            .map(|definition| (index, definition))
    }

    /// The definitions in registration order; a definition's position here is the one
    /// [`position`](Self::position) gives.
    pub(crate) fn definitions(&self) -> &[Arc<ToolDefinition>] {
        &self.in_order
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.in_order.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.in_order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolError;
    use serde_json::{Value, json};

    fn tool(name: &str) -> ToolDefinition {
        let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
        ToolDefinition::new(ToolSpec::new(name, "", json!({"type": "object"})), noop).unwrap()
    }

    #[test]
    fn duplicate_names_are_refused_by_name() {
        let error = ToolRegistry::new([tool("a"), tool("b"), tool("a")]).unwrap_err();
        assert_eq!(
            error,
            RegistryError::DuplicateTool {
                name: "a".to_owned()
            }
        );
    }

    #[test]
    fn specs_keep_registration_order() {
        let registry = ToolRegistry::new([tool("zeta"), tool("alpha"), tool("mid")]).unwrap();
        let names: Vec<_> = registry.specs().map(|s| s.name.clone()).collect();
        assert_eq!(names, ["zeta", "alpha", "mid"]);
        assert_eq!(registry.len(), 3);
    }

    #[test]
    fn resolve_matches_the_exact_name_only() {
        let registry = ToolRegistry::new([tool("read_file")]).unwrap();
        assert!(registry.resolve("read_file").is_some());
        for near in [
            "Read_File",
            "read_file ",
            " read_file",
            "read_fіle", // Cyrillic і
            "read_file\0",
            "read",
            "",
        ] {
            assert!(registry.resolve(near).is_none(), "{near:?} resolved");
        }
    }
}
