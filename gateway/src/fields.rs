//! The argument fields of an input schema, as the JSON Pointers a policy rule names.

use serde_json::{Value, json};

/// How deep a schema is walked, and how many fields are listed at most: an upstream's schema may
/// be as large or as recursive as it likes.
const MAX_DEPTH: usize = 8;
const MAX_FIELDS: usize = 500;

/// Every field `schema` declares: `{"pointer": "/path", "type": "string", "required": true}`.
/// Properties become `/name`, list items `/name/-` (a rule on `-` judges every element); the
/// branches of `allOf`, `anyOf` and `oneOf` are walked as if they were one schema, and `$ref`s
/// within the schema are followed.
pub fn fields(schema: &Value) -> Vec<Value> {
    let mut found = Vec::new();
    walk(schema, schema, "", true, 0, &mut found);
    found
}

fn walk(
    root: &Value,
    schema: &Value,
    pointer: &str,
    required: bool,
    depth: usize,
    found: &mut Vec<Value>,
) {
    if depth > MAX_DEPTH || found.len() >= MAX_FIELDS {
        return;
    }
    let schema = resolve(root, schema);
    if !pointer.is_empty() {
        found.push(json!({
            "pointer": pointer,
            "type": schema.get("type").cloned().unwrap_or(Value::Null),
            "required": required,
        }));
    }
    let required_names: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let child = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
            walk(
                root,
                property,
                &child,
                required && required_names.contains(&name.as_str()),
                depth + 1,
                found,
            );
        }
    }
    if let Some(items) = schema.get("items").filter(|items| items.is_object()) {
        walk(
            root,
            items,
            &format!("{pointer}/-"),
            false,
            depth + 1,
            found,
        );
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        for branch in schema
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let branch = resolve(root, branch);
            // A branch's fields are the parent's: walk its properties without listing the
            // branch itself.
            if let Some(properties) = branch.get("properties").and_then(Value::as_object) {
                let branch_required: Vec<&str> = branch
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for (name, property) in properties {
                    let child = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                    let is_required =
                        keyword == "allOf" && required && branch_required.contains(&name.as_str());
                    walk(root, property, &child, is_required, depth + 1, found);
                }
            }
        }
    }
}

/// `schema`, or what its local `$ref` names (one step; the depth bound stops cycles).
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) if reference.starts_with('#') => {
            root.pointer(&reference[1..]).unwrap_or(schema)
        }
        _ => schema,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_items_and_branches_become_pointers() {
        let schema = json!({
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string"},
                "a/b": {"type": "integer"},
                "edits": {"type": "array", "items": {"$ref": "#/$defs/edit"}},
            },
            "anyOf": [{"properties": {"mode": {"type": "string"}}}],
            "$defs": {"edit": {"type": "object", "required": ["old"], "properties": {"old": {"type": "string"}}}},
        });
        let pointers: Vec<(String, bool)> = fields(&schema)
            .iter()
            .map(|field| {
                (
                    field["pointer"].as_str().unwrap().to_owned(),
                    field["required"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            pointers,
            [
                ("/a~1b".to_owned(), false),
                ("/edits".to_owned(), false),
                ("/edits/-".to_owned(), false),
                ("/edits/-/old".to_owned(), false),
                ("/path".to_owned(), true),
                ("/mode".to_owned(), false),
            ]
        );
    }

    #[test]
    fn a_recursive_schema_is_walked_to_a_bounded_depth() {
        let schema = json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"});
        let found = fields(&schema);
        assert_eq!(found.len(), MAX_DEPTH);
        assert_eq!(found.last().unwrap()["pointer"], "/next".repeat(MAX_DEPTH));
    }
}
