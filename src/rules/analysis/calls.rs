//! Calls built for the analysis: a base call valid against the tool's schema, one argument set at
//! a pointer, and what the schema says a pointer's value may be.

use serde_json::{Map, Value};

use crate::rules::condition::unescape_token;

/// The types a value at one pointer may have, as the schema declares them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Types {
    pub(super) string: bool,
    pub(super) number: bool,
    /// Only integers (the schema's `integer`, without `number`).
    pub(super) integer_only: bool,
    pub(super) boolean: bool,
    pub(super) null: bool,
    pub(super) array: bool,
    pub(super) object: bool,
    /// The field may be left out.
    pub(super) absent: bool,
}

impl Types {
    pub(super) const ANY: Self = Self {
        string: true,
        number: true,
        integer_only: false,
        boolean: true,
        null: true,
        array: true,
        object: true,
        absent: true,
    };
}

/// The tokens of a JSON Pointer, unescaped.
fn tokens(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer.split('/').skip(1).map(unescape_token)
}

/// The subschema a pointer's value must satisfy whenever it is present, when the schema says so
/// plainly (a chain of `properties`), and whether every field on the way is required (so the
/// value is always there); `None` when it takes more reading (combinators, `$ref`, lists), and
/// then nothing is assumed about the value.
fn subschema<'s>(schema: &'s Value, pointer: &str) -> Option<(&'s Value, bool)> {
    let mut here = schema;
    let mut required = true;
    for token in tokens(pointer) {
        if has_combinators(here) {
            return None;
        }
        required &= here
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|list| list.iter().any(|name| name.as_str() == Some(&token)));
        here = here.get("properties")?.get(&token)?;
    }
    (!has_combinators(here)).then_some((here, required))
}

fn has_combinators(schema: &Value) -> bool {
    [
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "dependentSchemas",
        "dependencies",
    ]
    .iter()
    .any(|key| schema.get(key).is_some())
}

/// What the schema allows at `pointer`: the types a value may have, whether it may be left out,
/// and the values it may have when the schema lists them (`enum`, `const`).
pub(super) fn types_at(schema: &Value, pointer: &str) -> (Types, Option<Vec<Value>>) {
    let Some((sub, required)) = subschema(schema, pointer) else {
        return (Types::ANY, None);
    };
    let mut types = Types::ANY;
    types.absent = !required;
    if let Some(constant) = sub.get("const") {
        return (types, Some(vec![constant.clone()]));
    }
    let enumerated = sub.get("enum").and_then(Value::as_array).cloned();
    let declared: Option<Vec<&str>> = match sub.get("type") {
        Some(Value::String(one)) => Some(vec![one.as_str()]),
        Some(Value::Array(many)) => many.iter().map(Value::as_str).collect(),
        _ => None,
    };
    if let Some(declared) = declared {
        let has = |name: &str| declared.contains(&name);
        types.string = has("string");
        types.number = has("number") || has("integer");
        types.integer_only = has("integer") && !has("number");
        types.boolean = has("boolean");
        types.null = has("null");
        types.array = has("array");
        types.object = has("object");
    }
    (types, enumerated)
}

/// A simple value the schema accepts, for the fields no rule reads: required properties filled
/// in, each with its `const`, first `enum` value, or a plain value of its type. The caller
/// validates it; a schema this cannot satisfy leaves the analysis unable to build a call.
pub(super) fn base_value(schema: &Value, depth: usize) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    let declared = match schema.get("type") {
        Some(Value::String(one)) => one.as_str(),
        Some(Value::Array(many)) => many.first().and_then(Value::as_str).unwrap_or("object"),
        _ if schema.get("properties").is_some() => "object",
        _ => "object",
    };
    match declared {
        "string" => {
            let length = schema.get("minLength").and_then(Value::as_u64).unwrap_or(1);
            Value::from("z".repeat(usize::try_from(length.clamp(1, 64)).unwrap_or(1)))
        }
        "integer" | "number" => schema
            .get("minimum")
            .cloned()
            .filter(Value::is_number)
            .unwrap_or(Value::from(0)),
        "boolean" => Value::Bool(false),
        "null" => Value::Null,
        "array" => {
            let count = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema
                .get("items")
                .map_or(Value::Null, |items| base_value(items, depth + 1));
            Value::Array(vec![item; usize::try_from(count.min(8)).unwrap_or(0)])
        }
        _ => {
            let mut object = Map::new();
            let properties = schema.get("properties").and_then(Value::as_object);
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let property = properties.and_then(|p| p.get(name));
                let value = property.map_or(Value::from("z"), |p| base_value(p, depth + 1));
                object.insert(name.to_owned(), value);
            }
            Value::Object(object)
        }
    }
}

/// `arguments` with the value at `pointer` set to `value` (objects made on the way), or removed
/// (`None`). `false` when the pointer runs through a value that is not an object.
pub(super) fn set(arguments: &mut Value, pointer: &str, value: Option<&Value>) -> bool {
    let tokens: Vec<String> = tokens(pointer).collect();
    let Some((last, parents)) = tokens.split_last() else {
        if let Some(value) = value {
            *arguments = value.clone();
        }
        return value.is_some();
    };
    let mut here = arguments;
    for token in parents {
        let Value::Object(map) = here else {
            return false;
        };
        if value.is_none() && !map.contains_key(token) {
            return true;
        }
        here = map
            .entry(token.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let Value::Object(map) = here else {
        return false;
    };
    match value {
        Some(value) => {
            map.insert(last.clone(), value.clone());
        }
        None => {
            map.remove(last);
        }
    }
    true
}
