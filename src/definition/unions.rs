//! Unions in a generated schema that no tag tells apart, which a typed tool refuses.
//!
//! A rule judges a field at a JSON Pointer. In a union whose variants carry a tag (serde's
//! external, internal or adjacent tagging), a call names its variant and a rule on that
//! variant's fields judges every call of it. In an untagged union, a value can take any variant
//! whose shape it fits, and the handler may read from one variant what a rule watches in another
//! (`"/etc/shadow"` as a plain string where the other variant is `{"path": …}`): the rule on
//! `/target/path` never sees it. Such types are refused when the tool is defined.

use serde_json::Value;

/// The first union in `schema` (a JSON Pointer to its `anyOf` / `oneOf`) whose variants are not
/// told apart by a tag; `None` if every union is tagged. A union with one variant besides
/// `null` (an `Option`) is not a choice between variants.
pub(super) fn first_untagged(schema: &Value) -> Option<String> {
    let mut pointer = String::new();
    find(schema, schema, &mut pointer, 0, Holds::Schema)
}

/// Generated schemas nest as deep as the type; definitions already refuse schemas deeper than
/// [`MAX_SCHEMA_DEPTH`](super::MAX_SCHEMA_DEPTH), so this bound is never the one reached.
const MAX_DEPTH: usize = 256;

/// What a JSON value in the schema is: a schema, or a map from names to schemas.
#[derive(Clone, Copy)]
enum Holds {
    Schema,
    /// `properties`, `$defs`, …: its keys are names, not keywords.
    Names,
}

/// Keywords whose values are data (an instance), not schemas: nothing in them is a union.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];

/// Keywords whose values map names to schemas.
const NAME_MAPS: [&str; 5] = [
    "properties",
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

fn find(
    root: &Value,
    value: &Value,
    pointer: &mut String,
    depth: usize,
    holds: Holds,
) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    match value {
        Value::Object(map) => {
            if let Holds::Schema = holds {
                // `"type": ["string", "object"]`: a union of types, each a variant.
                if let Some(Value::Array(types)) = map.get("type")
                    && types
                        .iter()
                        .filter(|kind| kind.as_str() != Some("null"))
                        .count()
                        > 1
                {
                    return Some(format!("{pointer}/type"));
                }
                for combinator in ["anyOf", "oneOf"] {
                    if let Some(Value::Array(branches)) = map.get(combinator)
                        && !tagged(root, branches)
                    {
                        return Some(format!("{pointer}/{combinator}"));
                    }
                }
            }
            for (key, child) in map {
                let child_holds = match holds {
                    Holds::Names => Holds::Schema,
                    Holds::Schema if DATA_KEYWORDS.contains(&key.as_str()) => continue,
                    Holds::Schema if NAME_MAPS.contains(&key.as_str()) => Holds::Names,
                    Holds::Schema => Holds::Schema,
                };
                let parent = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                if let Some(found) = find(root, child, pointer, depth + 1, child_holds) {
                    return Some(found);
                }
                pointer.truncate(parent);
            }
            None
        }
        // A list of schemas (`anyOf`, `allOf`, `prefixItems`, …).
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let parent = pointer.len();
                pointer.push('/');
                pointer.push_str(&index.to_string());
                if let Some(found) = find(root, item, pointer, depth + 1, Holds::Schema) {
                    return Some(found);
                }
                pointer.truncate(parent);
            }
            None
        }
        _ => None,
    }
}

