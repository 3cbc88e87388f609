//! How text conditions (`equals`, `one_of`, `glob`) compare strings: as sent, or normalized.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How the policy compares the strings of its `equals`, `one_of` and `glob` conditions; one
/// setting for every rule.
///
/// With `normalize` (needs toolgate's `unicode` feature; refused at load without it), both the
/// rule's text and the argument's are compared after removing invisible characters (zero-width,
/// bidi controls), NFKC (fullwidth and other compatibility forms, composed and decomposed
/// accents) and case folding — so `ａｌｉｃｅ@ｅｘａｍｐｌｅ.com`, `ali\u{200B}ce@example.com` and
/// `Alice@Example.com` meet a rule written for `alice@example.com`. A `glob` pattern is
/// normalized before its wildcards are read. Paths and commands are not normalized: a file
/// system and a shell read the characters as sent, so `path_within` and `argv_prefix` do too.
///
/// # Examples
///
/// ```
/// use toolgate::rules::TextOptions;
///
/// let options: TextOptions = serde_json::from_str(r#"{"normalize": true}"#)?;
/// assert!(options.normalize);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TextOptions {
    /// Compare text normalized (NFKC, invisible characters removed, case folded).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub normalize: bool,
}

impl TextOptions {
    /// Text compared normalized, or as sent.
    #[must_use]
    pub fn normalize(mut self, normalize: bool) -> Self {
        self.normalize = normalize;
        self
    }

    pub(crate) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Whether normalization can be had; the error names the feature it needs.
pub(crate) fn check_available(normalize: bool) -> Result<(), String> {
    if normalize && !cfg!(feature = "unicode") {
        return Err("normalize needs toolgate's `unicode` feature".to_owned());
    }
    Ok(())
}

/// `text`, normalized if `normalize` (borrowed when that changes nothing).
pub(crate) fn compared(text: &str, normalize: bool) -> Cow<'_, str> {
    #[cfg(feature = "unicode")]
    if normalize {
        return crate::text::normalized(text);
    }
    // Without the feature `normalize` is refused at load and never reaches here.
    let _ = normalize;
    Cow::Borrowed(text)
}

/// `value` with its strings normalized if `normalize`; borrowed when it holds no string.
pub(crate) fn compared_value(value: &Value, normalize: bool) -> Cow<'_, Value> {
    #[cfg(feature = "unicode")]
    if normalize && holds_text(value) {
        return Cow::Owned(crate::text::normalized_value(value));
    }
    let _ = normalize;
    Cow::Borrowed(value)
}

#[cfg(feature = "unicode")]
fn holds_text(value: &Value) -> bool {
    match value {
        Value::String(_) | Value::Object(_) => true,
        Value::Array(items) => items.iter().any(holds_text),
        _ => false,
    }
}
