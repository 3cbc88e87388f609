//! Conditions on argument values: what they mean, checked once at load, evaluated per call.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

/// A condition on a call's arguments. Every leaf addresses one argument by JSON Pointer
/// (RFC 6901, e.g. `/path` or `/options/cwd`), so a value in one field never satisfies a rule on
/// another.
///
/// Evaluation is three-valued. A leaf is *undetermined* when the value is of the wrong type or
/// cannot be judged lexically (a path with a NUL byte, a command with shell syntax). An `allow`
/// rule applies only when its condition holds; `ask` and `deny` rules also apply when it is
/// undetermined — so what cannot be judged is never allowed. A pointer to an absent field makes the
/// leaf false.
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
    /// is lexical and component-wise: `.` and `..` are resolved, repeated `/` folded, a relative
    /// path is taken against each root, `/work-evil` is not inside `/work`. A NUL byte makes it
    /// undetermined. `~`, `$VARS` and `%xx` are ordinary characters, never expanded or decoded.
    /// Symlinks are invisible to a lexical check: the handler must confine itself.
    PathWithin {
        /// Where the path is in the arguments.
        pointer: String,
        /// Absolute directories the path may be in.
        roots: Vec<String>,
    },
    /// The array of strings at `pointer` (an argv) starts with `prefix`, token by token, each
    /// token compared whole.
    ArgvPrefix {
        /// Where the argv is in the arguments.
        pointer: String,
        /// The leading tokens, e.g. `["git", "status"]`.
        prefix: Vec<String>,
    },
    /// The string at `pointer` is a command whose whitespace-separated words start with `prefix`.
    /// A command holding anything but letters, digits, whitespace and `- _ . / , : = @ + %` — so
    /// any shell syntax: `;`, `&&`, `||`, `|`, `$(`, backticks, quotes, redirections, newlines —
    /// is undetermined, so it never matches an allow rule.
    CommandPrefix {
        /// Where the command string is in the arguments.
        pointer: String,
        /// The leading words, e.g. `["git", "status"]`.
        prefix: Vec<String>,
    },
    /// The value at `pointer` equals `value` (numbers compare by value: `1` equals `1.0`).
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
    /// (including `/`), `?` exactly one, and `\` escapes the next character.
    Glob {
        /// Where the string is in the arguments.
        pointer: String,
        /// The pattern (not empty).
        pattern: String,
    },
    /// The number at `pointer` lies within `min ..= max` (either bound may be left out, not both).
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
}

/// Three-valued truth: what cannot be judged is `Unknown`, and restrictive rules treat it as a
/// match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Truth {
    Yes,
    No,
    Unknown,
}

/// A condition checked and pre-processed at load: roots split into components, globs tokenized.
#[derive(Debug)]
pub(crate) enum Compiled {
    All(Vec<Compiled>),
    Any(Vec<Compiled>),
    Not(Box<Compiled>),
    PathWithin {
        pointer: Pointer,
        roots: Vec<Vec<String>>,
    },
    ArgvPrefix {
        pointer: Pointer,
        prefix: Vec<String>,
    },
    CommandPrefix {
        pointer: Pointer,
        prefix: Vec<String>,
    },
    OneOf {
        pointer: Pointer,
        values: Vec<Value>,
    },
    Glob {
        pointer: Pointer,
        pattern: Vec<GlobToken>,
    },
    Range {
        pointer: Pointer,
        min: Option<Number>,
        max: Option<Number>,
    },
}

/// One problem found while compiling a condition: where (a path inside the condition) and what.
pub(crate) type ConditionProblem = (String, String);

