//! A bound, computed when a definition is built, on how much work validating one call's arguments
//! can take: the number of schema evaluations any single argument value can trigger.
//!
//! Without it, a recursive `$ref` reached through two `anyOf` branches that both recurse makes
//! validation double per nesting level: a 60-byte argument holds a thread for minutes, and the
//! error listing (`iter_errors`, which walks every failing branch) also builds an error tree of
//! that size.
//!
//! The analysis models the validator conservatively (never less work than it does):
//! - every schema object or boolean is a node, in three modes: `V` (`is_valid`), `L` (listing
//!   errors: the validator may check `is_valid` first, then list every branch) and `U` (marking
//!   which properties or items are evaluated, for `unevaluated*`);
//! - "same value" edges (`allOf`/`anyOf`/`oneOf` branches, `not`, `if`/`then`/`else`, `$ref`,
//!   `$dynamicRef`, `$recursiveRef`, `dependentSchemas`, …) must form no cycle, and multiply;
//! - "child value" edges (`properties`, `patternProperties`, `additionalProperties`, `items`, …) are
//!   grouped by which child they can reach: a property name, an array index, or any other name or
//!   index. Every subschema that can apply to the same child counts together. A level keeps one
//!   count vector per set of subschemas its values can meet (merged by pointwise maximum), so
//!   values of different `$defs` types are not counted as if one value met them all.
//!
//! The count vector is propagated over every nesting level an argument may have
//! (the definition's `MAX_ARGUMENT_DEPTH`); if one argument value could be evaluated more than
//! [`EVALUATIONS_PER_VALUE`] times, the schema is refused. Branches are never assumed exclusive
//! (the analysis does not read `const` or `type`), patterns are assumed to match every name, and
//! `then` and `else` both count.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

mod graph;

use graph::Graph;

/// The most schema evaluations (in `is_valid`, error listing and `unevaluated*` marking together)
/// one argument value may trigger. A schema-node evaluation costs tens of nanoseconds, so this
/// keeps one value under about 0.1 ms, while leaving room for unions of several hundred branches
/// (each branch counts about three times: checked, listed, checked again by the listing).
pub(crate) const EVALUATIONS_PER_VALUE: u64 = 4096;

/// The most elementary steps the analysis itself may take, so a schema crafted against the
/// analysis cannot stall the definition either (under a second at worst).
const ANALYSIS_STEPS: u64 = 10_000_000;

const V: u32 = 0;
const L: u32 = 1;
const U: u32 = 2;
const MODES: u32 = 3;

/// Refuses `schema` if validating an argument against it could cost more than
/// [`EVALUATIONS_PER_VALUE`] schema evaluations on one argument value, or if it applies to itself
/// without descending into the argument. The message names the place in the schema.
/// Arguments nest at most `max_depth` levels (the definition's `MAX_ARGUMENT_DEPTH`, passed in so
/// that this module depends on no other).
pub(crate) fn check(schema: &Value, max_depth: usize) -> Result<(), String> {
    let graph = Graph::build(schema)?;
    Analysis::new(&graph, max_depth).run()
}

/// A graph index: `node * MODES + mode`.
type Index = u32;

/// A sparse count vector, sorted by index.
type Counts = Rc<[(Index, u64)]>;

/// The level-by-level propagation of evaluation counts.
struct Analysis<'g, 'a> {
    graph: &'g Graph<'a>,
    /// Memoised same-value closures per graph index: how often each index is evaluated when the
    /// key index is evaluated once on a value.
    closures: Vec<Option<Counts>>,
    /// Scratch for `closure`: the indices on its depth-first stack (all `false` between calls).
    on_stack: Vec<bool>,
    steps: u64,
    /// The nesting depth being analysed, for messages.
    depth: usize,
    /// The deepest an argument may nest.
    max_depth: usize,
}

