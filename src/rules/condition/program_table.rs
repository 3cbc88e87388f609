//! Command rules indexed by program word and first subcommand word.
//!
//! A rule `[program, sub, …]` can be met (or left undetermined) by a command only where a word
//! names `program` (see `prefix_match`). What follows that word decides how far the table may
//! narrow, by `prefix_match`'s own reading:
//!
//! - the next word is a plain word (not an option, not a piece of an argv token holding
//!   whitespace): `prefix_match` compares it with `sub` and answers no unless it *is* `sub`, so
//!   only the rules under that word (and those without a subcommand) are evaluated;
//! - the program word was `program-rest` (a per-subcommand binary): `rest` is the subcommand,
//!   compared ignoring ASCII case;
//! - the next word is an option or a piece of a split token (a global option may move the
//!   subcommand anywhere), or there is none: every rule under the program, or only those without
//!   a subcommand when no word follows.
//!
//! Every lookup visits a superset of the rules that can be met, never fewer.

use std::borrow::Cow;

use super::call_paths::CallPaths;
use crate::names::FastMap;

/// The rules of one program word.
#[derive(Debug, Default)]
struct Program {
    /// Every rule under the program, ascending.
    all: Vec<u32>,
    /// Rules whose prefix is the program alone.
    alone: Vec<u32>,
    /// Rules by their first subcommand word, lower-cased.
    by_subcommand: FastMap<Box<str>, Vec<u32>>,
}

#[derive(Debug)]
pub(super) struct ProgramTable {
    programs: FastMap<Box<str>, Program>,
    // The first bytes of the programs: a word starting otherwise names none of them, and is not
    // hashed (most words of a command are arguments and options).
    first_bytes: [bool; 256],
}

impl Default for ProgramTable {
    fn default() -> Self {
        Self {
            programs: FastMap::default(),
            first_bytes: [false; 256],
        }
    }
}

impl ProgramTable {
    /// Files the rule at `position` under `key`: its program and, if any, its first subcommand,
    /// both lower-cased.
    pub(super) fn insert(&mut self, key: &[Box<str>], position: u32) {
        let Some((program, rest)) = key.split_first() else {
            return;
        };
        if let Some(&first) = program.as_bytes().first() {
            self.first_bytes[usize::from(first)] = true;
        }
        let entry = self.programs.entry(program.clone()).or_default();
        push(&mut entry.all, position);
        match rest.first() {
            Some(subcommand) => push(
                entry.by_subcommand.entry(subcommand.clone()).or_default(),
                position,
            ),
            None => push(&mut entry.alone, position),
        }
    }

    /// Visits every rule that `words` (each with whether it is a piece of a split argv token)
    /// may meet.
    // `#[inline]`: called on every indexed decision from `Index::candidates`.
    #[inline]
    pub(super) fn visit<'w, 'a>(
        &self,
        words: impl Iterator<Item = (&'w str, bool)> + Clone,
        paths: &mut CallPaths<'a>,
        visit: &mut dyn FnMut(u32, &mut CallPaths<'a>),
    ) {
        let mut rest = words;
        while let Some((word, _)) = rest.next() {
            // Every key of a word without `/` (itself, its heads before `-`) starts with its first
            // byte: a word no program starts like names none.
            let first = word.as_bytes().first().map_or(0, u8::to_ascii_lowercase);
            if word.is_ascii() && !self.first_bytes[usize::from(first)] && !word.contains('/') {
                continue;
            }
            if !word.is_ascii() {
                // A spelling a case-insensitive file system may resolve to a program leaves
                // every rule of that program undetermined (`prefix_match`): all of them.
                let folded = crate::text::fold_case(word);
                program_keys(&folded, &mut |key, _| {
                    if let Some(program) = self.programs.get(key) {
                        for &position in &program.all {
                            visit(position, paths);
                        }
                    }
                });
                continue;
            }
            let next = rest.clone().next();
            program_keys(word, &mut |key, dashed| {
                let first = key.as_bytes().first().copied().unwrap_or_default();
                if !self.first_bytes[usize::from(first)] {
                    return;
                }
                if let Some(program) = self.programs.get(key) {
                    program.visit(dashed, next, paths, visit);
                }
            });
        }
    }
}

impl Program {
    fn visit<'a>(
        &self,
        dashed: Option<&str>,
        next: Option<(&str, bool)>,
        paths: &mut CallPaths<'a>,
        visit: &mut dyn FnMut(u32, &mut CallPaths<'a>),
    ) {
        let subcommand = match (dashed, next) {
            (Some(rest), _) => Some(rest),
            (None, None) => None,
            (None, Some((word, split))) if split || word.starts_with('-') => {
                // An option or a split piece: the subcommand may be anywhere after it.
                for &position in &self.all {
                    visit(position, paths);
                }
                return;
            }
            (None, Some((word, _))) => Some(word),
        };
        for &position in &self.alone {
            visit(position, paths);
        }
        let Some(subcommand) = subcommand else {
            return;
        };
        let lower = lower(subcommand);
        for &position in self.by_subcommand.get(lower.as_ref()).into_iter().flatten() {
            visit(position, paths);
        }
    }
}

fn push(positions: &mut Vec<u32>, position: u32) {
    if positions.last() != Some(&position) {
        positions.push(position);
    }
}

fn lower(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// Every program a word may name for `prefix_match`, lower-cased: the word itself (a program
/// written as a path matches only itself), its base name after the last `/`, and each head of
/// the base name before a `-` with something after it (`git-push` may be `git`, its subcommand
/// then `push`, passed as `dashed`).
// `#[inline]`, as `ProgramTable::visit`: its one caller is the index walk.
#[inline]
fn program_keys(word: &str, found: &mut dyn FnMut(&str, Option<&str>)) {
    // Over bytes: `/` and `-` are ASCII, so every cut below falls on a character boundary.
    let bytes = word.as_bytes();
    let base = match bytes.iter().rposition(|&b| b == b'/') {
        Some(slash) => {
            found(&lower(word), None);
            &word[slash + 1..]
        }
        None => word,
    };
    found(&lower(base), None);
    let base_bytes = base.as_bytes();
    for at in 1..base_bytes.len().saturating_sub(1) {
        if base_bytes[at] == b'-' {
            found(&lower(&base[..at]), Some(&base[at + 1..]));
        }
    }
}
