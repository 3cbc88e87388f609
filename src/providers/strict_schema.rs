//! OpenAI strict mode: input schemas transformed to meet its rules, and calls taken back to the
//! original schema's shape.
//!
//! Strict mode (`"strict": true`) makes the model's arguments follow the schema exactly, but
//! only accepts a subset of JSON Schema: the root is an object; every object sets
//! `additionalProperties: false` and lists every property in `required`; only `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `anyOf`, `enum`, `const`, `$ref`
//! with `$defs` / `definitions`, `description`, `title`, `pattern`, `format` (`date-time`,
//! `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`), `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `minItems` and `maxItems`
//! are allowed.
//!
//! [`StrictTools`] transforms a schema to meet them:
//! - every object gets `additionalProperties: false` and lists all its properties as required;
//! - a property that was optional and does not admit `null` is made nullable (`"type": ["T",
//!   "null"]`, `null` added to its `enum`, or an `anyOf` with `{"type": "null"}`): the model
//!   sends `null` for "absent", and [`StrictTools::restore`] removes exactly those `null`s before
//!   the call reaches the gate, so the original schema validates the call it was written for;
//! - `oneOf` becomes `anyOf` (the gate still enforces the exclusivity, against the original);
//! - annotations (`$schema`, `$id`, `$comment`, `default`, `examples`, `deprecated`,
//!   `readOnly`, `writeOnly`) and `format` values outside the list are removed;
//! - each such change is listed in [`StrictTools::changes`], with its place.
//!
//! Anything else is an [`ExportError::UnsupportedSchema`] naming the place: a keyword strict
//! mode does not take (`allOf`, `not`, `if`, `patternProperties`, `minLength`, `uniqueItems`,
//! …), a map (`additionalProperties` other than `false`), a root that is not an object, a
//! boolean schema. The nesting and size limits OpenAI applies (levels, property counts, enum
//! sizes) are not checked here.
//!
//! ```
//! use serde_json::json;
//! use toolgate::providers::strict_schema::StrictTools;
//! use toolgate::{ToolCall, ToolSpec};
//!
//! let spec = ToolSpec::new("search", "Search.", json!({"type": "object",
//!     "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
//!     "required": ["query"]}));
//! let strict = StrictTools::new([&spec])?;
//! let tools = strict.chat_tools();
//! assert_eq!(tools[0]["function"]["strict"], json!(true));
//! assert_eq!(tools[0]["function"]["parameters"]["required"], json!(["limit", "query"]));
//! assert_eq!(tools[0]["function"]["parameters"]["properties"]["limit"]["type"], json!(["integer", "null"]));
//! // The model sends `null` for the optional `limit`; the gate sees it absent.
//! let call = strict.restore(Ok(ToolCall::new("c1", "search", json!({"query": "q", "limit": null}))));
//! assert_eq!(call.unwrap().arguments, json!({"query": "q"}));
//! # Ok::<(), toolgate::providers::ExportError>(())
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

mod nulls;

use super::gemini_schema::{escape, resolve};
use super::{ExportError, ParsedCall};
use crate::contract::ToolSpec;
use nulls::{admits_null, make_nullable, restore};

const PROVIDER: &str = "OpenAI strict mode";

const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// One change the transformation made to a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// Where, as a JSON pointer into the original schema.
    pub place: String,
    /// What was done.
    pub what: &'static str,
}

/// Specs whose input schemas were transformed for OpenAI strict mode. See the
/// [module docs](self).
#[derive(Debug, Clone)]
pub struct StrictTools {
    /// Invariant: one entry per spec, in order; the schema meets the strict-mode rules.
    tools: Vec<(ToolSpec, Value, Vec<Change>)>,
    by_name: BTreeMap<String, usize>,
}

impl StrictTools {
    /// Transforms the input schema of each spec.
    ///
    /// # Errors
    ///
    /// [`ExportError::UnsupportedSchema`] naming the first place strict mode cannot express, or
    /// [`ExportError::InvalidName`] for a name OpenAI refuses.
    pub fn new<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> Result<Self, ExportError> {
        let mut tools = Vec::new();
        let mut by_name = BTreeMap::new();
        for spec in specs {
            super::OPENAI_NAMES.check(spec)?;
            let mut transform = Transform {
                root: &spec.input_schema,
                check_only: false,
                changes: Vec::new(),
            };
            let schema = transform
                .root()
                .map_err(|failure| unsupported(spec, failure))?;
            by_name.insert(spec.name.clone(), tools.len());
            tools.push((spec.clone(), schema, transform.changes));
        }
        Ok(Self { tools, by_name })
    }

