//! Conditions checked and pre-processed at load (roots split, globs tokenized, pointers parsed),
//! and evaluated per call without allocating on the common paths.

use std::cmp::Ordering;
use std::collections::HashSet;

use serde_json::{Number, Value};

use super::Condition;
use super::commands::{check_option, is_plain_command};
use super::glob::{ComponentPattern, GlobToken, tokenize_glob};
use super::paths::PathSettings;
use super::pointer::{Pointer, check_pointer_syntax};
use super::text::{compared, compared_value};
use super::values::{compare_numbers, is_exact, numbers_are_exact};

/// What the tool's schema says about a pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchemaLookup {
    /// The schema declares the field.
    Declared,
    /// The schema declares no such field.
    Missing,
    /// The pointer picks one index of a list the schema declares with `items`.
    ListIndex,
}

/// What a condition is compiled against. Pointers inside `every` / `some` are looked up as
/// `base` + pointer, where `base` ends in `/-` for "any element".
pub(crate) struct Scope<'a> {
    /// Looks up an absolute pointer (`-` tokens mean "any element") in the tool's schema.
    pub(crate) lookup: &'a dyn Fn(&str) -> SchemaLookup,
    pub(crate) paths: &'a PathSettings,
    /// Absolute pointers (as [`path_pointers`] writes them) judged as paths by the tool's rules.
    pub(crate) path_fields: &'a HashSet<String>,
    /// Whether this position must catch every spelling: true in `ask` and `deny` rules, flipped
    /// by each `not`.
    pub(crate) restrictive: bool,
    pub(crate) base: String,
    /// Whether text conditions compare normalized strings ([`TextOptions`](super::TextOptions)).
    pub(crate) normalize_text: bool,
}

/// Collects the pointers `condition` judges as paths, as absolute pointers (`/-` for elements).
pub(crate) fn path_pointers(condition: &Condition, base: &str, found: &mut HashSet<String>) {
    match condition {
        Condition::All(items) | Condition::Any(items) => {
            for item in items {
                path_pointers(item, base, found);
            }
        }
        Condition::Not(inner) => path_pointers(inner, base, found),
        Condition::PathWithin { pointer, .. } | Condition::PathGlob { pointer, .. } => {
            found.insert(field_key(&format!("{base}{pointer}")));
        }
        Condition::Every { pointer, condition } | Condition::Some { pointer, condition } => {
            path_pointers(condition, &format!("{base}{pointer}/-"), found);
        }
        _ => {}
    }
}

