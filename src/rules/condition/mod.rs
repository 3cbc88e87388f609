//! Conditions on argument values: what they mean, checked once at load, evaluated per call.

mod call_paths;
mod commands;
mod compile;
mod evaluate;
mod glob;
mod index;
mod path_trie;
mod paths;
mod pointer;
mod program_table;
mod text;
mod values;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

pub(crate) use call_paths::CallPaths;

pub(crate) use compile::{Compiled, SchemaLookup, Scope, compile, path_pointers};
pub(crate) use glob::{GlobToken, glob_match, tokenize_glob};
pub(crate) use index::Index;
pub use paths::PathOptions;
pub(crate) use paths::PathSettings;
pub(crate) use pointer::{Pointer, array_index, check_pointer_syntax, unescape as unescape_token};
pub use text::TextOptions;
pub(crate) use text::{check_available as check_normalization_available, compared_value};

/// A condition on a call's arguments. Every leaf addresses one argument by JSON Pointer
/// (RFC 6901, e.g. `/path` or `/options/cwd`), so a value in one field never satisfies a rule on
/// another.
///
/// Evaluation is three-valued. A leaf is *undetermined* when the value is of the wrong type or
/// cannot be judged lexically (a path with a NUL byte, a command with shell syntax, a number that
/// may have been rounded, options that may hide a subcommand). An `allow` rule applies only when
/// its condition holds; `ask` and `deny` rules also apply when it is undetermined — so what cannot
/// be judged is never allowed. A pointer to an absent field makes the leaf false.
///
/// Checked at load, so that no spelling of a call evades a rule:
/// - a pointer names a field the tool's schema declares, and never one index of a list the schema
///   declares with `items` (use [`Every`](Self::Every) or [`Some`](Self::Some));
/// - a field judged as a path anywhere in the tool's rules is judged only as a path
///   (`path_within`, `path_glob`): a raw `glob` or `equals` on it would be evaded by `//`, `/./`
///   or `..` spellings;
/// - where a rule must catch every spelling (in `deny` and `ask` rules, and under a `not` in
///   `allow` rules), a `glob`, `equals` or `one_of` comparing a string that holds `/` is refused
///   for the same reason (a `glob` may opt out with `"raw": true`);
/// - numbers in `range`, `equals` and `one_of` can be compared exactly; argv tokens hold no
///   whitespace; command options are spelled `--name` or `-x`.
///
/// In JSON each variant is an object with one key, e.g.
/// `{"path_within": {"pointer": "/path", "roots": ["/workspace"]}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Condition {
    /// Every condition holds (at least one must be listed).
    All(Vec<Condition>),
    /// At least one condition holds (at least one must be listed).
    Any(Vec<Condition>),
    /// The condition does not hold. An undetermined condition stays undetermined, so `not` can
    /// never turn what cannot be judged into an allow.
    Not(Box<Condition>),
    /// The string at `pointer`, as a path, lies inside one of `roots` (absolute paths). The check
    /// is lexical and component-wise: `.` and `..` are resolved, repeated `/` folded, `/work-evil`
    /// is not inside `/work`. A relative path is taken against the policy's one
    /// [`working_directory`](PathOptions::working_directory), and is undetermined without one.
    /// Undetermined too: NUL and control characters, backslashes, drive letters and `scheme:`
    /// prefixes (Windows and URL spellings), a leading `~`, and `$` or `%` anywhere (what a shell
    /// or a decoder might expand). Symlinks are invisible to a lexical check: the handler must
    /// confine itself. A root of `/` (the whole file system) is refused unless `allow_root`.
    PathWithin {
        /// Where the path is in the arguments.
        pointer: String,
        /// Absolute directories the path may be in.
        roots: Vec<String>,
        /// Accept `/` as a root, allowing every path.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        allow_root: bool,
    },
    /// The string at `pointer`, as a path normalized exactly as for `path_within`, matches
    /// `pattern` component by component: `*` and `?` stay within one component, `**` as a whole
    /// component matches any number of components (`/work/secrets/**` is the directory and
    /// everything in it). A pattern without a leading `/` matches at any depth (`*.pem` is
    /// `/**/*.pem`). Patterns are written in normal form (no `.`, `..` or empty component).
    PathGlob {
        /// Where the path is in the arguments.
        pointer: String,
        /// The pattern.
        pattern: String,
    },
    /// The array of strings at `pointer` (an argv) starts with `prefix`: the program, then
    /// subcommand words. Options before a subcommand word, or another spelling of the program
    /// (`/usr/bin/git`), make it undetermined (see [the guide](crate::guide::rules)), so a deny on
    /// `["git", "push"]` also holds for `git -C . push`. Tokens hold no whitespace.
    ArgvPrefix {
        /// Where the argv is in the arguments.
        pointer: String,
        /// The leading tokens, e.g. `["git", "status"]`.
        prefix: Vec<String>,
    },
    /// The string at `pointer` is a command whose whitespace-separated words start with `prefix`,
    /// as for `argv_prefix`. A command holding anything but letters, digits, whitespace and
    /// `- _ . / , : = @ + %` — so any shell syntax: `;`, `&&`, `||`, `|`, `$(`, backticks, quotes,
    /// redirections, newlines — is undetermined, so it never matches an allow rule.
    CommandPrefix {
        /// Where the command string is in the arguments.
        pointer: String,
        /// The leading words, e.g. `["git", "status"]`.
        prefix: Vec<String>,
    },
    /// The command at `pointer` (an argv array or a plain command string) holds one of `options`
    /// anywhere: `--output` also matches `--output=x` and abbreviations such as `--out=x`; `-o`
    /// also matches `-ofile` and clusters such as `-ro`. For options that turn a reader into a
    /// writer (`git log --output=…`, `sort -o …`).
    CommandOption {
        /// Where the command is in the arguments.
        pointer: String,
        /// Options spelled `--name` or `-x` (at least one).
        options: Vec<String>,
    },
    /// The value at `pointer` equals `value` (numbers compare by exact value: `1` equals `1.0`).
    Equals {
        /// Where the value is in the arguments.
        pointer: String,
        /// The value it must equal.
        value: Value,
    },
    /// The value at `pointer` equals one of `values`.
    OneOf {
        /// Where the value is in the arguments.
        pointer: String,
        /// The values it may equal (at least one).
        values: Vec<Value>,
    },
    /// The string at `pointer` matches `pattern`, where `*` matches any run of characters
    /// (including `/`), `?` exactly one, and `\` escapes the next character. The raw string is
    /// matched: for paths use `path_glob`.
    Glob {
        /// Where the string is in the arguments.
        pointer: String,
        /// The pattern (not empty).
        pattern: String,
        /// Match a pattern holding `/` against the raw string even where the rule must catch every
        /// spelling (the author accepts that `//` or `/./` spellings differ).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        raw: bool,
    },
    /// The number at `pointer` lies within `min ..= max` (either bound may be left out, not both).
    /// Integers compare exactly; a number that may have been rounded when parsed (beyond 64 bits,
    /// or a float of 2^53 or more) is undetermined.
    Range {
        /// Where the number is in the arguments.
        pointer: String,
        /// The smallest allowed value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<Number>,
        /// The largest allowed value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<Number>,
    },
    /// The array at `pointer` is such that `condition` holds for every element (true for an empty
    /// array). Inside, pointers are relative to the element: `""` is the element itself.
    Every {
        /// Where the array is in the arguments.
        pointer: String,
        /// The condition on each element.
        condition: Box<Condition>,
    },
    /// The array at `pointer` has an element for which `condition` holds. Inside, pointers are
    /// relative to the element: `""` is the element itself.
    Some {
        /// Where the array is in the arguments.
        pointer: String,
        /// The condition on an element.
        condition: Box<Condition>,
    },
}