/// Compiles `condition`, reporting every problem with its place. `pointer_exists` says whether a
/// pointer names a field of the tool's schema.
pub(crate) fn compile(
    condition: &Condition,
    place: &str,
    pointer_exists: &dyn Fn(&str) -> bool,
    problems: &mut Vec<ConditionProblem>,
) -> Option<Compiled> {
    let before = problems.len();
    let check_pointer = |pointer: &str, leaf: &str, problems: &mut Vec<ConditionProblem>| {
        let here = format!("{place}.{leaf}");
        if let Err(message) = check_pointer_syntax(pointer) {
            problems.push((here, message));
        } else if !pointer_exists(pointer) {
            problems.push((
                here,
                format!("pointer {pointer:?} names no field of the tool's input schema"),
            ));
        }
    };
    let compiled = match condition {
        Condition::All(items) | Condition::Any(items) => {
            let kind = if matches!(condition, Condition::All(_)) {
                "all"
            } else {
                "any"
            };
            if items.is_empty() {
                problems.push((format!("{place}.{kind}"), "lists no condition".to_owned()));
            }
            let compiled: Vec<Compiled> = items
                .iter()
                .enumerate()
                .filter_map(|(index, item)| {
                    compile(
                        item,
                        &format!("{place}.{kind}[{index}]"),
                        pointer_exists,
                        problems,
                    )
                })
                .collect();
            if kind == "all" {
                Compiled::All(compiled)
            } else {
                Compiled::Any(compiled)
            }
        }
        Condition::Not(inner) => Compiled::Not(Box::new(compile(
            inner,
            &format!("{place}.not"),
            pointer_exists,
            problems,
        )?)),
        Condition::PathWithin { pointer, roots } => {
            check_pointer(pointer, "path_within", problems);
            if roots.is_empty() {
                problems.push((format!("{place}.path_within"), "lists no root".to_owned()));
            }
            let mut normalized = Vec::new();
            for root in roots {
                if !root.starts_with('/') || root.contains('\0') {
                    problems.push((
                        format!("{place}.path_within"),
                        format!("root {root:?} is not an absolute path"),
                    ));
                } else if let Some(components) = normalize_path(root, &[]) {
                    normalized.push(components.into_iter().map(str::to_owned).collect());
                }
            }
            Compiled::PathWithin {
                pointer: Pointer::parse(pointer),
                roots: normalized,
            }
        }
        Condition::ArgvPrefix { pointer, prefix }
        | Condition::CommandPrefix { pointer, prefix } => {
            let (leaf, command) = match condition {
                Condition::CommandPrefix { .. } => ("command_prefix", true),
                _ => ("argv_prefix", false),
            };
            check_pointer(pointer, leaf, problems);
            if prefix.is_empty() {
                problems.push((format!("{place}.{leaf}"), "prefix is empty".to_owned()));
            }
            for token in prefix {
                if token.is_empty() {
                    problems.push((
                        format!("{place}.{leaf}"),
                        "prefix holds an empty token".to_owned(),
                    ));
                } else if command
                    && (!is_plain_command(token) || token.contains(char::is_whitespace))
                {
                    problems.push((
                        format!("{place}.{leaf}"),
                        format!("prefix token {token:?} holds whitespace or shell syntax"),
                    ));
                }
            }
            if command {
                Compiled::CommandPrefix {
                    pointer: Pointer::parse(pointer),
                    prefix: prefix.clone(),
                }
            } else {
                Compiled::ArgvPrefix {
                    pointer: Pointer::parse(pointer),
                    prefix: prefix.clone(),
                }
            }
        }
        Condition::Equals { pointer, value } => {
            check_pointer(pointer, "equals", problems);
            Compiled::OneOf {
                pointer: Pointer::parse(pointer),
                values: vec![value.clone()],
            }
        }
        Condition::OneOf { pointer, values } => {
            check_pointer(pointer, "one_of", problems);
            if values.is_empty() {
                problems.push((format!("{place}.one_of"), "lists no value".to_owned()));
            }
            Compiled::OneOf {
                pointer: Pointer::parse(pointer),
                values: values.clone(),
            }
        }
        Condition::Glob { pointer, pattern } => {
            check_pointer(pointer, "glob", problems);
            if pattern.is_empty() {
                problems.push((format!("{place}.glob"), "pattern is empty".to_owned()));
            }
            Compiled::Glob {
                pointer: Pointer::parse(pointer),
                pattern: tokenize_glob(pattern),
            }
        }
        Condition::Range { pointer, min, max } => {
            check_pointer(pointer, "range", problems);
            match (min, max) {
                (None, None) => {
                    problems.push((
                        format!("{place}.range"),
                        "sets neither min nor max".to_owned(),
                    ));
                }
                (Some(low), Some(high))
                    if compare_numbers(low, high) == Some(Ordering::Greater) =>
                {
                    problems.push((
                        format!("{place}.range"),
                        "min is greater than max".to_owned(),
                    ));
                }
                _ => {}
            }
            Compiled::Range {
                pointer: Pointer::parse(pointer),
                min: min.clone(),
                max: max.clone(),
            }
        }
    };
    (problems.len() == before).then_some(compiled)
}