/// The field an absolute pointer names, with every list position (an index or `-`) written `-`:
/// a tuple position and "every element" of the same list are the same field for the rule that it
/// is judged only as a path.
fn field_key(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|token| {
            if token == "-" || super::pointer::array_index(token).is_some() {
                "-"
            } else {
                token
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A condition checked and pre-processed at load.
#[derive(Debug)]
pub(crate) enum Compiled {
    All(Vec<Compiled>),
    Any(Vec<Compiled>),
    Not(Box<Compiled>),
    PathWithin {
        pointer: Pointer,
        roots: Vec<Vec<String>>,
    },
    PathGlob {
        pointer: Pointer,
        pattern: Vec<ComponentPattern>,
    },
    Prefix {
        pointer: Pointer,
        prefix: Vec<String>,
        command_string: bool,
    },
    CommandOption {
        pointer: Pointer,
        options: Vec<String>,
    },
    /// `values` are normalized already when `normalize` is set; `texts` are those that are
    /// strings, found in one step (a list of 56,000 made each call compare 56,000 values).
    OneOf {
        pointer: Pointer,
        values: Vec<Value>,
        texts: std::collections::HashSet<String>,
        normalize: bool,
    },
    /// `pattern` is normalized already when `normalize` is set.
    Glob {
        pointer: Pointer,
        pattern: Vec<GlobToken>,
        normalize: bool,
    },
    Range {
        pointer: Pointer,
        min: Option<Number>,
        max: Option<Number>,
    },
    Every {
        pointer: Pointer,
        condition: Box<Compiled>,
    },
    Some {
        pointer: Pointer,
        condition: Box<Compiled>,
    },
}

/// One problem found while compiling a condition: where (a path inside the condition) and what.
pub(crate) type ConditionProblem = (String, String);

/// Compiles `condition`, reporting every problem with its place.
pub(crate) fn compile(
    condition: &Condition,
    place: &str,
    scope: &Scope<'_>,
    problems: &mut Vec<ConditionProblem>,
) -> Option<Compiled> {
    let before = problems.len();
    let compiled = match condition {
        Condition::All(items) | Condition::Any(items) => {
            let all = matches!(condition, Condition::All(_));
            let kind = if all { "all" } else { "any" };
            if items.is_empty() {
                problems.push((format!("{place}.{kind}"), "lists no condition".to_owned()));
            }
            let compiled: Vec<Compiled> = items
                .iter()
                .enumerate()
                .filter_map(|(index, item)| {
                    compile(item, &format!("{place}.{kind}[{index}]"), scope, problems)
                })
                .collect();
            if all {
                Compiled::All(compiled)
            } else {
                Compiled::Any(compiled)
            }
        }
        Condition::Not(inner) => {
            let flipped = Scope {
                restrictive: !scope.restrictive,
                base: scope.base.clone(),
                ..*scope
            };
            Compiled::Not(Box::new(compile(
                inner,
                &format!("{place}.not"),
                &flipped,
                problems,
            )?))
        }
        Condition::Every { pointer, condition } => {
            compile_list(true, pointer, condition, place, scope, problems)?
        }
        Condition::Some { pointer, condition } => {
            compile_list(false, pointer, condition, place, scope, problems)?
        }
        leaf => compile_leaf(leaf, place, scope, problems)?,
    };
    (problems.len() == before).then_some(compiled)
}

/// `every` / `some`: the pointer must name a list; the inner condition is compiled with pointers
/// relative to an element.
fn compile_list(
    every: bool,
    pointer: &str,
    inner: &Condition,
    place: &str,
    scope: &Scope<'_>,
    problems: &mut Vec<ConditionProblem>,
) -> Option<Compiled> {
    let leaf = if every { "every" } else { "some" };
    check_pointer(pointer, &format!("{place}.{leaf}"), scope, problems);
    let absolute = format!("{}{pointer}/-", scope.base);
    if (scope.lookup)(&absolute) != SchemaLookup::Declared {
        problems.push((
            format!("{place}.{leaf}"),
            format!("pointer {pointer:?} names no list of the tool's input schema"),
        ));
    }
    let element = Scope {
        base: absolute,
        ..*scope
    };
    let condition = Box::new(compile(
        inner,
        &format!("{place}.{leaf}.condition"),
        &element,
        problems,
    )?);
    let pointer = scoped_pointer(pointer, scope);
    Some(if every {
        Compiled::Every { pointer, condition }
    } else {
        Compiled::Some { pointer, condition }
    })
}

/// `pointer` parsed, named in reasons by its absolute form (`/files/-/path` inside `every`).
fn scoped_pointer(pointer: &str, scope: &Scope<'_>) -> Pointer {
    Pointer::parse(pointer).named(format!("{}{pointer}", scope.base))
}

/// Checks a pointer's syntax and that the schema declares it (never as one index of a list).
fn check_pointer(
    pointer: &str,
    here: &str,
    scope: &Scope<'_>,
    problems: &mut Vec<ConditionProblem>,
) -> bool {
    let in_element = !scope.base.is_empty();
    if let Err(message) = check_pointer_syntax(pointer, in_element) {
        problems.push((here.to_owned(), message));
        return false;
    }
    let absolute = format!("{}{pointer}", scope.base);
    let message = match (scope.lookup)(&absolute) {
        SchemaLookup::Declared => return true,
        SchemaLookup::Missing => {
            format!("pointer {pointer:?} names no field of the tool's input schema")
        }
        SchemaLookup::ListIndex => format!(
            "pointer {pointer:?} picks one element of a list: a rule on it says nothing about the \
             others; use every or some"
        ),
    };
    problems.push((here.to_owned(), message));
    false
}

/// Whether a raw string comparison in this position can be evaded: the field is judged as a path
/// elsewhere, or the rule must catch every spelling and the text holds `/`.
fn raw_comparison_problem(
    pointer: &str,
    texts: &[&str],
    raw: bool,
    scope: &Scope<'_>,
) -> Option<String> {
    // Looked up as it was recorded: every list position written `-`, so a tuple position judged as
    // a path is found whichever position the raw comparison names.
    if scope
        .path_fields
        .contains(&field_key(&format!("{}{pointer}", scope.base)))
    {
        return Some(format!(
            "pointer {pointer:?} is judged as a path by another condition of this tool; compare it \
             with path_within or path_glob (a raw comparison is evaded by //, /./ and .. spellings)"
        ));
    }
    if scope.restrictive && !raw && texts.iter().any(|text| text.contains('/')) {
        return Some(format!(
            "a raw comparison of text holding '/' on {pointer:?} is evaded by re-spelling it \
             (//, /./, ..) where the rule must catch every spelling; judge paths with path_within \
             or path_glob"
        ));
    }
    None
}

fn compile_leaf(
    condition: &Condition,
    place: &str,
    scope: &Scope<'_>,
    problems: &mut Vec<ConditionProblem>,
) -> Option<Compiled> {
    let mut report = |leaf: &str, message: String| {
        problems.push((format!("{place}.{leaf}"), message));
    };
    let checked = |pointer: &str, leaf: &str, problems_here: &mut Vec<ConditionProblem>| {
        check_pointer(pointer, &format!("{place}.{leaf}"), scope, problems_here);
        scoped_pointer(pointer, scope)
    };
    let mut own = Vec::new();
    let compiled = match condition {
        Condition::PathWithin {
            pointer,
            roots,
            allow_root,
        } => {
            let pointer = checked(pointer, "path_within", &mut own);
            if roots.is_empty() {
                report("path_within", "lists no root".to_owned());
            }
            let mut compiled = Vec::new();
            for root in roots {
                match scope.paths.root(root, *allow_root) {
                    Ok(root) => compiled.push(root),
                    Err(message) => report("path_within", message),
                }
            }
            Compiled::PathWithin {
                pointer,
                roots: compiled,
            }
        }
        Condition::PathGlob { pointer, pattern } => {
            let pointer = checked(pointer, "path_glob", &mut own);
            match scope.paths.pattern(pattern) {
                Ok(pattern) => Compiled::PathGlob { pointer, pattern },
                Err(message) => {
                    report("path_glob", message);
                    Compiled::All(Vec::new())
                }
            }
        }
        Condition::ArgvPrefix { pointer, prefix }
        | Condition::CommandPrefix { pointer, prefix } => {
            let command_string = matches!(condition, Condition::CommandPrefix { .. });
            let leaf = if command_string {
                "command_prefix"
            } else {
                "argv_prefix"
            };
            let raw = raw_comparison_problem(pointer, &[], true, scope);
            let pointer = checked(pointer, leaf, &mut own);
            if let Some(message) = raw {
                report(leaf, message);
            }
            if prefix.is_empty() {
                report(leaf, "prefix is empty".to_owned());
            }
            for token in prefix {
                if token.is_empty() {
                    report(leaf, "prefix holds an empty token".to_owned());
                } else if token.contains(char::is_whitespace) {
                    report(
                        leaf,
                        format!("prefix token {token:?} holds whitespace, so it can never match"),
                    );
                } else if command_string && !is_plain_command(token) {
                    report(leaf, format!("prefix token {token:?} holds shell syntax"));
                }
            }
            Compiled::Prefix {
                pointer,
                prefix: prefix.clone(),
                command_string,
            }
        }
        Condition::CommandOption { pointer, options } => {
            let pointer = checked(pointer, "command_option", &mut own);
            if options.is_empty() {
                report("command_option", "lists no option".to_owned());
            }
            for option in options {
                if let Err(message) = check_option(option) {
                    report("command_option", message);
                }
            }
            Compiled::CommandOption {
                pointer,
                options: options.clone(),
            }
        }
        Condition::Equals { pointer, value } => compile_values(
            pointer,
            &format!("{place}.equals"),
            std::slice::from_ref(value),
            scope,
            &mut own,
        ),
        Condition::OneOf { pointer, values } => {
            if values.is_empty() {
                report("one_of", "lists no value".to_owned());
            }
            compile_values(pointer, &format!("{place}.one_of"), values, scope, &mut own)
        }
        Condition::Glob {
            pointer,
            pattern,
            raw,
        } => {
            // Checked as it will be compared: normalization may turn `／` into `/`.
            let compared_pattern = compared(pattern, scope.normalize_text);
            if let Some(message) =
                raw_comparison_problem(pointer, &[&compared_pattern], *raw, scope)
            {
                report("glob", message);
            }
            let pointer = checked(pointer, "glob", &mut own);
            if pattern.is_empty() {
                report("glob", "pattern is empty".to_owned());
            }
            Compiled::Glob {
                pointer,
                pattern: tokenize_glob(&compared_pattern),
                normalize: scope.normalize_text,
            }
        }
        Condition::Range { pointer, min, max } => {
            let pointer = checked(pointer, "range", &mut own);
            match (min, max) {
                (None, None) => report("range", "sets neither min nor max".to_owned()),
                (Some(low), Some(high))
                    if compare_numbers(low, high) == Some(Ordering::Greater) =>
                {
                    report("range", "min is greater than max".to_owned());
                }
                _ => {}
            }
            for bound in [min, max].into_iter().flatten() {
                if !is_exact(bound) {
                    report(
                        "range",
                        format!(
                            "bound {bound} cannot be compared exactly (beyond 64 bits, or a float \
                             of 2^53 or more); write an integer within 64 bits"
                        ),
                    );
                }
            }
            Compiled::Range {
                pointer,
                min: min.clone(),
                max: max.clone(),
            }
        }
        Condition::All(_)
        | Condition::Any(_)
        | Condition::Not(_)
        | Condition::Every { .. }
        | Condition::Some { .. } => unreachable!("combinators are compiled by `compile`"),
    };
    problems.append(&mut own);
    Some(compiled)
}

fn compile_values(
    pointer: &str,
    here: &str,
    values: &[Value],
    scope: &Scope<'_>,
    problems: &mut Vec<ConditionProblem>,
) -> Compiled {
    let values: Vec<Value> = values
        .iter()
        .map(|value| compared_value(value, scope.normalize_text).into_owned())
        .collect();
    let texts: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
    if let Some(message) = raw_comparison_problem(pointer, &texts, false, scope) {
        problems.push((here.to_owned(), message));
    }
    if !values.iter().all(numbers_are_exact) {
        problems.push((
            here.to_owned(),
            "a number cannot be compared exactly (beyond 64 bits, or a float of 2^53 or more)"
                .to_owned(),
        ));
    }
    check_pointer(pointer, here, scope, problems);
    Compiled::OneOf {
        pointer: scoped_pointer(pointer, scope),
        texts: values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        values,
        normalize: scope.normalize_text,
    }
}