impl<'g, 'a> Analysis<'g, 'a> {
    fn new(graph: &'g Graph<'a>, max_depth: usize) -> Self {
        Self {
            graph,
            closures: vec![None; graph.nodes.len() * MODES as usize],
            on_stack: vec![false; graph.nodes.len() * MODES as usize],
            steps: 0,
            depth: 0,
            max_depth,
        }
    }

    fn pointer(&self, index: Index) -> &str {
        &self.graph.nodes[(index / MODES) as usize].pointer
    }

    fn spend(&mut self, steps: usize) -> Result<(), String> {
        self.steps = self.steps.saturating_add(steps as u64);
        if self.steps > ANALYSIS_STEPS {
            return Err(format!(
                "the schema is too intricate to bound its validation cost \
                 (more than {ANALYSIS_STEPS} analysis steps); simplify its references"
            ));
        }
        Ok(())
    }

    /// The same-value closure of `start`, computed without recursion (reference chains can be
    /// long) and refusing cycles.
    fn closure(&mut self, start: Index) -> Result<Counts, String> {
        if let Some(done) = &self.closures[start as usize] {
            return Ok(done.clone());
        }
        let mut on_stack = std::mem::take(&mut self.on_stack);
        let mut stack: Vec<(Index, usize)> = vec![(start, 0)];
        on_stack[start as usize] = true;
        while let Some(&mut (index, ref mut next)) = stack.last_mut() {
            let edges = &self.graph.nodes[(index / MODES) as usize].same[(index % MODES) as usize];
            if let Some(&target) = edges.get(*next) {
                *next += 1;
                if on_stack[target as usize] {
                    return Err(format!(
                        "the schema at {:?} applies to itself without descending into the \
                         arguments (a reference cycle); every recursion must pass through \
                         properties or items",
                        self.pointer(target)
                    ));
                }
                if self.closures[target as usize].is_none() {
                    on_stack[target as usize] = true;
                    stack.push((target, 0));
                }
                continue;
            }
            stack.pop();
            on_stack[index as usize] = false;
            let mut sum: HashMap<Index, u64> = HashMap::from([(index, 1)]);
            for &target in edges {
                let part = self.closures[target as usize].clone().unwrap_or_default();
                self.spend(part.len())?;
                for &(at, count) in part.iter() {
                    let entry = sum.entry(at).or_default();
                    *entry = entry.saturating_add(count);
                }
            }
            // Every closure computed is of a subschema some value is evaluated against, so one
            // over the budget is already a refusal (and keeps every closure small).
            if sum
                .values()
                .fold(0_u64, |total, &count| total.saturating_add(count))
                > EVALUATIONS_PER_VALUE
            {
                return Err(self.over_budget(&sum, self.depth));
            }
            let mut sorted: Vec<(Index, u64)> = sum.into_iter().collect();
            sorted.sort_unstable();
            self.closures[index as usize] = Some(sorted.into());
        }
        // Every entry was cleared as its frame was popped.
        self.on_stack = on_stack;
        Ok(self.closures[start as usize].clone().unwrap_or_default())
    }

    /// Adds `factor` times the closure of `node` in `mode` to `into`.
    fn add(
        &mut self,
        into: &mut HashMap<Index, u64>,
        node: u32,
        mode: u32,
        factor: u64,
    ) -> Result<(), String> {
        let part = self.closure(node * MODES + mode)?;
        self.spend(part.len())?;
        for &(at, count) in part.iter() {
            let entry = into.entry(at).or_default();
            *entry = entry.saturating_add(count.saturating_mul(factor));
        }
        Ok(())
    }

    fn run(mut self) -> Result<(), String> {
        // `validate` runs `is_valid` on the root value, then lists errors.
        let mut level: HashMap<Index, u64> = self.closure(V)?.iter().copied().collect();
        for (index, count) in self.closure(L)?.iter() {
            let entry = level.entry(*index).or_default();
            *entry = entry.saturating_add(*count);
        }
        self.check_budget(&level, 0)?;
        let mut states = States::new();
        fold_state(&mut states, level);
        for depth in 1..=self.max_depth {
            self.depth = depth;
            let mut next = States::new();
            for counts in states.values() {
                self.children(counts, depth, &mut next)?;
            }
            if next.is_empty() || next == states {
                // Nothing applies deeper, or every deeper level repeats this one.
                return Ok(());
            }
            states = next;
        }
        Ok(())
    }