impl Compiled {
    pub(crate) fn evaluate(&self, arguments: &Value) -> Truth {
        match self {
            Self::All(items) => {
                let mut truth = Truth::Yes;
                for item in items {
                    match item.evaluate(arguments) {
                        Truth::No => return Truth::No,
                        Truth::Unknown => truth = Truth::Unknown,
                        Truth::Yes => {}
                    }
                }
                truth
            }
            Self::Any(items) => {
                let mut truth = Truth::No;
                for item in items {
                    match item.evaluate(arguments) {
                        Truth::Yes => return Truth::Yes,
                        Truth::Unknown => truth = Truth::Unknown,
                        Truth::No => {}
                    }
                }
                truth
            }
            Self::Not(inner) => match inner.evaluate(arguments) {
                Truth::Yes => Truth::No,
                Truth::No => Truth::Yes,
                Truth::Unknown => Truth::Unknown,
            },
            Self::PathWithin { pointer, roots } => leaf(arguments, pointer, |value| {
                let path = value.as_str()?;
                if path_is_undetermined(path) {
                    return None;
                }
                Some(roots.iter().any(|root| {
                    normalize_path(path, root).is_some_and(|components| {
                        components.len() >= root.len()
                            && components.iter().zip(root).all(|(a, b)| *a == b)
                    })
                }))
            }),
            Self::ArgvPrefix { pointer, prefix } => leaf(arguments, pointer, |value| {
                let argv = value.as_array()?;
                let mut tokens = Vec::with_capacity(argv.len());
                for token in argv {
                    tokens.push(token.as_str()?);
                }
                Some(tokens.len() >= prefix.len() && tokens.iter().zip(prefix).all(|(a, b)| a == b))
            }),
            Self::CommandPrefix { pointer, prefix } => leaf(arguments, pointer, |value| {
                let command = value.as_str()?;
                if !is_plain_command(command) {
                    return None;
                }
                let mut words = command.split_whitespace();
                Some(
                    prefix
                        .iter()
                        .all(|expected| words.next() == Some(expected.as_str())),
                )
            }),
            Self::OneOf { pointer, values } => leaf(arguments, pointer, |value| {
                Some(values.iter().any(|expected| json_equal(value, expected)))
            }),
            Self::Glob { pointer, pattern } => leaf(arguments, pointer, |value| {
                Some(glob_match(pattern, value.as_str()?))
            }),
            Self::Range { pointer, min, max } => leaf(arguments, pointer, |value| {
                let Value::Number(number) = value else {
                    return None;
                };
                let above = match min {
                    Some(min) => compare_numbers(number, min)? != Ordering::Less,
                    None => true,
                };
                let below = match max {
                    Some(max) => compare_numbers(number, max)? != Ordering::Greater,
                    None => true,
                };
                Some(above && below)
            }),
        }
    }
}

/// An absent field is `No`; a present one is judged by `judge`, whose `None` means undetermined.
fn leaf(arguments: &Value, pointer: &Pointer, judge: impl FnOnce(&Value) -> Option<bool>) -> Truth {
    match pointer.resolve(arguments) {
        None => Truth::No,
        Some(value) => match judge(value) {
            Some(true) => Truth::Yes,
            Some(false) => Truth::No,
            None => Truth::Unknown,
        },
    }
}

/// A JSON Pointer split and unescaped once, at load, so resolving it per call allocates nothing
/// (`serde_json::Value::pointer` unescapes every token on every call).
#[derive(Debug)]
pub(crate) struct Pointer {
    tokens: Vec<(String, Option<usize>)>,
}

impl Pointer {
    /// Splits a pointer whose syntax was already checked.
    fn parse(pointer: &str) -> Self {
        let tokens = pointer
            .split('/')
            .skip(1)
            .map(|token| {
                let key = token.replace("~1", "/").replace("~0", "~");
                // RFC 6901: an array index is `0` or digits without a leading zero.
                let index = (key == "0" || !key.starts_with('0'))
                    .then(|| key.parse().ok())
                    .flatten();
                (key, index)
            })
            .collect();
        Self { tokens }
    }

