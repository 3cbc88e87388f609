//! Evaluating a compiled condition on one call's arguments: three-valued, and allocation-free on
//! the common paths (paths are normalized into a short vector). An undetermined result names the
//! first leaf that could not be judged and why.

use std::cmp::Ordering;

use serde_json::Value;

use super::call_paths::CallPaths;
use super::commands::{
    PrefixMatch, argv_words, has_option, is_plain_command, prefix_match, string_words,
};
use super::compile::Compiled;
use super::glob::glob_match;
use super::pointer::Pointer;
use super::text::{compared, compared_value};
use super::values::{compare_numbers, json_equal};
use super::{Cause, Truth, Undetermined};

/// A leaf's judgement: `Err` says why the value cannot be judged.
type Judgement = Result<bool, Undetermined>;

impl Compiled {
    /// The condition's truth for `arguments`; `paths` holds the policy's path settings and the
    /// paths of this call normalized so far.
    pub(crate) fn evaluate<'a>(
        &self,
        arguments: &'a Value,
        paths: &mut CallPaths<'a>,
    ) -> Truth<'_> {
        match self {
            Self::All(items) => all(items.iter().map(|item| item.evaluate(arguments, paths))),
            Self::Any(items) => any(items.iter().map(|item| item.evaluate(arguments, paths))),
            Self::Not(inner) => inner.evaluate(arguments, paths).not(),
            Self::Every { pointer, condition } => list(arguments, pointer, |items| {
                all(items.iter().map(|item| condition.evaluate(item, paths)))
            }),
            Self::Some { pointer, condition } => list(arguments, pointer, |items| {
                any(items.iter().map(|item| condition.evaluate(item, paths)))
            }),
            Self::PathWithin { pointer, roots } => leaf(arguments, pointer, |value| {
                let path = value.as_str().ok_or(Undetermined::WrongType)?;
                paths
                    .within(path, roots)
                    .ok_or_else(|| paths.undetermined(path))
            }),
            Self::PathGlob { pointer, pattern } => leaf(arguments, pointer, |value| {
                let path = value.as_str().ok_or(Undetermined::WrongType)?;
                paths
                    .matches(path, pattern)
                    .ok_or_else(|| paths.undetermined(path))
            }),
            Self::Prefix {
                pointer,
                prefix,
                command_string,
            } => leaf(arguments, pointer, |value| {
                let matched = if *command_string {
                    prefix_match(string_words(plain_command(value)?), prefix)
                } else {
                    prefix_match(argv_words(&argv(value)?), prefix)
                };
                match matched {
                    PrefixMatch::Exact => Ok(true),
                    PrefixMatch::Possible => Err(Undetermined::HiddenCommand),
                    PrefixMatch::No => Ok(false),
                }
            }),
            Self::CommandOption { pointer, options } => leaf(arguments, pointer, |value| {
                if value.is_string() {
                    return Ok(has_option(string_words(plain_command(value)?), options));
                }
                Ok(has_option(argv_words(&argv(value)?), options))
            }),
            Self::OneOf {
                pointer,
                values,
                texts,
                normalize,
            } => leaf(arguments, pointer, |value| {
                let value = compared_value(value, *normalize);
                // A string equals only a string, and equals it as written: looked up in one step
                // in a long list (a few values compare faster than one hash).
                if let Value::String(text) = &*value
                    && values.len() > FEW_VALUES
                {
                    return Ok(texts.contains(text));
                }
                let mut determined = true;
                for expected in values {
                    match json_equal(&value, expected) {
                        Some(true) => return Ok(true),
                        None => determined = false,
                        Some(false) => {}
                    }
                }
                if determined {
                    Ok(false)
                } else {
                    Err(Undetermined::InexactNumber)
                }
            }),
            Self::Glob {
                pointer,
                pattern,
                normalize,
            } => leaf(arguments, pointer, |value| {
                let text = value.as_str().ok_or(Undetermined::WrongType)?;
                Ok(glob_match(pattern, &compared(text, *normalize), false))
            }),
            Self::Range { pointer, min, max } => leaf(arguments, pointer, |value| {
                let Value::Number(number) = value else {
                    return Err(Undetermined::WrongType);
                };
                let compare =
                    |bound| compare_numbers(number, bound).ok_or(Undetermined::InexactNumber);
                let above = match min {
                    Some(min) => compare(min)? != Ordering::Less,
                    None => true,
                };
                let below = match max {
                    Some(max) => compare(max)? != Ordering::Greater,
                    None => true,
                };
                Ok(above && below)
            }),
        }
    }
}

/// `No` as soon as one is `No`; else the first `Unknown`; else `Yes`.
fn all<'c>(truths: impl Iterator<Item = Truth<'c>>) -> Truth<'c> {
    let mut result = Truth::Yes;
    for truth in truths {
        match truth {
            Truth::No => return Truth::No,
            Truth::Unknown(_) if result == Truth::Yes => result = truth,
            _ => {}
        }
    }
    result
}

/// `Yes` as soon as one is `Yes`; else the first `Unknown`; else `No`.
fn any<'c>(truths: impl Iterator<Item = Truth<'c>>) -> Truth<'c> {
    let mut result = Truth::No;
    for truth in truths {
        match truth {
            Truth::Yes => return Truth::Yes,
            Truth::Unknown(_) if result == Truth::No => result = truth,
            _ => {}
        }
    }
    result
}

/// The command string, if it has no shell syntax.
fn plain_command(value: &Value) -> Result<&str, Undetermined> {
    let command = value.as_str().ok_or(Undetermined::WrongType)?;
    if is_plain_command(command) {
        Ok(command)
    } else if command.chars().any(char::is_control) && !command.contains(['\t', '\n']) {
        // A NUL or escape hides nothing a shell would run, but nothing can be said of it either.
        Err(Undetermined::ControlCharacter)
    } else {
        Err(Undetermined::ShellSyntax)
    }
}

/// The strings of an argv array.
fn argv(value: &Value) -> Result<Vec<&str>, Undetermined> {
    let tokens: Option<Vec<&str>> = value
        .as_array()
        .ok_or(Undetermined::WrongType)?
        .iter()
        .map(Value::as_str)
        .collect();
    tokens.ok_or(Undetermined::WrongType)
}

/// An absent field is `No`; a present one is judged by `judge`.
fn leaf<'a, 'c>(
    arguments: &'a Value,
    pointer: &'c Pointer,
    judge: impl FnOnce(&'a Value) -> Judgement,
) -> Truth<'c> {
    match pointer.resolve(arguments) {
        None => Truth::No,
        Some(value) => match judge(value) {
            Ok(true) => Truth::Yes,
            Ok(false) => Truth::No,
            Err(kind) => unknown(pointer, kind),
        },
    }
}

/// An absent list is `No`, a value that is not a list is undetermined.
fn list<'a, 'c>(
    arguments: &'a Value,
    pointer: &'c Pointer,
    judge: impl FnOnce(&'a [Value]) -> Truth<'c>,
) -> Truth<'c> {
    match pointer.resolve(arguments) {
        None => Truth::No,
        Some(Value::Array(items)) => judge(items),
        Some(_) => unknown(pointer, Undetermined::WrongType),
    }
}

fn unknown(pointer: &Pointer, kind: Undetermined) -> Truth<'_> {
    Truth::Unknown(Cause {
        pointer: pointer.text(),
        kind,
    })
}

/// Up to how many values a `one_of` compares one by one rather than by a lookup.
const FEW_VALUES: usize = 8;
