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
//! ([`MAX_ARGUMENT_DEPTH`]); if one argument value could be evaluated more than
//! [`EVALUATIONS_PER_VALUE`] times, the schema is refused. Branches are never assumed exclusive
//! (the analysis does not read `const` or `type`), patterns are assumed to match every name, and
//! `then` and `else` both count.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use crate::definition::MAX_ARGUMENT_DEPTH;

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
pub(crate) fn check(schema: &Value) -> Result<(), String> {
    let graph = Graph::build(schema)?;
    Analysis::new(&graph).run()
}

/// A graph index: `node * MODES + mode`.
type Index = u32;

/// A sparse count vector, sorted by index.
type Counts = Rc<[(Index, u64)]>;

#[derive(Default)]
struct Node<'a> {
    value: Option<&'a Value>,
    pointer: String,
    /// The nearest enclosing node (or itself) that declares `$id`, or the root: where `#…`
    /// references are resolved.
    resource: u32,
    /// Same-value edges per mode, to graph indices.
    same: [Vec<Index>; MODES as usize],
    properties: Vec<(&'a str, u32)>,
    /// Apply to every property: `patternProperties` values, `propertyNames`.
    any_property: Vec<u32>,
    /// Applies to every property not named in `properties`.
    additional: Option<u32>,
    unevaluated_properties: Option<u32>,
    prefix: Vec<u32>,
    /// Apply to the items after `prefix`: `items` (schema form), `additionalItems`.
    rest: Vec<u32>,
    /// Apply to every item: `contains`.
    any_item: Vec<u32>,
    unevaluated_items: Option<u32>,
}

struct Graph<'a> {
    nodes: Vec<Node<'a>>,
    by_address: HashMap<usize, u32>,
    ids: Vec<(&'a str, u32)>,
    anchors: HashMap<&'a str, Vec<u32>>,
    dynamic_anchors: HashMap<&'a str, Vec<u32>>,
    recursive_anchors: Vec<u32>,
}

/// Roles whose keyword holds a map of subschemas.
const MAPS: [&str; 4] = [
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
];

/// The role of keyword `key` holding `value`, for keywords that hold subschemas. Keywords of
/// every draft count: a keyword a draft ignores only makes the bound more conservative.
fn role(key: &str, value: &Value) -> Option<&'static str> {
    Some(match key {
        "allOf" => "allOf",
        "anyOf" => "anyOf",
        "oneOf" => "oneOf",
        "not" => "not",
        "if" => "if",
        "then" => "then",
        "else" => "else",
        "dependentSchemas" | "dependencies" => "dependentSchemas",
        "properties" => "properties",
        "patternProperties" => "patternProperties",
        "additionalProperties" => "additionalProperties",
        "unevaluatedProperties" => "unevaluatedProperties",
        "propertyNames" => "propertyNames",
        "prefixItems" => "prefixItems",
        // Draft 4 to 7: an array of `items` is what `prefixItems` is now.
        "items" if value.is_array() => "prefixItems",
        "items" | "additionalItems" => "rest",
        "contains" => "contains",
        "unevaluatedItems" => "unevaluatedItems",
        "$defs" | "definitions" => "$defs",
        _ => return None,
    })
}

