//! JSON Schema → Gemini's schema dialect (a subset of the OpenAPI 3.0 Schema object).
//!
//! What converts: `type` (upper-cased; a `["T", "null"]` pair becomes `nullable`), `properties`,
//! `required`, `items`, `enum` of strings, a string `const` (a one-value `enum`), `anyOf` and
//! `oneOf` (both as `anyOf`; a `null` branch becomes `nullable`), local `$ref`s into `$defs` or
//! `definitions` (inlined), `exclusiveMinimum` / `exclusiveMaximum` on integers (as `minimum` /
//! `maximum` ± 1), and the keywords Gemini shares (`description`, `title`, `default`, `example`,
//! `pattern`, `minLength`, `maxLength`, `minimum`, `maximum`, `minItems`, `maxItems`,
//! `minProperties`, `maxProperties`, `format: date-time`).
//!
//! What is dropped, because it only annotates or because the gate still enforces it against the
//! original schema (the model is told less, never allowed more): `$schema`, `$id`, `$comment`,
//! `$defs`, `definitions`, `examples`, `deprecated`, `readOnly`, `writeOnly`, `format` values
//! other than `date-time`, `additionalProperties` `false` or `true`, the exclusivity of `oneOf`.
//!
//! Everything else is an `ExportError` naming the place: keywords with no equivalent (`not`,
//! `allOf`, `if`, `patternProperties`, `uniqueItems`, `multipleOf`, …), a map
//! (`additionalProperties` with a schema), a tuple, a recursive `$ref`, a value-free schema
//! (`true`, `{}`), an `enum` or `const` that is not a string, several non-null types.

use serde_json::{Map, Value, json};

/// How deep conversion goes before giving up (inlined `$ref`s count).
const MAX_DEPTH: usize = 64;

/// Converts `schema` (the tool's whole input schema, also the root for `$ref`s).
///
/// Returns the problem and its JSON pointer on failure.
pub(super) fn convert(schema: &Value) -> Result<Value, (String, String)> {
    let mut converter = Converter {
        root: schema,
        refs: Vec::new(),
    };
    converter.node(schema, "", 0)
}

struct Converter<'a> {
    root: &'a Value,
    /// The `$ref`s being inlined, outermost first: one seen twice is recursion.
    refs: Vec<String>,
}

type Failure = (String, String);

fn fail(place: &str, problem: impl Into<String>) -> Failure {
    let place = if place.is_empty() { "/" } else { place };
    (place.to_owned(), problem.into())
}