/// Whether the variants (but `null`) name themselves, so a value fits at most one: at most one
/// variant; else constants (unit variants) that are all distinct, and objects that are either
/// all closed with one required key each, the keys distinct (an external tag), or all hold one
/// required property with a constant, the constants distinct (an internal or adjacent tag).
fn tagged(root: &Value, branches: &[Value]) -> bool {
    let variants: Vec<&Value> = branches
        .iter()
        .map(|branch| resolve(root, branch))
        .filter(|branch| !is_null(branch))
        .collect();
    if variants.len() <= 1 {
        return true;
    }
    let mut constants: Vec<&Value> = Vec::new();
    let mut objects: Vec<&Value> = Vec::new();
    for variant in variants {
        if let Some(constant) = variant.get("const") {
            constants.push(constant);
        } else if let Some(Value::Array(values)) = variant.get("enum") {
            constants.extend(values);
        } else {
            objects.push(variant);
        }
    }
    if !distinct(&constants) || constants.iter().any(|c| c.is_object()) && !objects.is_empty() {
        return false;
    }
    if objects.len() <= 1 {
        return objects
            .iter()
            .all(|object| object.get("type").and_then(Value::as_str) == Some("object"))
            || objects.is_empty();
    }
    externally_tagged(&objects) || internally_tagged(&objects)
}

fn distinct(values: &[&Value]) -> bool {
    values
        .iter()
        .enumerate()
        .all(|(index, value)| !values[..index].contains(value))
}

