//! The graph the cost analysis walks: every subschema a node, with its "same value" edges per
//! mode and its "child value" subschemas grouped by which child they reach.

use std::collections::HashMap;

use serde_json::Value;

use super::{Index, L, MODES, U, V};

#[derive(Default)]
pub(super) struct Node<'a> {
    pub(super) value: Option<&'a Value>,
    pub(super) pointer: String,
    /// The nearest enclosing node (or itself) that declares `$id`, or the root: where `#…`
    /// references are resolved.
    pub(super) resource: u32,
    /// Same-value edges per mode, to graph indices.
    pub(super) same: [Vec<Index>; MODES as usize],
    pub(super) properties: Vec<(&'a str, u32)>,
    /// Apply to every property: `patternProperties` values, `propertyNames`.
    pub(super) any_property: Vec<u32>,
    /// Applies to every property not named in `properties`.
    pub(super) additional: Option<u32>,
    pub(super) unevaluated_properties: Option<u32>,
    pub(super) prefix: Vec<u32>,
    /// Apply to the items after `prefix`: `items` (schema form), `additionalItems`.
    pub(super) rest: Vec<u32>,
    /// Apply to every item: `contains`.
    pub(super) any_item: Vec<u32>,
    pub(super) unevaluated_items: Option<u32>,
}

pub(super) struct Graph<'a> {
    pub(super) nodes: Vec<Node<'a>>,
    pub(super) by_address: HashMap<usize, u32>,
    pub(super) ids: Vec<(&'a str, u32)>,
    pub(super) anchors: HashMap<&'a str, Vec<u32>>,
    pub(super) dynamic_anchors: HashMap<&'a str, Vec<u32>>,
    pub(super) recursive_anchors: Vec<u32>,
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
    pub(super) fn build(root: &'a Value) -> Result<Self, String> {
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