    fn check_budget(&self, counts: &HashMap<Index, u64>, depth: usize) -> Result<(), String> {
        let total = counts
            .values()
            .fold(0_u64, |sum, &count| sum.saturating_add(count));
        if total <= EVALUATIONS_PER_VALUE {
            return Ok(());
        }
        Err(self.over_budget(counts, depth))
    }

    /// The refusal for `counts`, whose total is over the budget: the depth, the total, and the
    /// subschema evaluated most often.
    fn over_budget(&self, counts: &HashMap<Index, u64>, depth: usize) -> String {
        let total = counts
            .values()
            .fold(0_u64, |sum, &count| sum.saturating_add(count));
        let (&worst, &times) = counts
            .iter()
            .max_by_key(|&(&index, &count)| (count, std::cmp::Reverse(index)))
            .unwrap_or((&0, &0));
        format!(
            "one argument value at nesting depth {depth} can trigger {} schema evaluations \
             (limit {EVALUATIONS_PER_VALUE}); the schema at {:?} alone runs {} times, because \
             anyOf/oneOf/allOf branches, if/then/else, or overlapping properties, \
             patternProperties and items lead to it more than once at each level; make the \
             branches exclusive by a property outside the recursion, or keep one branch",
            if total == u64::MAX {
                "more than 2^64".to_owned()
            } else {
                total.to_string()
            },
            self.pointer(worst),
            if times == u64::MAX {
                "more than 2^64".to_owned()
            } else {
                times.to_string()
            },
        )
    }

    /// The counts one child value can see, maximised over every child a value with `counts` can
    /// have; each child's own total is checked against the budget.
    fn children(
        &mut self,
        counts: &HashMap<Index, u64>,
        depth: usize,
        next: &mut States,
    ) -> Result<(), String> {
        let mut active: Vec<(u32, u32, u64)> = counts
            .iter()
            .map(|(&index, &count)| (index / MODES, index % MODES, count))
            .collect();
        active.sort_unstable();
        let graph = self.graph;
        // In `U` mode only `unevaluated*` reach children, checked with `is_valid`.
        let child_mode = |mode: u32| if mode == U { V } else { mode };

        // Objects: the base is what any property name gets that no `properties` names.
        let mut base = HashMap::new();
        let mut names: HashMap<&str, Vec<(u32, u32, u64)>> = HashMap::new();
        for &(node, mode, count) in &active {
            let info = &graph.nodes[node as usize];
            if mode != U {
                for &target in info.any_property.iter().chain(&info.additional) {
                    self.add(&mut base, target, mode, count)?;
                }
                for &(name, _) in &info.properties {
                    names.entry(name).or_default().push((node, mode, count));
                }
            }
            if let Some(target) = info.unevaluated_properties {
                self.add(&mut base, target, child_mode(mode), count)?;
            }
        }
        let base_total = self.merge_base(next, &base, depth)?;
        for (name, holders) in names {
            // A named property gets `properties[name]` instead of `additionalProperties`.
            let (mut plus, mut minus) = (HashMap::new(), HashMap::new());
            for (node, mode, count) in holders {
                let info = &graph.nodes[node as usize];
                if let Some(&(_, target)) = info.properties.iter().find(|(n, _)| *n == name) {
                    self.add(&mut plus, target, mode, count)?;
                }
                if let Some(target) = info.additional {
                    self.add(&mut minus, target, mode, count)?;
                }
            }
            let changed = apply(&base, &plus, &minus);
            self.merge_child(next, &base, base_total, &changed, depth)?;
        }

        // Arrays: the base is what an item past every prefix gets.
        let mut base = HashMap::new();
        let mut longest = 0;
        for &(node, mode, count) in &active {
            let info = &graph.nodes[node as usize];
            if mode != U {
                for &target in info.any_item.iter().chain(&info.rest) {
                    self.add(&mut base, target, mode, count)?;
                }
                longest = longest.max(info.prefix.len());
            }
            if let Some(target) = info.unevaluated_items {
                self.add(&mut base, target, child_mode(mode), count)?;
            }
        }
        let base_total = self.merge_base(next, &base, depth)?;
        for position in 0..longest {
            let (mut plus, mut minus) = (HashMap::new(), HashMap::new());
            for &(node, mode, count) in &active {
                let info = &graph.nodes[node as usize];
                if mode == U {
                    continue;
                }
                if let Some(&target) = info.prefix.get(position) {
                    self.add(&mut plus, target, mode, count)?;
                    for &target in &info.rest {
                        self.add(&mut minus, target, mode, count)?;
                    }
                }
            }
            let changed = apply(&base, &plus, &minus);
            self.merge_child(next, &base, base_total, &changed, depth)?;
        }
        Ok(())
    }

