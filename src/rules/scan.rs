//! Choosing the deciding rule among one action's rules: a linear scan, or the same choice through
//! the load-time [`Index`] for tools with many rules.

use std::cell::Cell;

use serde_json::Value;

use super::Rule;
use super::condition::{CallPaths, Cause, Index, Truth};
use crate::decision::PolicyAction;

/// The rule to name for one action, with what it could not judge when it applies only because its
/// condition was undetermined.
pub(super) type Pick<'r> = Option<(&'r Rule, Option<Cause<'r>>)>;

/// The first rule (in naming order) whose condition holds; else, for ask and deny, the first that
/// could not judge.
pub(super) fn pick_linear<'r, 'a>(
    rules: impl Iterator<Item = &'r Rule>,
    action: PolicyAction,
    caller: Option<&crate::Principal>,
    arguments: &'a Value,
    paths: &mut CallPaths<'a>,
) -> Pick<'r> {
    let mut undetermined = None;
    for rule in rules {
        match rule.truth_for(caller, arguments, paths) {
            Truth::Yes => return Some((rule, None)),
            // The scan goes on past an undetermined rule only on this slow path.
            Truth::Unknown(cause) if action != PolicyAction::Allow && undetermined.is_none() => {
                undetermined = Some((rule, Some(cause)));
            }
            Truth::Unknown(_) | Truth::No => {}
        }
    }
    undetermined
}

/// The same choice as [`pick_linear`] over `rules` (sorted in naming order), evaluating only the
/// rules the index cannot rule out: the smallest position that holds, else the smallest that could
/// not judge.
pub(super) fn pick_indexed<'r, 'a>(
    rules: &'r [Rule],
    index: &Index,
    action: PolicyAction,
    caller: Option<&crate::Principal>,
    arguments: &'a Value,
    paths: &mut CallPaths<'a>,
) -> Pick<'r> {
    let holds: Cell<Option<u32>> = Cell::new(None);
    let mut undetermined: Option<(u32, Cause<'r>)> = None;
    let mut consider = |position: u32, paths: &mut CallPaths<'a>| {
        if holds.get().is_some_and(|best| best <= position) {
            return;
        }
        let Some(rule) = rules.get(position as usize) else {
            return;
        };
        match rule.truth_for(caller, arguments, paths) {
            Truth::Yes => holds.set(Some(position)),
            Truth::Unknown(cause)
                if action != PolicyAction::Allow
                    && undetermined.is_none_or(|(best, _)| position < best) =>
            {
                undetermined = Some((position, cause));
            }
            Truth::Unknown(_) | Truth::No => {}
        }
    };
    index.candidates(arguments, paths, &mut consider);
    for &position in index.rest() {
        // Ascending: past a rule that holds, nothing can be named before it.
        if holds.get().is_some_and(|best| best < position) {
            break;
        }
        consider(position, paths);
    }
    if let Some(position) = holds.get() {
        return Some((&rules[position as usize], None));
    }
    undetermined.map(|(position, cause)| (&rules[position as usize], Some(cause)))
}