fn address(value: &Value) -> usize {
    std::ptr::from_ref(value) as usize
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

impl<'a> Graph<'a> {
    fn build(root: &'a Value) -> Result<Self, String> {
        let mut graph = Graph {
            nodes: Vec::new(),
            by_address: HashMap::new(),
            ids: Vec::new(),
            anchors: HashMap::new(),
            dynamic_anchors: HashMap::new(),
            recursive_anchors: Vec::new(),
        };
        graph.intern(root, String::new(), 0);
        // First every node in a schema position, so identifiers and anchors are known before any
        // reference is resolved; reference targets elsewhere are added while edges are built.
        let mut next = 0;
        while next < graph.nodes.len() {
            graph.walk(next as u32);
            next += 1;
        }
        let mut next = 0;
        while next < graph.nodes.len() {
            graph.link(next as u32)?;
            next += 1;
        }
        Ok(graph)
    }

    fn intern(&mut self, value: &'a Value, pointer: String, resource: u32) -> u32 {
        if let Some(&id) = self.by_address.get(&address(value)) {
            return id;
        }
        let id = self.nodes.len() as u32;
        self.by_address.insert(address(value), id);
        let declares_id = value
            .as_object()
            .and_then(|map| map.get("$id").or_else(|| map.get("id")))
            .and_then(Value::as_str);
        let resource = match declares_id {
            Some(declared) => {
                self.ids.push((declared, id));
                id
            }
            None => resource,
        };
        if let Some(map) = value.as_object() {
            if let Some(name) = map.get("$anchor").and_then(Value::as_str) {
                self.anchors.entry(name).or_default().push(id);
            }
            if let Some(name) = map.get("$dynamicAnchor").and_then(Value::as_str) {
                self.dynamic_anchors.entry(name).or_default().push(id);
            }
            if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
                self.recursive_anchors.push(id);
            }
        }
        self.nodes.push(Node {
            value: Some(value),
            pointer,
            resource,
            ..Node::default()
        });
        id
    }

    /// Interns a subschema found at `key` (and `index`, for arrays and maps) of node `id`.
    fn sub(&mut self, id: u32, value: &'a Value, path: &[&str]) -> Option<u32> {
        if !(value.is_object() || value.is_boolean()) {
            return None;
        }
        let mut pointer = self.nodes[id as usize].pointer.clone();
        for token in path {
            pointer.push('/');
            pointer.push_str(&escape(token));
        }
        let resource = self.nodes[id as usize].resource;
        Some(self.intern(value, pointer, resource))
    }

    /// Every subschema of node `id`, each with its role (the keyword, `items` split by form) and,
    /// for maps, its name. Interns them, so it also walks `$defs`.
    fn subschemas(&mut self, id: u32) -> Vec<(&'static str, u32, Option<&'a str>)> {
        let Some(Value::Object(map)) = self.nodes[id as usize].value else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (key, value) in map {
            let Some(role) = role(key, value) else {
                continue;
            };
            match value {
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        let token = index.to_string();
                        if let Some(sub) = self.sub(id, item, &[key, &token]) {
                            found.push((role, sub, None));
                        }
                    }
                }
                Value::Object(entries) if MAPS.contains(&role) => {
                    for (name, item) in entries {
                        if let Some(sub) = self.sub(id, item, &[key, name]) {
                            found.push((role, sub, Some(name.as_str())));
                        }
                    }
                }
                _ => {
                    if let Some(sub) = self.sub(id, value, &[key]) {
                        found.push((role, sub, None));
                    }
                }
            }
        }
        found
    }

    fn walk(&mut self, id: u32) {
        self.subschemas(id);
    }

    /// Builds the edges of node `id`.
    fn link(&mut self, id: u32) -> Result<(), String> {
        let node_index = |node: u32, mode: u32| node * MODES + mode;
        let mut same: [Vec<Index>; 3] = Default::default();
        let mut marks_evaluated = false;
        let push_same = |same: &mut [Vec<Index>; 3], role: &str, target: u32| {
            // Listing may check `is_valid` first, then list: it reaches the target in `L`.
            same[V as usize].push(node_index(target, V));
            same[L as usize].push(node_index(target, L));
            match role {
                "allOf" | "anyOf" | "oneOf" | "if" => {
                    same[U as usize].push(node_index(target, V));
                    same[U as usize].push(node_index(target, U));
                }
                "not" => {}
                _ => same[U as usize].push(node_index(target, U)),
            }
        };
        for (role, sub, name) in self.subschemas(id) {
            let node = &mut self.nodes[id as usize];
            match role {
                "allOf" | "anyOf" | "oneOf" | "not" | "if" | "then" | "else"
                | "dependentSchemas" => push_same(&mut same, role, sub),
                "properties" => node.properties.push((name.unwrap_or_default(), sub)),
                "patternProperties" | "propertyNames" => node.any_property.push(sub),
                "additionalProperties" => node.additional = Some(sub),
                "unevaluatedProperties" => {
                    node.unevaluated_properties = Some(sub);
                    marks_evaluated = true;
                }
                "prefixItems" => node.prefix.push(sub),
                "rest" => node.rest.push(sub),
                "contains" => node.any_item.push(sub),
                "unevaluatedItems" => {
                    node.unevaluated_items = Some(sub);
                    marks_evaluated = true;
                }
                _ => {}
            }
        }
        for target in self.references(id)? {
            push_same(&mut same, "$ref", target);
        }
        // Listing may run `is_valid` on the whole node first.
        same[L as usize].push(node_index(id, V));
        if marks_evaluated {
            same[V as usize].push(node_index(id, U));
        }
        self.nodes[id as usize].same = same;
        Ok(())
    }

    /// The nodes `$ref`, `$dynamicRef` and `$recursiveRef` of node `id` may lead to.
    fn references(&mut self, id: u32) -> Result<Vec<u32>, String> {
        let Some(Value::Object(map)) = self.nodes[id as usize].value else {
            return Ok(Vec::new());
        };
        let mut targets = Vec::new();
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            targets.extend(self.resolve(id, reference)?);
        }
        if let Some(reference) = map.get("$dynamicRef").and_then(Value::as_str) {
            let mut dynamic = self.resolve(id, reference)?;
            if let Some((_, name)) = reference.split_once('#') {
                dynamic.extend(self.dynamic_anchors.get(name).into_iter().flatten());
            }
            dynamic.sort_unstable();
            dynamic.dedup();
            targets.extend(dynamic);
        }
        if map.contains_key("$recursiveRef") {
            let mut recursive = vec![0];
            recursive.extend(&self.recursive_anchors);
            recursive.sort_unstable();
            recursive.dedup();
            targets.extend(recursive);
        }
        Ok(targets)
    }

    fn resolve(&mut self, id: u32, reference: &str) -> Result<Vec<u32>, String> {
        let unresolved = || {
            format!(
                "the reference {reference:?} at {:?} cannot be followed by the cost analysis; \
                 write local references as \"#/$defs/...\"",
                self.nodes[id as usize].pointer
            )
        };
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let resource = if base.is_empty() {
            self.nodes[id as usize].resource
        } else {
            let matches: Vec<u32> = self
                .ids
                .iter()
                .filter(|(declared, _)| {
                    *declared == base
                        || declared.ends_with(&format!("/{base}"))
                        || base.ends_with(&format!("/{declared}"))
                })
                .map(|&(_, node)| node)
                .collect();
            match matches.as_slice() {
                [only] => *only,
                _ => return Err(unresolved()),
            }
        };
        if fragment.is_empty() {
            return Ok(vec![resource]);
        }
        if !fragment.starts_with('/') {
            let named = self
                .anchors
                .get(fragment)
                .into_iter()
                .chain(self.dynamic_anchors.get(fragment))
                .flatten()
                .copied();
            let mut all: Vec<u32> = named.collect();
            let local: Vec<u32> = all
                .iter()
                .copied()
                .filter(|&node| self.nodes[node as usize].resource == resource)
                .collect();
            if !local.is_empty() {
                all = local;
            }
            all.sort_unstable();
            all.dedup();
            return if all.is_empty() {
                Err(unresolved())
            } else {
                Ok(all)
            };
        }
        let decoded = percent_decode(fragment).ok_or_else(unresolved)?;
        let start = self.nodes[resource as usize].value.ok_or_else(unresolved)?;
        let target = decoded
            .split('/')
            .skip(1)
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .try_fold(start, |value, token| match value {
                Value::Object(map) => map.get(&token),
                Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            })
            .filter(|value| value.is_object() || value.is_boolean())
            .ok_or_else(unresolved)?;
        let pointer = format!("{}{decoded}", self.nodes[resource as usize].pointer);
        let resource_of_target = self.nodes[resource as usize].resource;
        Ok(vec![self.intern(target, pointer, resource_of_target)])
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

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
}

impl<'g, 'a> Analysis<'g, 'a> {
    fn new(graph: &'g Graph<'a>) -> Self {
        Self {
            graph,
            closures: vec![None; graph.nodes.len() * MODES as usize],
            on_stack: vec![false; graph.nodes.len() * MODES as usize],
            steps: 0,
            depth: 0,
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
        for depth in 1..=MAX_ARGUMENT_DEPTH {
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
