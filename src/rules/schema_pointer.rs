//! What a tool's input schema declares at a JSON Pointer: a field, nothing, or one index of a list.

use serde_json::Value;

use super::condition::{SchemaLookup, array_index, unescape_token};

/// Looks `pointer` up in `root`: each token must be a listed property (under `properties`, also
/// inside `allOf` / `anyOf` / `oneOf` / `if` / `then` / `else` branches and local `$ref`s), a
/// tuple position (`prefixItems`, or an `items` array), or `-` for "any element" of a list
/// (`items`). A number that picks an element of a list the schema declares with `items` is
/// [`SchemaLookup::ListIndex`]: a rule on one element says nothing about the others.
pub(crate) fn lookup(root: &Value, pointer: &str) -> SchemaLookup {
    match walk(root, pointer) {
        None => SchemaLookup::Missing,
        Some((_, true)) => SchemaLookup::ListIndex,
        Some((_, false)) => SchemaLookup::Declared,
    }
}

/// The JSON types the schemas at `pointer` declare (`"type"`, a name or a list; a list's
/// `items` for a list, so a rule judging each element sees its elements' types); empty when
/// none declares one or the pointer names no field.
pub(crate) fn types_at(root: &Value, pointer: &str) -> Vec<String> {
    let mut types = Vec::new();
    if let Some((frontier, _)) = walk(root, pointer) {
        declared_types(root, &frontier, 0, &mut types);
    }
    types.sort();
    types.dedup();
    types
}

/// Adds the types `frontier`'s schemas declare to `out`, a list's by its `items` (lists of
/// lists to a depth of 4).
fn declared_types(root: &Value, frontier: &[&Value], depth: usize, out: &mut Vec<String>) {
    for schema in expand(root, frontier) {
        let declared: Vec<&str> = match schema.get("type") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        for name in declared {
            let items = schema.get("items").filter(|items| items.is_object());
            match items {
                Some(items) if name == "array" && depth < 4 => {
                    declared_types(root, &[items], depth + 1, out);
                }
                _ => out.push(name.to_owned()),
            }
        }
    }
}

/// The schemas `pointer` reaches and whether it picked one element of a list; `None` when it
/// names no field.
fn walk<'a>(root: &'a Value, pointer: &str) -> Option<(Vec<&'a Value>, bool)> {
    if pointer.is_empty() {
        return Some((vec![root], false));
    }
    let mut list_index = false;
    let mut frontier = vec![root];
    for token in pointer.split('/').skip(1).map(unescape_token) {
        let mut next = Vec::new();
        let mut via_items = false;
        for schema in expand(root, &frontier) {
            let tuple = schema
                .get("prefixItems")
                .or_else(|| schema.get("items").filter(|items| items.is_array()))
                .and_then(Value::as_array);
            let items = schema
                .get("items")
                .filter(|items| items.is_object())
                .or_else(|| {
                    schema
                        .get("additionalItems")
                        .filter(|items| items.is_object())
                });
            if let Some(property) = schema.get("properties").and_then(|p| p.get(&token)) {
                next.push(property);
            }
            if token == "-" {
                next.extend(tuple.into_iter().flatten());
                next.extend(items);
            } else if let Some(index) = array_index(&token) {
                // Also when a property has this name: a value may be a list (`"type":
                // ["object", "array"]`), and then the pointer picks one of its elements.
                match tuple.and_then(|tuple| tuple.get(index)) {
                    Some(position) => next.push(position),
                    None => {
                        if let Some(items) = items {
                            next.push(items);
                            via_items = true;
                        }
                    }
                }
            }
        }
        if next.is_empty() {
            return None;
        }
        list_index |= via_items;
        frontier = next;
    }
    Some((frontier, list_index))
}