impl Converter<'_> {
    fn node(&mut self, node: &Value, place: &str, depth: usize) -> Result<Value, Failure> {
        if depth > MAX_DEPTH {
            return Err(fail(place, format!("nests deeper than {MAX_DEPTH} levels")));
        }
        let Some(map) = node.as_object() else {
            return Err(fail(place, "a boolean schema has no Gemini equivalent"));
        };
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, place, depth);
        }
        let mut out = Map::new();
        let mut nullable = false;
        for (key, value) in map {
            let at = format!("{place}/{}", escape(key));
            match key.as_str() {
                "type" => self.kind(value, &at, &mut out, &mut nullable)?,
                "description" | "title" | "default" | "example" | "pattern" | "minLength"
                | "maxLength" | "minimum" | "maximum" | "minItems" | "maxItems"
                | "minProperties" | "maxProperties" | "required" | "nullable"
                | "propertyOrdering" => {
                    out.insert(key.clone(), value.clone());
                }
                "format" => {
                    if value == "date-time" {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "enum" => {
                    let mut strings = Vec::new();
                    for item in value.as_array().into_iter().flatten() {
                        match item {
                            Value::String(_) => strings.push(item.clone()),
                            Value::Null => nullable = true,
                            _ => return Err(fail(&at, "Gemini enums hold strings only")),
                        }
                    }
                    if !value.is_array() {
                        return Err(fail(&at, "enum is not an array"));
                    }
                    out.insert("enum".into(), Value::Array(strings));
                    out.insert("format".into(), json!("enum"));
                    out.entry("type").or_insert(json!("STRING"));
                }
                "const" => match value {
                    Value::String(_) => {
                        out.insert("enum".into(), json!([value]));
                        out.insert("format".into(), json!("enum"));
                        out.entry("type").or_insert(json!("STRING"));
                    }
                    _ => return Err(fail(&at, "Gemini enums hold strings only")),
                },
                "properties" => {
                    let Some(properties) = value.as_object() else {
                        return Err(fail(&at, "properties is not an object"));
                    };
                    let mut converted = Map::new();
                    for (name, property) in properties {
                        let property_place = format!("{at}/{}", escape(name));
                        converted.insert(
                            name.clone(),
                            self.node(property, &property_place, depth + 1)?,
                        );
                    }
                    out.insert(key.clone(), Value::Object(converted));
                }
                "items" => {
                    if !value.is_object() {
                        return Err(fail(
                            &at,
                            "a tuple (items as an array or boolean) has no Gemini equivalent",
                        ));
                    }
                    out.insert(key.clone(), self.node(value, &at, depth + 1)?);
                }
                "anyOf" | "oneOf" => {
                    let Some(branches) = value.as_array() else {
                        return Err(fail(&at, "not an array"));
                    };
                    let mut converted = Vec::new();
                    for (index, branch) in branches.iter().enumerate() {
                        if branch.get("type").is_some_and(|kind| kind == "null")
                            && branch.as_object().is_some_and(|b| b.len() == 1)
                        {
                            nullable = true;
                            continue;
                        }
                        converted.push(self.node(branch, &format!("{at}/{index}"), depth + 1)?);
                    }
                    out.insert("anyOf".into(), Value::Array(converted));
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let integer = map.get("type").is_some_and(|kind| kind == "integer");
                    let (Some(bound), true) = (value.as_i64(), integer) else {
                        return Err(fail(&at, "an exclusive bound converts on integers only"));
                    };
                    if key == "exclusiveMinimum" {
                        out.insert("minimum".into(), json!(bound.saturating_add(1)));
                    } else {
                        out.insert("maximum".into(), json!(bound.saturating_sub(1)));
                    }
                }
                "additionalProperties" => {
                    if !value.is_boolean() {
                        return Err(fail(
                            &at,
                            "a map (additionalProperties with a schema) has no Gemini equivalent",
                        ));
                    }
                }
                "$schema" | "$id" | "$comment" | "$defs" | "definitions" | "examples"
                | "deprecated" | "readOnly" | "writeOnly" => {}
                _ => {
                    return Err(fail(&at, "this keyword has no Gemini equivalent"));
                }
            }
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        // A single branch left after `null` was taken out needs no `anyOf`.
        if let Some(Value::Array(branches)) = out.get("anyOf")
            && branches.len() == 1
            && !out.contains_key("type")
            && let Some(Value::Object(only)) = out
                .remove("anyOf")
                .and_then(|b| b.as_array().and_then(|b| b.first().cloned()))
        {
            for (key, value) in only {
                out.entry(key).or_insert(value);
            }
        }
        if !out.contains_key("type") && !out.contains_key("anyOf") {
            return Err(fail(
                place,
                "a schema without a type has no Gemini equivalent",
            ));
        }
        Ok(Value::Object(out))
    }

    fn kind(
        &self,
        value: &Value,
        at: &str,
        out: &mut Map<String, Value>,
        nullable: &mut bool,
    ) -> Result<(), Failure> {
        let names: Vec<&str> = match value {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => return Err(fail(at, "type is not a string or an array of strings")),
        };
        let mut kinds = Vec::new();
        for name in names {
            match name {
                "null" => *nullable = true,
                "string" | "number" | "integer" | "boolean" | "array" | "object" => {
                    kinds.push(name.to_ascii_uppercase());
                }
                _ => return Err(fail(at, "unknown type name")),
            }
        }
        match kinds.as_slice() {
            [one] => {
                out.insert("type".into(), Value::String(one.clone()));
                Ok(())
            }
            [] => Err(fail(
                at,
                "a schema that only allows null has no Gemini equivalent",
            )),
            _ => Err(fail(at, "several non-null types have no Gemini equivalent")),
        }
    }

    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        place: &str,
        depth: usize,
    ) -> Result<Value, Failure> {
        let at = format!("{place}/$ref");
        let Some(text) = reference.as_str() else {
            return Err(fail(&at, "$ref is not a string"));
        };
        if map
            .keys()
            .any(|key| !matches!(key.as_str(), "$ref" | "description" | "title"))
        {
            return Err(fail(
                place,
                "keywords beside $ref have no Gemini equivalent",
            ));
        }
        if self.refs.iter().any(|seen| seen == text) {
            return Err(fail(&at, "a recursive $ref cannot be inlined"));
        }
        let target = resolve(self.root, text).ok_or_else(|| {
            fail(
                &at,
                "only local $refs into $defs or definitions are inlined",
            )
        })?;
        self.refs.push(text.to_owned());
        let converted = self.node(target, &at, depth + 1);
        self.refs.pop();
        let mut converted = converted?;
        if let (Some(object), Some(description)) =
            (converted.as_object_mut(), map.get("description"))
        {
            object.insert("description".into(), description.clone());
        }
        Ok(converted)
    }
}

/// A local reference `#/$defs/Name` or `#/definitions/Name` (JSON pointer escapes decoded).
pub(super) fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if !(pointer.starts_with("/$defs/") || pointer.starts_with("/definitions/")) {
        return None;
    }
    root.pointer(pointer)
}

/// A key as a JSON pointer segment.
pub(super) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
