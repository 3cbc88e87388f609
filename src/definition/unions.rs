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
    find(schema, schema, &mut pointer, 0)
}

/// Generated schemas nest as deep as the type; definitions already refuse schemas deeper than
/// [`MAX_SCHEMA_DEPTH`](super::MAX_SCHEMA_DEPTH), so this bound is never the one reached.
const MAX_DEPTH: usize = 256;

fn find(root: &Value, schema: &Value, pointer: &mut String, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    match schema {
        Value::Object(map) => {
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
            for (key, value) in map {
                let parent = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                if let Some(found) = find(root, value, pointer, depth + 1) {
                    return Some(found);
                }
                pointer.truncate(parent);
            }
            None
        }
        Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                let parent = pointer.len();
                pointer.push('/');
                pointer.push_str(&index.to_string());
                if let Some(found) = find(root, value, pointer, depth + 1) {
                    return Some(found);
                }
                pointer.truncate(parent);
            }
            None
        }
        _ => None,
    }
}

/// Whether every variant but `null` names itself: at most one such variant, or each one a set of
/// constants (unit variants), an object with a required constant property (an internal or
/// adjacent tag), or an object of exactly one required property and nothing else (an external
/// tag).
fn tagged(root: &Value, branches: &[Value]) -> bool {
    let variants: Vec<&Value> = branches
        .iter()
        .map(|branch| resolve(root, branch))
        .filter(|branch| !is_null(branch))
        .collect();
    variants.len() <= 1 || variants.iter().all(|variant| names_itself(variant))
}

fn names_itself(variant: &Value) -> bool {
    if variant.get("const").is_some() || variant.get("enum").is_some_and(Value::is_array) {
        return true;
    }
    let required: Vec<&str> = variant
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = variant.get("properties").and_then(Value::as_object);
    let Some(properties) = properties else {
        return false;
    };
    let internal = required.iter().any(|name| {
        properties
            .get(*name)
            .is_some_and(|property| property.get("const").is_some())
    });
    let external = required.len() == 1
        && properties.len() == 1
        && properties.contains_key(required[0])
        && variant.get("additionalProperties") == Some(&Value::Bool(false));
    internal || external
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
    }
}
