//! An index over one action's rules of one tool, built at load, so that a tool with a thousand
//! rules decides in about the time of a few: rules are grouped by the pointer they judge, each
//! pointer is resolved once per call, and only the rules whose key the value can meet are
//! evaluated — paths by their first component, commands by program word, strings by value.
//!
//! Exactness is the whole point: a rule the index skips is one whose condition is certainly
//! *false* for this value, never undetermined. Where the key cannot be taken (a path that cannot
//! be judged, a command with shell syntax, an argv that is not all strings) every rule of the group
//! is evaluated, as a linear scan would. A property test compares the two over random policies.

use serde_json::Value;

use super::Compiled;
use super::call_paths::CallPaths;
use super::commands::{is_plain_command, plain_words};
use super::glob::{ComponentPattern, GlobToken};
use super::pointer::Pointer;
use crate::names::FastMap;

/// Below this many rules a linear scan is as fast as the index.
const INDEXED_FROM: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// Path conditions: keyed by the first component of the normalized path.
    Path,
    /// Command prefixes: keyed by the program word, lower-cased (`prefix_match` also accepts the
    /// program as a path, in another ASCII case, or as `program-sub`, anywhere in the words).
    Command { string: bool },
    /// `equals` / `one_of` over strings only: keyed by the string (normalized with `normalize`,
    /// as the rule's values already are).
    Text { normalize: bool },
}

#[derive(Debug)]
struct Group {
    pointer: Pointer,
    kind: Kind,
    // Key → positions of the rules with that key (a rule may have several keys).
    by_key: FastMap<Box<str>, Vec<u32>>,
    // Every position in the group, ascending: evaluated when no key can be taken.
    all: Vec<u32>,
}

/// One action's rules of one tool, indexed.
#[derive(Debug)]
pub(crate) struct Index {
    groups: Vec<Group>,
    // Positions of the rules no group covers, ascending.
    rest: Vec<u32>,
}

/// The keys a condition can be indexed by: a leaf, or the first indexable leaf of a top-level
/// `all` (the `all` is false whenever that leaf is).
fn keys(condition: &Compiled) -> Option<(&Pointer, Kind, Vec<Box<str>>)> {
    match condition {
        Compiled::All(items) => items.iter().find_map(keys),
        Compiled::PathGlob { pointer, pattern } => match pattern.first()? {
            ComponentPattern::Glob(tokens) => {
                let literal: Option<String> = tokens
                    .iter()
                    .map(|token| match token {
                        GlobToken::Literal(c) => Some(*c),
                        _ => None,
                    })
                    .collect();
                Some((pointer, Kind::Path, vec![literal?.into()]))
            }
            ComponentPattern::AnyComponents => None,
        },
        Compiled::PathWithin { pointer, roots } => {
            let firsts: Option<Vec<Box<str>>> = roots
                .iter()
                .map(|root| root.first().map(|first| first.as_str().into()))
                .collect();
            Some((pointer, Kind::Path, firsts?))
        }
        Compiled::Prefix {
            pointer,
            prefix,
            command_string,
        } => Some((
            pointer,
            Kind::Command {
                string: *command_string,
            },
            vec![prefix.first()?.to_ascii_lowercase().into()],
        )),
        Compiled::OneOf {
            pointer,
            values,
            normalize,
        } => {
            let texts: Option<Vec<Box<str>>> = values
                .iter()
                .map(|value| value.as_str().map(Into::into))
                .collect();
            Some((
                pointer,
                Kind::Text {
                    normalize: *normalize,
                },
                texts?,
            ))
        }
        _ => None,
    }
}