impl Condition {
    /// [`Condition::PathWithin`].
    pub fn path_within<S: Into<String>>(
        pointer: impl Into<String>,
        roots: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::PathWithin {
            pointer: pointer.into(),
            roots: roots.into_iter().map(Into::into).collect(),
            allow_root: false,
        }
    }

    /// [`Condition::PathGlob`].
    pub fn path_glob(pointer: impl Into<String>, pattern: impl Into<String>) -> Self {
        Self::PathGlob {
            pointer: pointer.into(),
            pattern: pattern.into(),
        }
    }

    /// [`Condition::ArgvPrefix`].
    pub fn argv_prefix<S: Into<String>>(
        pointer: impl Into<String>,
        prefix: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::ArgvPrefix {
            pointer: pointer.into(),
            prefix: prefix.into_iter().map(Into::into).collect(),
        }
    }

    /// [`Condition::CommandPrefix`].
    pub fn command_prefix<S: Into<String>>(
        pointer: impl Into<String>,
        prefix: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::CommandPrefix {
            pointer: pointer.into(),
            prefix: prefix.into_iter().map(Into::into).collect(),
        }
    }

    /// [`Condition::CommandOption`].
    pub fn command_option<S: Into<String>>(
        pointer: impl Into<String>,
        options: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::CommandOption {
            pointer: pointer.into(),
            options: options.into_iter().map(Into::into).collect(),
        }
    }

