//! Nulls in strict mode: which schemas admit `null`, making an optional property nullable, and
//! taking back exactly the nulls the transformation made room for.

use serde_json::{Value, json};

use super::resolve;

/// Whether a schema admits `null` by its own words: a `null` type, a `null` in its `enum`, a
/// `const` of `null`, or an `anyOf` / `oneOf` branch that admits it (local `$ref`s followed).
pub(super) fn admits_null(schema: &Value, root: &Value) -> bool {
    admits_null_within(schema, root, 0)
}

fn admits_null_within(schema: &Value, root: &Value, hops: usize) -> bool {
    if hops > 16 {
        return false;
    }
    let Some(map) = schema.as_object() else {
        return schema == &Value::Bool(true);
    };
    if let Some(target) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve(root, r))
    {
        return admits_null_within(target, root, hops + 1);
    }
    let typed = match map.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        _ => false,
    };
    typed
        || map
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.contains(&Value::Null))
        || map.get("const") == Some(&Value::Null)
        || ["anyOf", "oneOf"].iter().any(|key| {
            map.get(*key)
                .and_then(Value::as_array)
                .is_some_and(|branches| {
                    branches
                        .iter()
                        .any(|b| admits_null_within(b, root, hops + 1))
                })
        })
}

/// Lets a (transformed) schema admit `null` as well.
pub(super) fn make_nullable(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if let Some(values) = map.get_mut("enum").and_then(Value::as_array_mut) {
        values.push(Value::Null);
        if !map.contains_key("type") {
            return;
        }
    }
    let has_const = map.contains_key("const");
    match map.get_mut("type") {
        Some(Value::String(kind)) if !has_const => {
            let kind = kind.clone();
            map.insert("type".into(), json!([kind, "null"]));
        }
        Some(Value::Array(kinds)) if !has_const => kinds.push(json!("null")),
        _ => {
            let branch = std::mem::take(map);
            map.insert(
                "anyOf".into(),
                json!([Value::Object(branch), {"type": "null"}]),
            );
        }
    }
}

/// Removes, along `schema`, the `null`s [`StrictTools`] made room for.
pub(super) fn restore(schema: &Value, root: &Value, value: &mut Value) {
    let mut schema = schema;
    for _ in 0..16 {
        match schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve(root, r))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    let non_null_branch = ["anyOf", "oneOf"].iter().find_map(|key| {
        let branches = schema.get(*key)?.as_array()?;
        let mut rest = branches
            .iter()
            .filter(|b| b.get("type") != Some(&json!("null")));
        let only = rest.next()?;
        rest.next().is_none().then_some(only)
    });
    if let Some(branch) = non_null_branch {
        restore(branch, root, value);
    }
    match value {
        Value::Object(arguments) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            arguments.retain(|key, item| {
                !(item.is_null()
                    && !required.contains(&key.as_str())
                    && properties.get(key).is_some_and(|p| !admits_null(p, root)))
            });
            for (key, item) in arguments.iter_mut() {
                if let Some(property) = properties.get(key) {
                    restore(property, root, item);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    restore(item_schema, root, item);
                }
            }
        }
        _ => {}
    }
}