impl Index {
    /// The index of rules whose conditions are `conditions` (in naming order); `None` when there
    /// are too few for an index to pay.
    pub(crate) fn build<'c>(
        conditions: impl ExactSizeIterator<Item = Option<&'c Compiled>>,
    ) -> Option<Self> {
        if conditions.len() < INDEXED_FROM {
            return None;
        }
        let mut index = Self {
            groups: Vec::new(),
            rest: Vec::new(),
        };
        for (position, condition) in conditions.enumerate() {
            let position = u32::try_from(position).ok()?;
            let Some((pointer, kind, keys)) = condition.and_then(keys) else {
                index.rest.push(position);
                continue;
            };
            let group = match index
                .groups
                .iter()
                .position(|group| group.kind == kind && group.pointer.text() == pointer.text())
            {
                Some(found) => &mut index.groups[found],
                None => {
                    index.groups.push(Group {
                        pointer: Pointer::parse(pointer.text()),
                        kind,
                        by_key: FastMap::default(),
                        all: Vec::new(),
                    });
                    let last = index.groups.len() - 1;
                    &mut index.groups[last]
                }
            };
            group.all.push(position);
            for key in keys {
                let positions = group.by_key.entry(key).or_default();
                if positions.last() != Some(&position) {
                    positions.push(position);
                }
            }
        }
        Some(index)
    }

    /// The rules no group covers, ascending: the caller evaluates them in order.
    pub(crate) fn rest(&self) -> &[u32] {
        &self.rest
    }

    /// Calls `visit` for every grouped rule that is not certainly false for `arguments` (some
    /// more than once, in no particular order).
    // `#[inline]`: called from another codegen unit on every indexed decision; without it, where
    // the compiler splits the crate decides whether this is inlined (about 100 instructions).
    #[inline]
    pub(crate) fn candidates<'a>(
        &self,
        arguments: &'a Value,
        paths: &mut CallPaths<'a>,
        visit: &mut dyn FnMut(u32, &mut CallPaths<'a>),
    ) {
        for group in &self.groups {
            // An absent field makes the indexed leaf false, and so the rule.
            let Some(value) = group.pointer.resolve(arguments) else {
                continue;
            };
            match group.kind {
                Kind::Text { normalize } => {
                    // A string never equals a value of another type: only strings have keys.
                    if let Some(text) = value.as_str() {
                        group.visit_key(&super::text::compared(text, normalize), paths, visit);
                    }
                }
                Kind::Path => {
                    let positions = value
                        .as_str()
                        .and_then(|path| paths.first_component(path))
                        .map(|first| first.and_then(|key| group.by_key.get(key)));
                    match positions {
                        // `/` (no first component) is inside no root and matches no literal.
                        Some(positions) => {
                            for &position in positions.into_iter().flatten() {
                                visit(position, paths);
                            }
                        }
                        None => group.visit_all(paths, visit),
                    }
                }
                Kind::Command { string } => {
                    let judged = if string {
                        value
                            .as_str()
                            .filter(|command| is_plain_command(command))
                            .map(|command| {
                                for word in plain_words(command) {
                                    program_keys(word, &mut |key| {
                                        group.visit_key(key, paths, visit);
                                    });
                                }
                            })
                    } else {
                        value
                            .as_array()
                            .filter(|tokens| tokens.iter().all(Value::is_string))
                            .map(|tokens| {
                                for word in tokens
                                    .iter()
                                    .filter_map(Value::as_str)
                                    .flat_map(str::split_whitespace)
                                {
                                    program_keys(word, &mut |key| {
                                        group.visit_key(key, paths, visit);
                                    });
                                }
                            })
                    };
                    if judged.is_none() {
                        group.visit_all(paths, visit);
                    }
                }
            }
        }
    }
}

impl Group {
    fn visit_key<'a>(
        &self,
        key: &str,
        paths: &mut CallPaths<'a>,
        visit: &mut dyn FnMut(u32, &mut CallPaths<'a>),
    ) {
        for &position in self.by_key.get(key).into_iter().flatten() {
            visit(position, paths);
        }
    }

    /// The key could not be taken: every rule of the group may be undetermined.
    fn visit_all<'a>(
        &self,
        paths: &mut CallPaths<'a>,
        visit: &mut dyn FnMut(u32, &mut CallPaths<'a>),
    ) {
        for &position in &self.all {
            visit(position, paths);
        }
    }
}

/// Every program a word may name for `prefix_match`, lower-cased: the word itself (a program
/// written as a path matches only itself), its base name after the last `/`, and each head of
/// the base name before a `-` with something after it (`git-push` may be `git`).
// `#[inline]`, as `Index::candidates`: its one caller is the index walk.
#[inline]
fn program_keys(word: &str, found: &mut dyn FnMut(&str)) {
    let lower = |text: &str, found: &mut dyn FnMut(&str)| {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            found(&text.to_ascii_lowercase());
        } else {
            found(text);
        }
    };
    // Over bytes: `/` and `-` are ASCII, so every cut below falls on a character boundary.
    let bytes = word.as_bytes();
    let base = match bytes.iter().rposition(|&b| b == b'/') {
        Some(slash) => {
            lower(word, found);
            &word[slash + 1..]
        }
        None => word,
    };
    lower(base, found);
    let base_bytes = base.as_bytes();
    for at in 1..base_bytes.len().saturating_sub(1) {
        if base_bytes[at] == b'-' {
            lower(&base[..at], found);
        }
    }
}