    /// Checks one child's counts (`base` with the entries of `changed` replaced) against the
    /// budget and adds them to the states of the next level.
    fn merge_child(
        &mut self,
        next: &mut States,
        base: &HashMap<Index, u64>,
        base_total: u64,
        changed: &HashMap<Index, u64>,
        depth: usize,
    ) -> Result<(), String> {
        self.spend(base.len() + changed.len())?;
        let mut child = base.clone();
        child.extend(changed.iter().map(|(&index, &count)| (index, count)));
        let total = changed.iter().fold(base_total, |total, (index, &count)| {
            let replaced = base.get(index).copied().unwrap_or(0);
            total.saturating_sub(replaced).saturating_add(count)
        });
        if total > EVALUATIONS_PER_VALUE {
            return self.check_budget(&child, depth);
        }
        fold_state(next, child);
        Ok(())
    }

    /// Checks `base` (what a child gets that no name or position singles out) against the
    /// budget and adds it to the states of the next level; returns its total.
    fn merge_base(
        &mut self,
        next: &mut States,
        base: &HashMap<Index, u64>,
        depth: usize,
    ) -> Result<u64, String> {
        self.spend(base.len())?;
        self.check_budget(base, depth)?;
        fold_state(next, base.clone());
        Ok(base.values().sum())
    }
}

/// The count vectors of one level, keyed by which indices they hold. Different children are
/// evaluated against different subschemas (one `$defs` type each, say), so a level keeps one
/// vector per set of subschemas rather than one for all; vectors over the same set are merged by
/// their pointwise maximum, which bounds each.
type States = HashMap<Vec<Index>, HashMap<Index, u64>>;

fn fold_state(states: &mut States, mut counts: HashMap<Index, u64>) {
    counts.retain(|_, count| *count > 0);
    if counts.is_empty() {
        return;
    }
    let mut support: Vec<Index> = counts.keys().copied().collect();
    support.sort_unstable();
    let state = states.entry(support).or_default();
    for (index, count) in counts {
        let entry = state.entry(index).or_default();
        *entry = (*entry).max(count);
    }
}

/// The entries of `base + plus - minus` that differ from `base`. `minus` was added into `base`
/// before, and `base` passed the budget, so the subtraction is exact.
fn apply(
    base: &HashMap<Index, u64>,
    plus: &HashMap<Index, u64>,
    minus: &HashMap<Index, u64>,
) -> HashMap<Index, u64> {
    let mut changed = HashMap::new();
    for index in plus.keys().chain(minus.keys()) {
        let had = base.get(index).copied().unwrap_or(0);
        let value = had
            .saturating_sub(minus.get(index).copied().unwrap_or(0))
            .saturating_add(plus.get(index).copied().unwrap_or(0));
        changed.insert(*index, value);
    }
    changed
}