fn required(variant: &Value) -> Vec<&str> {
    variant
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Each object closed, with exactly one property, required, and no two with the same.
fn externally_tagged(objects: &[&Value]) -> bool {
    let mut keys: Vec<&str> = Vec::new();
    for object in objects {
        let required = required(object);
        let Some(properties) = object.get("properties").and_then(Value::as_object) else {
            return false;
        };
        let closed = object.get("additionalProperties") == Some(&Value::Bool(false));
        if required.len() != 1 || properties.len() != 1 || !closed {
            return false;
        }
        if !properties.contains_key(required[0]) || keys.contains(&required[0]) {
            return false;
        }
        keys.push(required[0]);
    }
    true
}

/// One property every object requires and holds a constant in, the constants all distinct.
fn internally_tagged(objects: &[&Value]) -> bool {
    let tag_of = |object: &Value, key: &str| -> Option<Value> {
        if !required(object).contains(&key) {
            return None;
        }
        object.get("properties")?.get(key)?.get("const").cloned()
    };
    let Some(first) = objects.first() else {
        return false;
    };
    required(first).into_iter().any(|key| {
        let tags: Option<Vec<Value>> = objects.iter().map(|object| tag_of(object, key)).collect();
        tags.is_some_and(|tags| distinct(&tags.iter().collect::<Vec<_>>()))
    })
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const") == Some(&Value::Null)
}

/// A branch that is only a local `$ref`, followed (at most 32 hops, as the rule loader does).
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..32 {
        let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|fragment| root.pointer(fragment))
        else {
            break;
        };
        schema = target;
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unions_are_told_apart_by_tags_only() {
        let object = |properties: Value, required: Value| json!({"type": "object", "properties": properties, "required": required});
        let tag = |name: &str| json!({"type": "string", "const": name});
        let cases = [
            // (union branches, tagged?)
            (json!([{"type": "string"}, {"type": "null"}]), true),
            (json!([{"$ref": "#/$defs/x"}, {"type": "null"}]), true),
            (json!([{"enum": ["a", "b"]}, {"const": "c"}]), true),
            (
                json!([
                    object(json!({"op": tag("a"), "p": {}}), json!(["op", "p"])),
                    object(json!({"op": tag("b")}), json!(["op"]))
                ]),
                true,
            ),
            (
                json!([{"type": "object", "properties": {"A": {}}, "required": ["A"], "additionalProperties": false},
                       {"enum": ["Unit"]}]),
                true,
            ),
            (json!([{"type": "string"}, {"type": "integer"}]), false),
            (
                json!([object(json!({"path": {}}), json!(["path"])), {"type": "string"}]),
                false,
            ),
            // A tag that is not required can be left out, and then nothing tells the variants apart.
            (
                json!([
                    object(json!({"op": tag("a")}), json!([])),
                    object(json!({"op": tag("b")}), json!([]))
                ]),
                false,
            ),
            // A constant both variants hold (a shared header), or tags under different keys:
            // one value can fit both.
            (
                json!([
                    object(json!({"v": tag("1"), "a": {}}), json!(["v", "a"])),
                    object(json!({"v": tag("1"), "b": {}}), json!(["v", "b"]))
                ]),
                false,
            ),
            (
                json!([
                    object(json!({"a": tag("x")}), json!(["a"])),
                    object(json!({"b": tag("y")}), json!(["b"]))
                ]),
                false,
            ),
            // Two unit variants accepting one constant, or a constant beside an open string.
            (json!([{"const": "a"}, {"enum": ["a", "b"]}]), false),
            (json!([{"const": "a"}, {"type": "string"}]), false),
            // Two external tags under one key.
            (
                json!([{"type": "object", "properties": {"A": {}}, "required": ["A"], "additionalProperties": false},
                       {"type": "object", "properties": {"A": {}}, "required": ["A"], "additionalProperties": false}]),
                false,
            ),
            // A constant that is an object beside an object variant: one value can fit both.
            (
                json!([{"const": {"a": 1}}, object(json!({"a": {}}), json!(["a"]))]),
                false,
            ),
            // Closed, one required key, but a second (optional) property: not the shape serde
            // writes for an external tag, so refused rather than guessed at.
            (
                json!([{"type": "object", "properties": {"A": {}, "x": {}}, "required": ["A"], "additionalProperties": false},
                       {"type": "object", "properties": {"B": {}}, "required": ["B"], "additionalProperties": false}]),
                false,
            ),
            // One required property, but the object stays open: not an external tag.
            (
                json!([{"type": "object", "properties": {"A": {}}, "required": ["A"]},
                       {"type": "object", "properties": {"B": {}}, "required": ["B"]}]),
                false,
            ),
        ];
        for (branches, expected) in cases {
            let root = json!({"$defs": {"x": {"type": "object"}}});
            let branches = branches.as_array().unwrap().clone();
            assert_eq!(tagged(&root, &branches), expected, "{branches:?}");
        }
    }

    #[test]
    fn the_first_untagged_union_is_named_by_its_pointer() {
        let schema = json!({
            "$defs": {"T": {"anyOf": [{"type": "string"}, {"type": "object"}]}},
            "properties": {"ok": {"anyOf": [{"type": "string"}, {"type": "null"}]}}
        });
        assert_eq!(first_untagged(&schema).as_deref(), Some("/$defs/T/anyOf"));
        assert_eq!(
            first_untagged(&json!({"properties": {"a": {"type": "string"}}})),
            None
        );
        let types = json!({"properties": {"a": {"type": ["string", "object"]}, "b": {"type": ["string", "null"]}}});
        assert_eq!(
            first_untagged(&types).as_deref(),
            Some("/properties/a/type")
        );
        // Unions inside lists of schemas (a tagged union's variant written inline) and under
        // `items` are found too.
        let inline = json!({"oneOf": [
            {"type": "object", "required": ["op"], "properties": {"op": {"const": "a"},
             "v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}},
            {"type": "object", "required": ["op"], "properties": {"op": {"const": "b"}}}]});
        assert_eq!(
            first_untagged(&inline).as_deref(),
            Some("/oneOf/0/properties/v/anyOf")
        );
        let listed = json!({"properties": {"l": {"type": "array",
            "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}});
        assert_eq!(
            first_untagged(&listed).as_deref(),
            Some("/properties/l/items/anyOf")
        );
        // Data is not a schema (a default that looks like one), and a property may be named
        // like a keyword.
        let data = json!({"properties": {
            "a": {"type": "object", "default": {"type": ["a", "b"], "anyOf": [1, 2]}},
            "enum": {"type": "string", "examples": [{"oneOf": [{}, {}]}]},
            "default": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}});
        assert_eq!(
            first_untagged(&data).as_deref(),
            Some("/properties/default/anyOf")
        );
    }
}
