//! Paths judged by what they name: one normalization for every condition that judges a path.

use serde::{Deserialize, Serialize};

use super::Undetermined;
use super::glob::{ComponentPattern, GlobToken, path_glob_match, tokenize_glob};

/// How the policy reads paths; one setting for every `path_within` and `path_glob`.
///
/// # Examples
///
/// ```
/// use toolgate::rules::PathOptions;
///
/// let options: PathOptions =
///     serde_json::from_str(r#"{"working_directory": "/work", "case_insensitive": true}"#)?;
/// assert_eq!(options.working_directory.as_deref(), Some("/work"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PathOptions {
    /// The one directory relative paths are taken against (absolute). Without it, a relative path
    /// is undetermined: never allowed, and `ask` / `deny` rules on it apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    /// Compare paths as a case-insensitive file system does (macOS, Windows): ASCII letters match
    /// either case, and a path holding any other letter is undetermined (Unicode case folding and
    /// normalization differ between file systems, so no lexical answer would be sound).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_insensitive: bool,
}

impl PathOptions {
    /// Relative paths taken against `directory`.
    #[must_use]
    pub fn working_directory(mut self, directory: impl Into<String>) -> Self {
        self.working_directory = Some(directory.into());
        self
    }

    /// Paths compared as on a case-insensitive file system.
    #[must_use]
    pub fn case_insensitive(mut self, case_insensitive: bool) -> Self {
        self.case_insensitive = case_insensitive;
        self
    }

    pub(crate) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// [`PathOptions`] checked at load: the working directory split into components.
#[derive(Debug, Default)]
pub(crate) struct PathSettings {
    working_directory: Option<Vec<String>>,
    fold_ascii: bool,
}

impl PathSettings {
    /// Checks the options; the error says what is wrong.
    pub(crate) fn new(options: &PathOptions) -> Result<Self, String> {
        let working_directory = match &options.working_directory {
            None => None,
            Some(directory) => {
                if !directory.starts_with('/') || is_undetermined(directory, false) {
                    return Err(format!(
                        "working_directory {directory:?} is not a plain absolute path"
                    ));
                }
                Some(owned(&normalize(directory, &[], options.case_insensitive)))
            }
        };
        Ok(Self {
            working_directory,
            fold_ascii: options.case_insensitive,
        })
    }

    /// The components of `path`, normalized; `None` when it cannot be judged lexically.
    pub(crate) fn components<'a>(
        &'a self,
        path: &'a str,
    ) -> Option<Vec<std::borrow::Cow<'a, str>>> {
        if is_undetermined(path, self.fold_ascii) {
            return None;
        }
        let base: &[String] = if path.starts_with('/') {
            &[]
        } else {
            self.working_directory.as_deref()?
        };
        Some(normalize(path, base, self.fold_ascii))
    }

    /// Why `path` cannot be judged, for a path [`components`](Self::components) refused.
    pub(crate) fn undetermined(&self, path: &str) -> Undetermined {
        let control = path.chars().any(|c| c.is_control());
        if control {
            Undetermined::ControlCharacter
        } else if is_undetermined(path, self.fold_ascii) {
            Undetermined::PathSpelling
        } else {
            Undetermined::RelativePath
        }
    }

    /// Compiles a root of `path_within`; the error says what is wrong.
    pub(crate) fn root(&self, root: &str, allow_root: bool) -> Result<Vec<String>, String> {
        if !root.starts_with('/') || is_undetermined(root, false) {
            return Err(format!("root {root:?} is not a plain absolute path"));
        }
        let components = owned(&normalize(root, &[], self.fold_ascii));
        if components.is_empty() && !allow_root {
            return Err(format!(
                "root {root:?} is the whole file system; set \"allow_root\": true if that is meant"
            ));
        }
        Ok(components)
    }

    /// Whether `path` lies inside one of `roots`; `None` when it cannot be judged.
    #[cfg(test)]
    pub(crate) fn within(&self, path: &str, roots: &[Vec<String>]) -> Option<bool> {
        Some(within_components(&self.components(path)?, roots))
    }

    /// Compiles a `path_glob` pattern: absolute, or relative meaning "at any depth" (`**/` in
    /// front), with no `.`, `..` or empty component (a pattern is written in normal form).
    pub(crate) fn pattern(&self, pattern: &str) -> Result<Vec<ComponentPattern>, String> {
        if pattern.is_empty() || pattern.contains('\0') || pattern.contains('\\') {
            return Err(format!(
                "pattern {pattern:?} is empty or holds NUL or a backslash"
            ));
        }
        let mut compiled = Vec::new();
        let body = match pattern.strip_prefix('/') {
            Some(body) => body,
            None => {
                compiled.push(ComponentPattern::AnyComponents);
                pattern
            }
        };
        for component in body.split('/') {
            match component {
                "" | "." | ".." if !(component.is_empty() && body.is_empty()) => {
                    return Err(format!(
                        "pattern {pattern:?} is not in normal form (empty, `.` or `..` component)"
                    ));
                }
                "" => {}
                "**" => compiled.push(ComponentPattern::AnyComponents),
                glob => {
                    let mut tokens = tokenize_glob(glob);
                    if self.fold_ascii {
                        for token in &mut tokens {
                            if let GlobToken::Literal(c) = token {
                                *c = c.to_ascii_lowercase();
                            }
                        }
                    }
                    compiled.push(ComponentPattern::Glob(tokens));
                }
            }
        }
        Ok(compiled)
    }

    /// Whether the normalized `components` of a path match the compiled pattern.
    pub(crate) fn matches_components(
        &self,
        components: &[std::borrow::Cow<'_, str>],
        pattern: &[ComponentPattern],
    ) -> bool {
        path_glob_match(pattern, components, self.fold_ascii)
    }
}