    /// The Chat Completions `tools` array, each function with `"strict": true`.
    pub fn chat_tools(&self) -> Value {
        Value::Array(
            self.tools
                .iter()
                .map(|(spec, schema, _)| {
                    json!({"type": "function", "function": {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": schema,
                        "strict": true,
                    }})
                })
                .collect(),
        )
    }

    /// The Responses API `tools` array, each with `"strict": true`.
    pub fn responses_tools(&self) -> Value {
        Value::Array(
            self.tools
                .iter()
                .map(|(spec, schema, _)| {
                    json!({
                        "type": "function",
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": schema,
                        "strict": true,
                    })
                })
                .collect(),
        )
    }

    /// The transformed schema of a tool.
    pub fn schema(&self, tool: &str) -> Option<&Value> {
        self.by_name.get(tool).map(|&index| &self.tools[index].1)
    }

    /// What the transformation changed in a tool's schema (empty if it already met the rules).
    pub fn changes(&self, tool: &str) -> &[Change] {
        self.by_name
            .get(tool)
            .map_or(&[], |&index| self.tools[index].2.as_slice())
    }

    /// A call with the `null`s the transformation made room for removed: for each property the
    /// original schema left optional and did not let be `null`, a `null` value is taken out,
    /// following `properties`, `items`, local `$ref`s and an `anyOf` / `oneOf` with one non-null
    /// branch. Any other `null` stays, and the original schema judges it. A call for a tool not
    /// in the set, or an error result, is returned unchanged.
    pub fn restore(&self, call: ParsedCall) -> ParsedCall {
        call.map(|mut call| {
            if let Some(&index) = self.by_name.get(&call.tool_name) {
                let schema = &self.tools[index].0.input_schema;
                restore(schema, schema, &mut call.arguments);
            }
            call
        })
    }
}

/// `Ok` if the spec's schema already meets the strict-mode rules, unchanged.
pub(super) fn check(spec: &ToolSpec) -> Result<(), ExportError> {
    let mut transform = Transform {
        root: &spec.input_schema,
        check_only: true,
        changes: Vec::new(),
    };
    transform
        .root()
        .map(|_| ())
        .map_err(|failure| unsupported(spec, failure))
}

fn unsupported(spec: &ToolSpec, (place, problem): (String, String)) -> ExportError {
    ExportError::UnsupportedSchema {
        tool: spec.name.clone(),
        provider: PROVIDER,
        place,
        problem,
    }
}

type Failure = (String, String);

fn fail(place: &str, problem: impl Into<String>) -> Failure {
    let place = if place.is_empty() { "/" } else { place };
    (place.to_owned(), problem.into())
}

struct Transform<'a> {
    root: &'a Value,
    /// Checking only: every change the transformation would make is a failure instead.
    check_only: bool,
    changes: Vec<Change>,
}

/// How deep the transformation goes before giving up.
const MAX_DEPTH: usize = 64;