/// The schemas in `frontier` with everything they apply to the same value: local `$ref` targets
/// and combinator branches. Bounded: each schema is expanded through at most 32 hops.
fn expand<'a>(root: &'a Value, frontier: &[&'a Value]) -> Vec<&'a Value> {
    let mut expanded = Vec::new();
    let mut pending: Vec<(&Value, usize)> = frontier.iter().map(|schema| (*schema, 0)).collect();
    while let Some((schema, hops)) = pending.pop() {
        if hops > 32 {
            continue;
        }
        expanded.push(schema);
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|fragment| root.pointer(fragment))
        {
            pending.push((target, hops + 1));
        }
        for combinator in ["allOf", "anyOf", "oneOf"] {
            if let Some(branches) = schema.get(combinator).and_then(Value::as_array) {
                pending.extend(branches.iter().map(|branch| (branch, hops + 1)));
            }
        }
        for conditional in ["if", "then", "else"] {
            if let Some(branch) = schema.get(conditional).filter(|b| b.is_object()) {
                pending.push((branch, hops + 1));
            }
        }
    }
    expanded
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A schema whose field `x` is declared `depth` hops below the root: through a chain of
    /// `$ref`s (`"ref"`), of nested `if` branches (`"if"`) or of nested `allOf`s (`"allOf"`).
    fn declared_at(depth: usize, by: &str) -> serde_json::Value {
        let leaf = json!({"properties": {"x": {"type": "string"}}});
        match by {
            "ref" => {
                let mut defs = serde_json::Map::new();
                for hop in 1..depth {
                    let next = format!("#/$defs/d{}", hop + 1);
                    defs.insert(format!("d{hop}"), json!({ "$ref": next }));
                }
                defs.insert(format!("d{depth}"), leaf);
                json!({"$ref": "#/$defs/d1", "$defs": defs})
            }
            "if" => (0..depth).fold(leaf, |inner, _| json!({ "if": inner })),
            _ => (0..depth).fold(leaf, |inner, _| json!({ "allOf": [inner] })),
        }
    }

    #[test]
    fn the_types_at_a_pointer_are_read_through_lists_refs_and_combinators() {
        let schema = json!({
            "$defs": {"money": {"type": "string"}},
            "properties": {
                "one": {"type": "string"},
                "nullable": {"type": ["integer", "null"]},
                "list": {"type": "array", "items": {"type": "integer"}},
                "bare_list": {"type": "array"},
                "list_or_text": {"type": ["string", "array"], "items": {"type": "integer"}},
                "referred": {"$ref": "#/$defs/money"},
                "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "untyped": {"enum": ["a"]}
            }
        });
        let at = |pointer: &str| types_at(&schema, pointer);
        assert_eq!(at("/one"), ["string"]);
        assert_eq!(at("/nullable"), ["integer", "null"]);
        assert_eq!(at("/list"), ["integer"]);
        assert_eq!(at("/bare_list"), ["array"]);
        assert_eq!(at("/list_or_text"), ["integer", "string"]);
        assert_eq!(at("/referred"), ["string"]);
        assert_eq!(at("/either"), ["null", "string"]);
        assert!(at("/untyped").is_empty());
        assert!(at("/missing").is_empty());
        // Lists of lists are read to a depth of four.
        let nested = |depth: usize| {
            (0..depth).fold(
                json!({"type": "integer"}),
                |inner, _| json!({"type": "array", "items": inner}),
            )
        };
        assert_eq!(types_at(&nested(4), ""), ["integer"]);
        assert_eq!(types_at(&nested(5), ""), ["array"]);
    }

    #[test]
    fn expansion_follows_refs_branches_and_combinators_through_exactly_32_hops() {
        for by in ["ref", "if", "allOf"] {
            let at = |depth| lookup(&declared_at(depth, by), "/x");
            assert_eq!(at(32), SchemaLookup::Declared, "{by}");
            assert_eq!(at(33), SchemaLookup::Missing, "{by}");
        }
    }

    #[test]
    fn schema_pointers_follow_properties_items_refs_and_combinators() {
        let schema = json!({
            "$defs": {"opts": {"type": "object", "properties": {"cwd": {"type": "string"}}}},
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "argv": {"type": "array", "items": {"type": "string"}},
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
                "files": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}}}},
                "options": {"$ref": "#/$defs/opts"},
                "a/b": {"type": "string"}
            },
            "allOf": [{"properties": {"mode": {"type": "string"}}}],
            "if": {"properties": {"kind": {"const": "x"}}}
        });
        for declared in [
            "/path",
            "/options/cwd",
            "/mode",
            "/a~1b",
            "/kind",
            "/pair/0",
            "/pair/1",
            "/argv/-",
            "/files/-/path",
            "/files/-",
            "",
        ] {
            assert_eq!(
                lookup(&schema, declared),
                SchemaLookup::Declared,
                "{declared}"
            );
        }
        for missing in [
            "/pth",
            "/argv/x",
            "/options/home",
            "/path/0",
            "/a/b",
            "/pair/-x",
            "/files/-/name",
        ] {
            assert_eq!(lookup(&schema, missing), SchemaLookup::Missing, "{missing}");
        }
        for index in ["/argv/0", "/argv/7", "/files/0/path", "/pair/2"] {
            let expected = if index == "/pair/2" {
                SchemaLookup::Missing
            } else {
                SchemaLookup::ListIndex
            };
            assert_eq!(lookup(&schema, index), expected, "{index}");
        }
    }

    #[test]
    fn a_property_named_like_an_index_on_a_value_that_may_be_a_list_is_a_list_index() {
        let schema = json!({"properties": {"x": {
            "type": ["object", "array"],
            "properties": {"0": {"type": "string"}},
            "items": {"type": "string"}
        }}});
        assert_eq!(lookup(&schema, "/x/0"), SchemaLookup::ListIndex);
        let object_only = json!({"properties": {"x": {"properties": {"0": {"type": "string"}}}}});
        assert_eq!(lookup(&object_only, "/x/0"), SchemaLookup::Declared);
    }

    #[test]
    fn self_referencing_schemas_terminate() {
        let schema = json!({"$ref": "#", "properties": {"a": {"$ref": "#"}}});
        assert_eq!(lookup(&schema, "/a/a/a"), SchemaLookup::Declared);
        assert_eq!(lookup(&schema, "/b"), SchemaLookup::Missing);
    }
}
