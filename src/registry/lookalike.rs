//! Tool names a person or a model could not tell apart, refused when a registry is built.
//!
//! A model picks a tool by its name, and a person reads names in approvals and logs. A name that
//! holds characters showing nothing (zero-width, bidi controls), or two names that differ only in
//! case or in characters drawn alike, let one tool pass for another. Without the `unicode`
//! feature names must be ASCII (what every provider accepts) and are compared ignoring case;
//! with it, any single-script name is accepted and names are compared by their UTS #39 skeletons
//! after NFKC and case folding (so `tool_1` and `tool_l`, or a Latin and a Cyrillic `а`, are
//! look-alikes).

use super::RegistryError;
use crate::names::FastMap;

/// Names checked so far, by the form two look-alike names share: the screen a
/// [`ToolRegistry`](crate::ToolRegistry) applies, for code that gathers names from elsewhere (a
/// gateway importing an upstream's tools) and must leave a bad one out rather than fail whole.
///
/// # Examples
///
/// ```
/// let mut names = toolgate::registry::LookAlikes::default();
/// assert!(names.check("read_file").is_ok());
/// assert!(names.check("Read_File").is_err()); // differs only in case
/// assert!(names.check("read\u{200b}file").is_err()); // a zero-width space
/// ```
#[derive(Debug, Default)]
pub struct LookAlikes(FastMap<String, String>);

impl LookAlikes {
    /// Checks `name` alone and against every name checked before; a name that passes is
    /// remembered.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvisibleCharacter`], [`RegistryError::LookAlike`], and without the
    /// `unicode` feature [`RegistryError::NonAsciiName`], with it
    /// [`RegistryError::MixedScripts`].
    pub fn check(&mut self, name: &str) -> Result<(), RegistryError> {
        if let Some((index, c)) = name
            .chars()
            .enumerate()
            .find(|(_, c)| crate::text::is_invisible(*c) || c.is_whitespace())
        {
            return Err(RegistryError::InvisibleCharacter {
                name: name.to_owned(),
                index,
                code_point: u32::from(c),
            });
        }
        let form = form(name)?;
        if let Some(other) = self.0.get(&form) {
            return Err(RegistryError::LookAlike {
                name: name.to_owned(),
                other: other.clone(),
            });
        }
        self.0.insert(form, name.to_owned());
        Ok(())
    }
}

/// The form look-alike names share.
#[cfg(not(feature = "unicode"))]
fn form(name: &str) -> Result<String, RegistryError> {
    if !name.is_ascii() {
        return Err(RegistryError::NonAsciiName {
            name: name.to_owned(),
        });
    }
    Ok(name.to_ascii_lowercase())
}

/// The form look-alike names share.
#[cfg(feature = "unicode")]
fn form(name: &str) -> Result<String, RegistryError> {
    use unicode_security::MixedScript as _;
    if !name.is_single_script() {
        return Err(RegistryError::MixedScripts {
            name: name.to_owned(),
        });
    }
    Ok(unicode_security::skeleton(&crate::text::normalized(name)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(names: &[&str]) -> Result<(), RegistryError> {
        let mut seen = LookAlikes::default();
        names.iter().try_for_each(|name| seen.check(name))
    }

    #[test]
    fn names_that_differ_only_by_case_or_invisible_characters_are_refused() {
        assert!(checked(&["read_file", "write_file", "read-file", "read.file"]).is_ok());
        assert_eq!(
            checked(&["read_file", "Read_File"]),
            Err(RegistryError::LookAlike {
                name: "Read_File".into(),
                other: "read_file".into()
            })
        );
        for (name, index, code_point) in [
            ("read\u{200b}_file", 4, 0x200b),
            ("\u{202e}elif_daer", 0, 0x202e),
            ("read_file\u{feff}", 9, 0xfeff),
            ("read file", 4, 0x20),
            ("read\tfile", 4, 0x9),
            ("read_fi\u{ad}le", 7, 0xad),
        ] {
            assert_eq!(
                checked(&[name]),
                Err(RegistryError::InvisibleCharacter {
                    name: name.into(),
                    index,
                    code_point
                }),
                "{name:?}"
            );
        }
    }

    #[cfg(not(feature = "unicode"))]
    #[test]
    fn without_the_unicode_feature_names_are_ascii() {
        assert_eq!(
            checked(&["rеad_file"]),
            Err(RegistryError::NonAsciiName {
                name: "rеad_file".into()
            })
        );
    }

    #[cfg(feature = "unicode")]
    #[test]
    fn with_the_unicode_feature_confusable_and_mixed_script_names_are_refused() {
        // Cyrillic `е` in a Latin name: one name mixing scripts.
        assert!(matches!(
            checked(&["rеad_file"]),
            Err(RegistryError::MixedScripts { .. })
        ));
        for (first, second) in [
            ("read_file", "ｒｅａｄ_ｆｉｌｅ"),
            ("tool_1", "tool_l"),
            ("read_file", "READ_FILE"),
            ("ﬁle", "file"),
            // All-Cyrillic `сор` and Latin `cop`: each a single script, drawn alike.
            ("cop", "сор"),
        ] {
            assert!(
                matches!(
                    checked(&[first, second]),
                    Err(RegistryError::LookAlike { .. })
                ),
                "{first:?} / {second:?}"
            );
        }
        assert!(checked(&["読む", "書く", "read"]).is_ok());
    }
}
