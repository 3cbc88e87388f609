//! Provider wire formats: tool specs out, tool calls in, results back.
//!
//! Parsing never panics and never drops a call: a call whose arguments cannot be used becomes an
//! error [`ToolResult`] for that call's id, in its place, so the model reads what went wrong.
//! Only a payload too broken to answer at all (no call id) is a [`WireError`].

pub mod anthropic;
pub mod mcp;
pub mod openai;
pub mod responses;

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::contract::{ToolCall, ToolResult, ToolSpec, quote_bounded};

/// One call as a provider sent it: usable, or already answered with an error result for its id.
pub type ParsedCall = Result<ToolCall, ToolResult>;

/// A payload that cannot be answered call by call, because it lacks what an answer needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A field the format requires is missing or has the wrong type, so no result can be
    /// addressed to the call. The provider (or the code that built the payload) is at fault.
    #[error("{place}: {problem}")]
    Malformed {
        /// Where in the payload, e.g. `tool_calls[1].id`.
        place: String,
        /// What is wrong.
        problem: String,
    },
}

impl WireError {
    fn malformed(place: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Malformed {
            place: place.into(),
            problem: problem.into(),
        }
    }
}

/// A spec that a provider would refuse. Rename the tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The tool's name breaks the provider's naming rule.
    #[error("tool {tool:?} cannot be exported to {provider}: {rule}")]
    InvalidName {
        /// The tool's name.
        tool: String,
        /// The provider.
        provider: &'static str,
        /// The rule it breaks.
        rule: &'static str,
    },
}

/// A provider's naming rule: a length range and the characters allowed besides ASCII letters
/// and digits.
struct NameRule {
    provider: &'static str,
    max_len: usize,
    extra: &'static str,
    text: &'static str,
}

impl NameRule {
    fn check(&self, spec: &ToolSpec) -> Result<(), ExportError> {
        let name = &spec.name;
        let ok = !name.is_empty()
            && name.len() <= self.max_len
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || self.extra.contains(c));
        if ok {
            Ok(())
        } else {
            Err(ExportError::InvalidName {
                tool: name.clone(),
                provider: self.provider,
                rule: self.text,
            })
        }
    }
}

/// Parses a call's `arguments` string strictly: valid JSON, no duplicate keys (which parsers
/// resolve differently, so a policy could see one value and a handler another), and an object.
/// An empty or all-whitespace string means no arguments: `{}`.
///
/// The error message names the problem and its position, never the text.
pub(crate) fn parse_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = StrictValue::deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    match parsed {
        Ok(StrictValue(value)) => require_object(value),
        Err(error) if error.is_data() => Err(format!("arguments are not usable JSON: {error}")),
        Err(error) => Err(format!(
            "arguments are not valid JSON: syntax error at line {} column {}",
            error.line(),
            error.column()
        )),
    }
}

/// Arguments must be a JSON object (every provider's tool input is one).
pub(crate) fn require_object(value: Value) -> Result<Value, String> {
    match value {
        Value::Object(_) => Ok(value),
        other => {
            let kind = match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => "an object",
            };
            crate::definition::drop_deep(other);
            Err(format!("arguments must be a JSON object, got {kind}"))
        }
    }
}

/// The error result for a call whose arguments could not be used.
pub(crate) fn unusable(call_id: String, tool: &str, problem: &str) -> ToolResult {
    ToolResult::error(
        call_id,
        format!("invalid arguments for {}: {problem}", quote_bounded(tool)),
    )
}

/// A JSON value that refuses duplicate object keys.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(value.into())
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(value.into())
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number is not finite"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key {:?}",
                    quote_bounded(&key)
                )));
            }
            let StrictValue(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// A string field, or a [`WireError`] naming its place.
fn string_field<'a>(value: &'a Value, field: &str, place: &str) -> Result<&'a str, WireError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| WireError::malformed(format!("{place}.{field}"), "missing or not a string"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_arguments_parse_objects() {
        assert_eq!(
            parse_arguments(r#"{"a": [1, {"b": null}]}"#),
            Ok(json!({"a": [1, {"b": null}]}))
        );
        assert_eq!(parse_arguments("  "), Ok(json!({})));
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        for text in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": {"p": "/work", "p": "/etc"}}"#,
            r#"[{"k":1,"k":1}]"#,
        ] {
            let error = parse_arguments(text).unwrap_err();
            assert!(error.contains("duplicate key"), "{text}: {error}");
        }
    }

    #[test]
    fn syntax_errors_give_a_position_not_the_text() {
        let error = parse_arguments(r#"{"password": "hunter2""#).unwrap_err();
        assert!(
            error.starts_with("arguments are not valid JSON: syntax error at line 1"),
            "{error}"
        );
        assert!(!error.contains("hunter2"));
        let trailing = parse_arguments(r#"{} {"second": "secret"}"#).unwrap_err();
        assert!(!trailing.contains("secret"), "{trailing}");
        for nan in ["{\"x\": NaN}", "{\"x\": Infinity}", "{\"x\": -Infinity}"] {
            assert!(parse_arguments(nan).is_err(), "{nan}");
        }
    }

    #[test]
    fn non_objects_are_refused_by_kind() {
        for (text, kind) in [
            ("[1]", "an array"),
            ("\"s\"", "a string"),
            ("3", "a number"),
            ("null", "null"),
        ] {
            assert_eq!(
                parse_arguments(text).unwrap_err(),
                format!("arguments must be a JSON object, got {kind}")
            );
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        assert!(parse_arguments(&deep).is_err());
    }
}