    /// [`Condition::Equals`].
    pub fn equals(pointer: impl Into<String>, value: Value) -> Self {
        Self::Equals {
            pointer: pointer.into(),
            value,
        }
    }

    /// [`Condition::OneOf`].
    pub fn one_of(pointer: impl Into<String>, values: impl IntoIterator<Item = Value>) -> Self {
        Self::OneOf {
            pointer: pointer.into(),
            values: values.into_iter().collect(),
        }
    }

    /// [`Condition::Glob`].
    pub fn glob(pointer: impl Into<String>, pattern: impl Into<String>) -> Self {
        Self::Glob {
            pointer: pointer.into(),
            pattern: pattern.into(),
            raw: false,
        }
    }

    /// [`Condition::Range`].
    pub fn range(pointer: impl Into<String>, min: Option<Number>, max: Option<Number>) -> Self {
        Self::Range {
            pointer: pointer.into(),
            min,
            max,
        }
    }

    /// [`Condition::Every`].
    pub fn every(pointer: impl Into<String>, condition: Condition) -> Self {
        Self::Every {
            pointer: pointer.into(),
            condition: Box::new(condition),
        }
    }

    /// [`Condition::Some`].
    pub fn some(pointer: impl Into<String>, condition: Condition) -> Self {
        Self::Some {
            pointer: pointer.into(),
            condition: Box::new(condition),
        }
    }
}

/// Three-valued truth: what cannot be judged is `Unknown`, and restrictive rules treat it as a
/// match. `Unknown` carries the first leaf that could not be judged, so a denial can say what it
/// could not judge instead of repeating an unrelated rule's reason; it is a borrowed pointer and a
/// kind, so the allow path still allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Truth<'c> {
    Yes,
    No,
    Unknown(Cause<'c>),
}

impl Truth<'_> {
    fn not(self) -> Self {
        match self {
            Self::Yes => Self::No,
            Self::No => Self::Yes,
            unknown @ Self::Unknown(_) => unknown,
        }
    }
}

/// Where and why a condition could not be judged: the rule's pointer (written by the policy's
/// author, never an argument value) and the kind of value found there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cause<'c> {
    pub(crate) pointer: &'c str,
    pub(crate) kind: Undetermined,
}

impl std::fmt::Display for Cause<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot judge {}: {}", self.pointer, self.kind)
    }
}

/// Why a value could not be judged. The text never quotes the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Undetermined {
    /// Not the type the condition judges (a number where a path was expected, …).
    WrongType,
    /// A command string with shell syntax or a character a plain command never holds.
    ShellSyntax,
    /// A NUL byte or another control character.
    ControlCharacter,
    /// A number that may have been rounded when it was parsed.
    InexactNumber,
    /// A relative path, and the policy has no working directory.
    RelativePath,
    /// A path spelled with `~`, `$`, `%`, a backslash, a drive letter or a scheme.
    PathSpelling,
    /// Options before a subcommand, or another spelling of the program, may hide what runs.
    HiddenCommand,
}

impl std::fmt::Display for Undetermined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::WrongType => "it is not of the type the rule judges",
            Self::ShellSyntax => {
                "it contains shell syntax (or a character a plain command never holds)"
            }
            Self::ControlCharacter => "it contains a NUL byte or another control character",
            Self::InexactNumber => "it is a number that may have been rounded when it was read",
            Self::RelativePath => "it is a relative path and the policy has no working directory",
            Self::PathSpelling => {
                "its spelling cannot be judged as a path (a leading ~, $, %, a backslash, a drive \
                 letter, a scheme or a Windows alias)"
            }
            Self::HiddenCommand => {
                "options before a subcommand, or another spelling of the program, may hide what \
                 it runs"
            }
        })
    }
}