/// Whether the normalized `components` of a path lie inside one of `roots`.
pub(crate) fn within_components(
    components: &[std::borrow::Cow<'_, str>],
    roots: &[Vec<String>],
) -> bool {
    roots.iter().any(|root| {
        components.len() >= root.len() && components.iter().zip(root).all(|(a, b)| a == b)
    })
}

fn owned(components: &[std::borrow::Cow<'_, str>]) -> Vec<String> {
    components.iter().map(|c| c.to_string()).collect()
}

/// What a lexical check cannot judge: an empty path; NUL or other control characters; a
/// backslash, a drive (`C:`) or any `:` in the first component (Windows and URL spellings); `~`
/// at the start, `$` or `%` anywhere (a shell, a Windows API or a URL decoder might expand them
/// into another path). With `fold_ascii` (the mode for case-insensitive file systems, Windows
/// among them), also any non-ASCII character, a component ending in `.` or a space (Windows drops
/// them), a `~` in a component (an 8.3 short name such as `SECRE~1`) and a leading `//` (a UNC
/// path to another machine).
fn is_undetermined(path: &str, fold_ascii: bool) -> bool {
    if path.is_empty() || path.starts_with('~') {
        return true;
    }
    // Fast path: a byte table (chars cost ~700 instr. a path). Exact: every byte named here is
    // ASCII, which never occurs inside a
    // multi-byte UTF-8 sequence, and the control characters are U+0000–U+001F, U+007F and
    // U+0080–U+009F (encoded `C2 80` to `C2 9F`).
    const UNJUDGEABLE: [bool; 256] = {
        let mut table = [false; 256];
        let mut byte = 0;
        while byte < 0x20 {
            table[byte] = true;
            byte += 1;
        }
        table[0x7f] = true;
        table[b'\\' as usize] = true;
        table[b'$' as usize] = true;
        table[b'%' as usize] = true;
        table
    };
    let bytes = path.as_bytes();
    if bytes.iter().any(|&byte| UNJUDGEABLE[usize::from(byte)]) {
        return true;
    }
    if !path.is_ascii()
        && bytes
            .windows(2)
            .any(|pair| pair[0] == 0xc2 && (0x80..=0x9f).contains(&pair[1]))
    {
        return true;
    }
    // The first component: what follows the leading `/`s, up to the next `/`.
    let trimmed = path.trim_start_matches('/').as_bytes();
    let first = trimmed
        .split(|&byte| byte == b'/')
        .next()
        .unwrap_or_default();
    if first.contains(&b':') {
        return true;
    }
    fold_ascii && windows_spelling(path)
}

/// Spellings a Windows file system reads as another name (see [`is_undetermined`]).
fn windows_spelling(path: &str) -> bool {
    !path.is_ascii()
        || path.starts_with("//")
        || path.split('/').any(|component| {
            !matches!(component, "" | "." | "..")
                && (component.ends_with('.') || component.ends_with(' ') || component.contains('~'))
        })
}

/// Lexical normalization: `path` (relative ones taken against `base`) as components with `.`,
/// empty components and `..` resolved; `..` at the top stays at the top, as the OS does for `/..`.
/// With `fold_ascii`, components are lower-cased (ASCII only).
fn normalize<'a>(
    path: &'a str,
    base: &'a [String],
    fold_ascii: bool,
) -> Vec<std::borrow::Cow<'a, str>> {
    use std::borrow::Cow;
    // Room for a typical path without growing the vector step by step.
    let mut components: Vec<Cow<'a, str>> = Vec::with_capacity(base.len() + 8);
    components.extend(base.iter().map(|c| Cow::Borrowed(c.as_str())));
    // Split at `/` bytes (an ASCII byte is always a character boundary), without the generic
    // pattern searcher.
    let bytes = path.as_bytes();
    let mut start = 0;
    while start <= bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&byte| byte == b'/')
            .map_or(bytes.len(), |offset| start + offset);
        let component = &path[start..end];
        start = end + 1;
        match component {
            "" | "." => {}
            ".." => {
                components.pop();
            }
            name if fold_ascii && name.bytes().any(|b| b.is_ascii_uppercase()) => {
                components.push(Cow::Owned(name.to_ascii_lowercase()));
            }
            name => components.push(Cow::Borrowed(name)),
        }
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(working_directory: Option<&str>, case_insensitive: bool) -> PathSettings {
        let mut options = PathOptions::default().case_insensitive(case_insensitive);
        options.working_directory = working_directory.map(str::to_owned);
        PathSettings::new(&options).expect("valid options")
    }

    #[test]
    fn relative_paths_resolve_against_the_one_working_directory() {
        let work = settings(Some("/work"), false);
        let roots = [work.root("/work", false).unwrap()];
        assert_eq!(work.within("a.txt", &roots), Some(true));
        assert_eq!(work.within("./src/../a.txt", &roots), Some(true));
        assert_eq!(work.within("../etc/passwd", &roots), Some(false));
        // Not against each root: with /tmp as a second root, `x` is still /work/x.
        let tmp = [work.root("/tmp", false).unwrap()];
        assert_eq!(work.within("x", &tmp), Some(false));
        // No working directory: a relative path cannot be judged.
        let none = settings(None, false);
        assert_eq!(none.within("a.txt", &roots), None);
        assert_eq!(none.within("/work/a.txt", &roots), Some(true));
    }

    /// The character-by-character definitions the byte loops replaced, kept as the reference.
    fn reference_undetermined(path: &str, fold_ascii: bool) -> bool {
        let lexically = path.is_empty()
            || path.starts_with('~')
            || path
                .chars()
                .any(|c| c.is_control() || matches!(c, '\\' | '$' | '%'))
            || path
                .trim_start_matches('/')
                .split('/')
                .next()
                .is_some_and(|first| first.contains(':'));
        lexically || (fold_ascii && windows_spelling(path))
    }

    fn reference_split(path: &str) -> Vec<&str> {
        path.split('/')
            .filter(|c| !matches!(*c, "" | "."))
            .collect()
    }

    #[test]
    fn byte_level_checks_agree_with_the_character_definitions() {
        let pieces = [
            "", "/", "//", "a", "é", ":", "c:", ".", "..", "~", "$", "%", "\\", "\u{0}", "\u{1f}",
            "\u{7f}", "\u{80}", "\u{85}", "\u{9f}", "\u{a0}", "\u{c2}", "\u{100}", "\u{2028}",
            "😀", "A", " ",
        ];
        let mut paths = Vec::new();
        for a in pieces {
            for b in pieces {
                for c in ["", "/", "x"] {
                    paths.push(format!("{a}{c}{b}"));
                    paths.push(format!("/{a}/{b}{c}"));
                }
            }
        }
        for path in &paths {
            for fold in [false, true] {
                assert_eq!(
                    is_undetermined(path, fold),
                    reference_undetermined(path, fold),
                    "{path:?}"
                );
            }
            let normalized: Vec<String> = normalize(path, &[], false)
                .iter()
                .map(|c| c.to_string())
                .collect();
            let mut expected: Vec<&str> = Vec::new();
            for component in reference_split(path) {
                if component == ".." {
                    expected.pop();
                } else {
                    expected.push(component);
                }
            }
            assert_eq!(normalized, expected, "{path:?}");
        }
    }

    #[test]
    fn the_file_system_root_needs_an_explicit_opt_in() {
        let s = settings(None, false);
        for root in ["/", "//", "/..", "/.", "/a/.."] {
            assert!(s.root(root, false).is_err(), "{root}");
            assert_eq!(s.root(root, true).unwrap(), Vec::<String>::new());
        }
        for bad in ["work", "", "C:\\work", "/work\0", "~/work", "/$HOME"] {
            assert!(s.root(bad, true).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn patterns_must_be_in_normal_form() {
        let s = settings(None, false);
        for bad in ["", "/work//x", "/work/./x", "/work/../x", "a\\b", "/work/"] {
            assert!(s.pattern(bad).is_err(), "{bad:?}");
        }
        assert!(s.pattern("/").is_ok());
        assert!(s.pattern("*.pem").is_ok());
    }
}
