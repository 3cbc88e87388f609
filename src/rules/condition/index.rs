//! An index over one action's rules of one tool, built at load, so that a tool with a thousand
//! rules decides in about the time of a few: rules are grouped by the pointer they judge, each
//! pointer is resolved once per call, and only the rules whose key the value can meet are
//! evaluated — paths by their normalized roots (a trie of components: a `path_within` root, or a
//! `path_glob`'s leading literal components), commands by program word, strings by value.
//!
//! Exactness is the whole point: a rule the index skips is one whose condition is certainly
//! *false* for this value, never undetermined. Where the key cannot be taken (a path that cannot
//! be judged, a command with shell syntax, an argv that is not all strings) every rule of the group
//! is evaluated, as a linear scan would. A property test compares the two over random policies.

use serde_json::Value;

use super::Compiled;
use super::call_paths::CallPaths;
use super::commands::{is_plain_command, string_words};
use super::glob::{ComponentPattern, GlobToken};
use super::path_trie::PathTrie;
use super::pointer::Pointer;
use super::program_table::ProgramTable;
use crate::names::FastMap;

/// Below this many rules a linear scan is as fast as the index.
const INDEXED_FROM: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// Path conditions: keyed by the leading components of the normalized path.
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
    // Key → positions of the rules with that key (a rule may have several keys); empty for
    // `Kind::Path` and `Kind::Command`, whose keys are in the trie and the program table.
    by_key: FastMap<Box<str>, Vec<u32>>,
    // For `Kind::Path`: every rule under its whole key.
    trie: PathTrie,
    // For `Kind::Command`: every rule under its program and first subcommand word.
    programs: ProgramTable,
    // Every position in the group, ascending: evaluated when no key can be taken.
    all: Vec<u32>,
}

/// One action's rules of one tool, indexed.
#[derive(Debug)]
pub(crate) struct Index {
    groups: Vec<Group>,
    // The rules are `allow` rules: only a rule whose condition holds is named, so where a group's
    // key cannot be taken (its leaf is undetermined for every rule of the group) none of them
    // need be evaluated.
    allow: bool,
    // Positions of the rules no group covers, ascending.
    rest: Vec<u32>,
}

/// One key of a rule: a word or text (one element), or a path's leading components.
type Key = Vec<Box<str>>;

/// The component a `path_glob` pattern component matches if it is all literal characters.
fn literal(component: &ComponentPattern) -> Option<Box<str>> {
    match component {
        ComponentPattern::Glob(tokens) => tokens
            .iter()
            .map(|token| match token {
                GlobToken::Literal(c) => Some(*c),
                _ => None,
            })
            .collect::<Option<String>>()
            .map(Into::into),
        ComponentPattern::AnyComponents => None,
    }
}

/// The keys a condition can be indexed by: a leaf, or the first indexable leaf of a top-level
/// `all` (the `all` is false whenever that leaf is). A path key holds at least one component.
fn keys(condition: &Compiled) -> Option<(&Pointer, Kind, Vec<Key>)> {
    match condition {
        Compiled::All(items) => items.iter().find_map(keys),
        Compiled::PathGlob { pointer, pattern } => {
            // A literal component matches only itself: a path must begin with every literal
            // component before the pattern's first wildcard.
            let leading: Key = pattern.iter().map_while(literal).collect();
            (!leading.is_empty()).then(|| (pointer, Kind::Path, vec![leading]))
        }
        Compiled::PathWithin { pointer, roots } => {
            let keys: Vec<Key> = roots
                .iter()
                .map(|root| root.iter().map(|c| c.as_str().into()).collect::<Key>())
                .collect();
            // The root `/` holds every path: nothing to index it by.
            if keys.iter().any(Vec::is_empty) {
                return None;
            }
            Some((pointer, Kind::Path, keys))
        }
        Compiled::Prefix {
            pointer,
            prefix,
            command_string,
        } => {
            // The program and, if the prefix has one, its first subcommand word, lower-cased.
            let key: Key = prefix
                .iter()
                .take(2)
                .map(|word| word.to_ascii_lowercase().into())
                .collect();
            (!key.is_empty()).then(|| {
                (
                    pointer,
                    Kind::Command {
                        string: *command_string,
                    },
                    vec![key],
                )
            })
        }
        Compiled::OneOf {
            pointer,
            values,
            normalize,
            ..
        } => {
            let texts: Option<Vec<Key>> = values
                .iter()
                .map(|value| value.as_str().map(|text| vec![text.into()]))
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
        allow: bool,
    ) -> Option<Self> {
        if conditions.len() < INDEXED_FROM {
            return None;
        }
        let mut index = Self {
            groups: Vec::new(),
            allow,
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
                        trie: PathTrie::default(),
                        programs: ProgramTable::default(),
                        all: Vec::new(),
                    });
                    let last = index.groups.len() - 1;
                    &mut index.groups[last]
                }
            };
            group.all.push(position);
            for key in keys {
                match kind {
                    Kind::Path => {
                        group.trie.insert(&key, position);
                        continue;
                    }
                    Kind::Command { .. } => {
                        group.programs.insert(&key, position);
                        continue;
                    }
                    Kind::Text { .. } => {}
                }
                let Some(word) = key.into_iter().next() else {
                    continue;
                };
                let positions = group.by_key.entry(word).or_default();
                if positions.last() != Some(&position) {
                    positions.push(position);
                }
            }
        }
        for group in &mut index.groups {
            group.trie.seal();
        }
        Some(index)
    }

    /// The rules no group covers, ascending: the caller evaluates them in order.
    pub(crate) fn rest(&self) -> &[u32] {
        &self.rest
    }

    /// Calls `visit` for every grouped rule that is not certainly false for `arguments` (some
    /// more than once, in no particular order).
    // Fast path: inlined across codegen units on every indexed decision (~100 instr. otherwise).
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
                    // The rules whose key the normalized path begins with; `/` reaches none.
                    let positions = value
                        .as_str()
                        .and_then(|path| paths.components(path))
                        .map(|components| group.trie.reached(components));
                    match positions {
                        Some(positions) => {
                            for &position in positions {
                                visit(position, paths);
                            }
                        }
                        None if self.allow => {}
                        None => group.visit_all(paths, visit),
                    }
                }
                Kind::Command { string } => {
                    let judged = if string {
                        value
                            .as_str()
                            // For allow rules the check can wait for the rule itself: a command
                            // that is not plain holds for none of them.
                            .filter(|command| self.allow || is_plain_command(command))
                            .map(|command| {
                                group.programs.visit(string_words(command), paths, visit);
                            })
                    } else {
                        value
                            .as_array()
                            .filter(|tokens| tokens.iter().all(Value::is_string))
                            .map(|tokens| {
                                let words =
                                    tokens.iter().filter_map(Value::as_str).flat_map(|token| {
                                        let split = token.contains(char::is_whitespace);
                                        token.split_whitespace().map(move |word| (word, split))
                                    });
                                group.programs.visit(words, paths, visit);
                            })
                    };
                    if judged.is_none() && !self.allow {
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