impl Transform<'_> {
    fn root(&mut self) -> Result<Value, Failure> {
        if self.root.get("type").and_then(Value::as_str) != Some("object") {
            return Err(fail(
                "/type",
                "the root must be an object schema (\"type\": \"object\")",
            ));
        }
        self.node(self.root, "", 0)
    }

    fn change(&mut self, place: &str, what: &'static str) -> Result<(), Failure> {
        if self.check_only {
            return Err(fail(place, format!("not strict: {what}")));
        }
        self.changes.push(Change {
            place: if place.is_empty() {
                "/".into()
            } else {
                place.to_owned()
            },
            what,
        });
        Ok(())
    }

    fn node(&mut self, node: &Value, place: &str, depth: usize) -> Result<Value, Failure> {
        if depth > MAX_DEPTH {
            return Err(fail(place, format!("nests deeper than {MAX_DEPTH} levels")));
        }
        let Some(map) = node.as_object() else {
            return Err(fail(
                place,
                "a boolean schema is not allowed in strict mode",
            ));
        };
        let mut out = Map::new();
        for (key, value) in map {
            let at = format!("{place}/{}", escape(key));
            match key.as_str() {
                "type" | "enum" | "const" | "description" | "title" | "pattern" | "minimum"
                | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
                | "minItems" | "maxItems" | "$ref" | "required" => {
                    out.insert(key.clone(), value.clone());
                }
                "format" => {
                    if value
                        .as_str()
                        .is_some_and(|format| FORMATS.contains(&format))
                    {
                        out.insert(key.clone(), value.clone());
                    } else {
                        self.change(&at, "format removed (not one strict mode takes)")?;
                    }
                }
                "$schema" | "$id" | "$comment" | "default" | "examples" | "deprecated"
                | "readOnly" | "writeOnly" => {
                    self.change(&at, "annotation removed")?;
                }
                "properties" | "$defs" | "definitions" => {
                    let Some(entries) = value.as_object() else {
                        return Err(fail(&at, "not an object"));
                    };
                    let mut converted = Map::new();
                    for (name, entry) in entries {
                        let entry_place = format!("{at}/{}", escape(name));
                        converted.insert(name.clone(), self.node(entry, &entry_place, depth + 1)?);
                    }
                    out.insert(key.clone(), Value::Object(converted));
                }
                "items" => {
                    if !value.is_object() {
                        return Err(fail(&at, "a tuple is not allowed in strict mode"));
                    }
                    out.insert(key.clone(), self.node(value, &at, depth + 1)?);
                }
                "anyOf" | "oneOf" => {
                    let Some(branches) = value.as_array() else {
                        return Err(fail(&at, "not an array"));
                    };
                    if key == "oneOf" {
                        self.change(
                            &at,
                            "oneOf exported as anyOf (the gate still enforces oneOf)",
                        )?;
                    }
                    let converted = branches
                        .iter()
                        .enumerate()
                        .map(|(index, branch)| {
                            self.node(branch, &format!("{at}/{index}"), depth + 1)
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    out.insert("anyOf".into(), Value::Array(converted));
                }
                "additionalProperties" => {
                    if *value != Value::Bool(false) {
                        return Err(fail(
                            &at,
                            "strict mode needs additionalProperties false (a map cannot be expressed)",
                        ));
                    }
                    out.insert(key.clone(), value.clone());
                }
                _ => return Err(fail(&at, "this keyword is not allowed in strict mode")),
            }
        }
        let is_object = out.get("type").is_some_and(|kind| {
            kind == "object"
                || kind
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k == "object"))
        }) || out.contains_key("properties");
        if is_object {
            self.object(&mut out, map, place)?;
        }
        Ok(Value::Object(out))
    }

    /// Makes an object strict: `additionalProperties: false`, every property required, the
    /// optional ones nullable.
    fn object(
        &mut self,
        out: &mut Map<String, Value>,
        original: &Map<String, Value>,
        place: &str,
    ) -> Result<(), Failure> {
        if !out.contains_key("additionalProperties") {
            self.change(place, "additionalProperties: false added")?;
            out.insert("additionalProperties".into(), Value::Bool(false));
        }
        let required: Vec<&str> = original
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut properties = match out.remove("properties") {
            Some(Value::Object(properties)) => properties,
            _ => Map::new(),
        };
        let mut all = Vec::with_capacity(properties.len());
        for (name, property) in &mut properties {
            all.push(Value::String(name.clone()));
            if !required.contains(&name.as_str()) {
                let at = format!("{place}/properties/{}", escape(name));
                self.change(&at, "optional property made required and nullable")?;
                if !admits_null(property, self.root) {
                    make_nullable(property);
                }
            }
        }
        if required.len() != all.len() {
            // A `required` name without a property: strict mode lists exactly the properties.
            if required.iter().any(|name| !properties.contains_key(*name)) {
                return Err(fail(
                    &format!("{place}/required"),
                    "a required name is not among the properties",
                ));
            }
        }
        out.insert("properties".into(), Value::Object(properties));
        out.insert("required".into(), Value::Array(all));
        Ok(())
    }
}