    fn resolve<'a>(&self, mut value: &'a Value) -> Option<&'a Value> {
        for (key, index) in &self.tokens {
            value = match value {
                Value::Object(map) => map.get(key)?,
                Value::Array(items) => items.get((*index)?)?,
                _ => return None,
            };
        }
        Some(value)
    }
}

fn path_is_undetermined(path: &str) -> bool {
    path.is_empty() || path.contains('\0')
}

/// Lexical normalization: `path` (relative ones taken against `base`) as components with `.`,
/// empty components and `..` resolved. `..` at the top stays at the top, as the OS does for `/..`.
/// `None` for an empty path or one holding NUL.
pub(crate) fn normalize_path<'a>(path: &'a str, base: &'a [String]) -> Option<Vec<&'a str>> {
    if path_is_undetermined(path) {
        return None;
    }
    let mut components: Vec<&str> = if path.starts_with('/') {
        Vec::new()
    } else {
        base.iter().map(String::as_str).collect()
    };
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                components.pop();
            }
            name => components.push(name),
        }
    }
    Some(components)
}

/// Letters, digits, whitespace and `- _ . / , : = @ + %`: a command made only of these has no
/// shell syntax, so splitting it on whitespace gives the words a shell would.
fn is_plain_command(command: &str) -> bool {
    command
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '\t' || "-_./,:=@+%".contains(c))
}

fn check_pointer_syntax(pointer: &str) -> Result<(), String> {
    if !pointer.starts_with('/') {
        return Err(format!(
            "pointer {pointer:?} must start with '/' and name a field (\"\" would be the whole arguments)"
        ));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "pointer {pointer:?} has a '~' not followed by 0 or 1"
            ));
        }
    }
    Ok(())
}

/// Equality where numbers compare by value (`1` == `1.0`), recursively.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(key, x)| ys.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => a == b,
    }
}

/// Integers compare exactly (beyond 2^53 too); anything involving a float compares as f64.
fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    fn exact(number: &Number) -> Option<i128> {
        number
            .as_i64()
            .map(i128::from)
            .or_else(|| number.as_u64().map(i128::from))
    }
    match (exact(a), exact(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GlobToken {
    Literal(char),
    AnyOne,
    AnyRun,
}

fn tokenize_glob(pattern: &str) -> Vec<GlobToken> {
    let mut tokens = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            '*' => GlobToken::AnyRun,
            '?' => GlobToken::AnyOne,
            '\\' => GlobToken::Literal(chars.next().unwrap_or('\\')),
            other => GlobToken::Literal(other),
        });
    }
    tokens
}

