//! Evaluating a compiled condition on one call's arguments: three-valued, and allocation-free on
//! the common paths (paths are normalized into a short vector).

use std::cmp::Ordering;

use serde_json::Value;

use super::Truth;
use super::call_paths::CallPaths;
use super::commands::{
    PrefixMatch, argv_words, has_option, is_plain_command, prefix_match, string_words,
};
use super::compile::Compiled;
use super::glob::glob_match;
use super::pointer::Pointer;
use super::values::{compare_numbers, json_equal};

impl Compiled {
    /// The condition's truth for `arguments`; `paths` holds the policy's path settings and the
    /// paths of this call normalized so far.
    pub(crate) fn evaluate<'a>(&self, arguments: &'a Value, paths: &mut CallPaths<'a>) -> Truth {
        match self {
            Self::All(items) => {
                let mut truth = Truth::Yes;
                for item in items {
                    match item.evaluate(arguments, paths) {
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
                    match item.evaluate(arguments, paths) {
                        Truth::Yes => return Truth::Yes,
                        Truth::Unknown => truth = Truth::Unknown,
                        Truth::No => {}
                    }
                }
                truth
            }
            Self::Not(inner) => inner.evaluate(arguments, paths).not(),
            Self::Every { pointer, condition } => list(arguments, pointer, |items| {
                let mut truth = Truth::Yes;
                for item in items {
                    match condition.evaluate(item, paths) {
                        Truth::No => return Truth::No,
                        Truth::Unknown => truth = Truth::Unknown,
                        Truth::Yes => {}
                    }
                }
                truth
            }),
            Self::Some { pointer, condition } => list(arguments, pointer, |items| {
                let mut truth = Truth::No;
                for item in items {
                    match condition.evaluate(item, paths) {
                        Truth::Yes => return Truth::Yes,
                        Truth::Unknown => truth = Truth::Unknown,
                        Truth::No => {}
                    }
                }
                truth
            }),
            Self::PathWithin { pointer, roots } => leaf(arguments, pointer, |value| {
                paths.within(value.as_str()?, roots)
            }),
            Self::PathGlob { pointer, pattern } => leaf(arguments, pointer, |value| {
                paths.matches(value.as_str()?, pattern)
            }),
            Self::Prefix {
                pointer,
                prefix,
                command_string,
            } => match pointer.resolve(arguments) {
                None => Truth::No,
                Some(value) => {
                    let matched = if *command_string {
                        match value.as_str() {
                            Some(command) if is_plain_command(command) => {
                                prefix_match(string_words(command), prefix)
                            }
                            _ => return Truth::Unknown,
                        }
                    } else {
                        match argv(value) {
                            Some(tokens) => prefix_match(argv_words(&tokens), prefix),
                            None => return Truth::Unknown,
                        }
                    };
                    match matched {
                        PrefixMatch::Exact => Truth::Yes,
                        PrefixMatch::Possible => Truth::Unknown,
                        PrefixMatch::No => Truth::No,
                    }
                }
            },
            Self::CommandOption { pointer, options } => leaf(arguments, pointer, |value| {
                if let Some(command) = value.as_str() {
                    return is_plain_command(command)
                        .then(|| has_option(string_words(command), options));
                }
                Some(has_option(argv_words(&argv(value)?), options))
            }),
            Self::OneOf { pointer, values } => leaf(arguments, pointer, |value| {
                let mut determined = true;
                for expected in values {
                    match json_equal(value, expected) {
                        Some(true) => return Some(true),
                        None => determined = false,
                        Some(false) => {}
                    }
                }
                determined.then_some(false)
            }),
            Self::Glob { pointer, pattern } => leaf(arguments, pointer, |value| {
                Some(glob_match(pattern, value.as_str()?, false))
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

/// The strings of an argv array; `None` if it is not an array of strings.
fn argv(value: &Value) -> Option<Vec<&str>> {
    value.as_array()?.iter().map(Value::as_str).collect()
}

/// An absent field is `No`; a present one is judged by `judge`, whose `None` means undetermined.
fn leaf<'a>(
    arguments: &'a Value,
    pointer: &Pointer,
    judge: impl FnOnce(&'a Value) -> Option<bool>,
) -> Truth {
    match pointer.resolve(arguments) {
        None => Truth::No,
        Some(value) => Truth::from_judgement(judge(value)),
    }
}

/// An absent list is `No`, a value that is not a list is undetermined.
fn list<'a>(
    arguments: &'a Value,
    pointer: &Pointer,
    judge: impl FnOnce(&'a [Value]) -> Truth,
) -> Truth {
    match pointer.resolve(arguments) {
        None => Truth::No,
        Some(Value::Array(items)) => judge(items),
        Some(_) => Truth::Unknown,
    }
}