/// Wildcard match with one backtracking point: O(pattern × text) at worst, never exponential,
/// and no allocation (positions in `text` are byte offsets on character boundaries).
fn glob_match(pattern: &[GlobToken], text: &str) -> bool {
    let next_width = |at: usize| text[at..].chars().next().map_or(1, char::len_utf8);
    let (mut p, mut t) = (0, 0);
    let mut resume: Option<(usize, usize)> = None;
    while let Some(c) = text[t..].chars().next() {
        match pattern.get(p) {
            Some(GlobToken::AnyRun) => {
                resume = Some((p, t));
                p += 1;
            }
            Some(GlobToken::AnyOne) => {
                p += 1;
                t += c.len_utf8();
            }
            Some(GlobToken::Literal(literal)) if *literal == c => {
                p += 1;
                t += c.len_utf8();
            }
            _ => match resume {
                Some((star, start)) => {
                    let retry = start + next_width(start);
                    p = star + 1;
                    t = retry;
                    resume = Some((star, retry));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|token| *token == GlobToken::AnyRun)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compiled(condition: Condition) -> Compiled {
        let mut problems = Vec::new();
        let compiled = compile(&condition, "when", &|_| true, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        compiled.unwrap()
    }

    fn path_within(path: &str, roots: &[&str]) -> Truth {
        compiled(Condition::path_within("/path", roots.iter().copied()))
            .evaluate(&json!({"path": path}))
    }

    #[test]
    fn paths_inside_the_root() {
        for path in [
            "/work",
            "/work/",
            "/work/a.txt",
            "/work//a.txt",
            "/work/./a/../b.txt",
            "a.txt",
            "./src/../a.txt",
            "~/notes",    // a directory literally named "~" inside the root
            "$HOME/x",    // never expanded
            "%2e%2e/etc", // never decoded
        ] {
            assert_eq!(path_within(path, &["/work"]), Truth::Yes, "{path}");
        }
    }

    #[test]
    fn paths_outside_the_root() {
        for path in [
            "/work-evil/a.txt",
            "/workspace",
            "/work/../etc/passwd",
            "/work/a/../../etc",
            "../etc/passwd",
            "..",
            "/",
            "/etc/passwd",
            "//etc/passwd",
        ] {
            assert_eq!(path_within(path, &["/work"]), Truth::No, "{path}");
        }
    }

    #[test]
    fn nul_and_empty_paths_are_undetermined() {
        assert_eq!(
            path_within("/work/a\0/../../etc", &["/work"]),
            Truth::Unknown
        );
        assert_eq!(path_within("", &["/work"]), Truth::Unknown);
        let condition = compiled(Condition::path_within("/path", ["/work"]));
        assert_eq!(condition.evaluate(&json!({"path": 7})), Truth::Unknown);
        assert_eq!(condition.evaluate(&json!({})), Truth::No);
    }

    #[test]
    fn argv_prefix_compares_whole_tokens() {
        let git_status = compiled(Condition::argv_prefix("/argv", ["git", "status"]));
        assert_eq!(
            git_status.evaluate(&json!({"argv": ["git", "status", "-s"]})),
            Truth::Yes
        );
        assert_eq!(
            git_status.evaluate(&json!({"argv": ["git", "statusx"]})),
            Truth::No
        );
        assert_eq!(
            git_status.evaluate(&json!({"argv": ["git status"]})),
            Truth::No
        );
        assert_eq!(git_status.evaluate(&json!({"argv": ["git"]})), Truth::No);
        assert_eq!(
            git_status.evaluate(&json!({"argv": ["git", "push"]})),
            Truth::No
        );
        assert_eq!(
            git_status.evaluate(&json!({"argv": ["git", 1]})),
            Truth::Unknown
        );
        assert_eq!(
            git_status.evaluate(&json!({"argv": "git status"})),
            Truth::Unknown
        );
    }

    #[test]
    fn command_prefix_refuses_shell_syntax() {
        let git_status = compiled(Condition::command_prefix("/command", ["git", "status"]));
        assert_eq!(
            git_status.evaluate(&json!({"command": "git  status --short"})),
            Truth::Yes
        );
        assert_eq!(
            git_status.evaluate(&json!({"command": "git push"})),
            Truth::No
        );
        assert_eq!(
            git_status.evaluate(&json!({"command": "git statusx"})),
            Truth::No
        );
        for hostile in [
            "git status; rm -rf /",
            "git status && git push",
            "git status || git push",
            "git status | sh",
            "git status $(git push)",
            "git status `git push`",
            "git status > /etc/passwd",
            "git status < /dev/zero",
            "git status\ngit push",
            "git status\rgit push",
            "git status 'quoted'",
            "git status & git push",
            "git status ${IFS}",
        ] {
            assert_eq!(
                git_status.evaluate(&json!({"command": hostile})),
                Truth::Unknown,
                "{hostile:?}"
            );
        }
    }

    #[test]
    fn equals_and_one_of_compare_numbers_by_value() {
        let one = compiled(Condition::equals("/n", json!(1)));
        assert_eq!(one.evaluate(&json!({"n": 1.0})), Truth::Yes);
        assert_eq!(one.evaluate(&json!({"n": "1"})), Truth::No);
        let modes = compiled(Condition::one_of("/mode", [json!("r"), json!("rw")]));
        assert_eq!(modes.evaluate(&json!({"mode": "rw"})), Truth::Yes);
        assert_eq!(modes.evaluate(&json!({"mode": "w"})), Truth::No);
    }

    #[test]
    fn glob_matches_runs_and_single_characters() {
        let glob = |pattern: &str, text: &str| glob_match(&tokenize_glob(pattern), text);
        assert!(glob("*.txt", "notes.txt"));
        assert!(glob("*.txt", "dir/notes.txt"));
        assert!(!glob("*.txt", "notes.txt.exe"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(glob("\\*", "*"));
        assert!(!glob("\\*", "x"));
        assert!(glob("é*", "été"));
        // The pathological case for naive backtracking stays fast.
        let text = "a".repeat(10_000);
        assert!(!glob("*a*a*a*a*a*a*a*b", &text));
    }

    #[test]
    fn range_is_inclusive_and_exact_for_big_integers() {
        let port = compiled(Condition::range(
            "/port",
            Some(1024.into()),
            Some(65535.into()),
        ));
        assert_eq!(port.evaluate(&json!({"port": 1024})), Truth::Yes);
        assert_eq!(port.evaluate(&json!({"port": 65535.0})), Truth::Yes);
        assert_eq!(port.evaluate(&json!({"port": 80})), Truth::No);
        assert_eq!(port.evaluate(&json!({"port": "8080"})), Truth::Unknown);
        let big = compiled(Condition::range(
            "/n",
            None,
            Some(Number::from(u64::MAX - 1)),
        ));
        assert_eq!(big.evaluate(&json!({"n": u64::MAX})), Truth::No);
        assert_eq!(big.evaluate(&json!({"n": u64::MAX - 1})), Truth::Yes);
    }

    #[test]
    fn a_value_in_one_field_never_satisfies_a_rule_on_another() {
        let condition = compiled(Condition::path_within("/path", ["/work"]));
        assert_eq!(
            condition.evaluate(&json!({"path": "/etc/passwd", "note": "/work/a"})),
            Truth::No
        );
        let nested = compiled(Condition::equals("/options/mode", json!("r")));
        assert_eq!(
            nested.evaluate(&json!({"mode": "r", "options": {}})),
            Truth::No
        );
        assert_eq!(
            nested.evaluate(&json!({"options": {"mode": "r"}})),
            Truth::Yes
        );
    }

    #[test]
    fn pointers_resolve_like_rfc_6901() {
        let value = json!({"a/b": {"m~n": [10, 20]}, "list": [1, 2], "01": "x"});
        for (pointer, expected) in [
            ("/a~1b/m~0n/1", Some(json!(20))),
            ("/list/0", Some(json!(1))),
            ("/list/01", None),
            ("/list/2", None),
            ("/list/-", None),
            ("/01", Some(json!("x"))),
            ("/missing", None),
            ("/list/0/deeper", None),
        ] {
            assert_eq!(
                Pointer::parse(pointer).resolve(&value).cloned(),
                expected,
                "{pointer}"
            );
            assert_eq!(
                value.pointer(pointer).cloned(),
                expected,
                "serde_json agrees on {pointer}"
            );
        }
    }

    #[test]
    fn all_and_any_are_three_valued() {
        let yes = Condition::equals("/a", json!(1));
        let no = Condition::equals("/a", json!(2));
        let unknown = Condition::path_within("/a", ["/w"]);
        let args = json!({"a": 1});
        let eval = |condition: Condition| compiled(condition).evaluate(&args);
        assert_eq!(
            eval(Condition::All(vec![yes.clone(), unknown.clone()])),
            Truth::Unknown
        );
        assert_eq!(
            eval(Condition::All(vec![no.clone(), unknown.clone()])),
            Truth::No
        );
        assert_eq!(
            eval(Condition::Any(vec![yes.clone(), unknown.clone()])),
            Truth::Yes
        );
        assert_eq!(
            eval(Condition::Any(vec![no.clone(), unknown.clone()])),
            Truth::Unknown
        );
        assert_eq!(eval(Condition::Not(Box::new(yes))), Truth::No);
        assert_eq!(eval(Condition::Not(Box::new(no))), Truth::Yes);
        assert_eq!(eval(Condition::Not(Box::new(unknown))), Truth::Unknown);
    }

    #[test]
    fn load_problems_are_reported_with_their_place() {
        let mut problems = Vec::new();
        let condition = Condition::All(vec![
            Condition::glob("/name", ""),
            Condition::path_within("path", ["relative/root"]),
            Condition::command_prefix("/cmd", ["git;", ""]),
            Condition::range("/n", None, None),
            Condition::Any(vec![]),
        ]);
        assert!(
            compile(
                &condition,
                "when",
                &|pointer| pointer != "/cmd",
                &mut problems
            )
            .is_none()
        );
        let places: Vec<&str> = problems.iter().map(|(place, _)| place.as_str()).collect();
        for expected in [
            "when.all[0].glob",
            "when.all[1].path_within",
            "when.all[2].command_prefix",
            "when.all[3].range",
            "when.all[4].any",
        ] {
            assert!(
                places.contains(&expected),
                "{expected} missing from {problems:?}"
            );
        }
    }
}
