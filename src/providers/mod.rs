//! Provider wire formats: tool specs out, tool calls in, results back.
//!
//! Parsing never panics and never drops a call: a call whose arguments cannot be used becomes an
//! error [`ToolResult`] for that call's id, in its place, so the model reads what went wrong.
//! Only a payload too broken to answer at all (no call id) is a [`WireError`].
//!
//! # One reading of a call, for every provider
//!
//! Each adapter only finds a call's id, name and arguments where its format puts them (OpenAI
//! Chat `id` / `function.name` / `function.arguments`, Responses `call_id` / `name` /
//! `arguments`, Anthropic `id` / `name` / `input`, MCP JSON-RPC `id` / `params.name` /
//! `params.arguments`); one shared step then reads them, so the same payload gets the same verdict
//! whichever adapter it is routed through:
//!
//! | What the call holds | Outcome |
//! |---|---|
//! | no id, or an id that is not a non-empty string (MCP: a non-empty string or an integer) | [`WireError`] (MCP: a JSON-RPC `-32600` error with id `null`) |
//! | an id another call of the same message (or stream) already has | [`WireError`]: a result could not say which call it answers |
//! | no name, or a name that is not a non-empty string | error result for the call's id |
//! | arguments absent or `null` | a call with `{}` |
//! | arguments a JSON object nesting at most 127 levels | a call with that object, as given |
//! | arguments a string: empty or only JSON whitespace (space, tab, CR, LF) | a call with `{}` |
//! | arguments a string holding one JSON object | a call with that object |
//! | arguments a string that is not JSON, has a duplicate key at any depth, a non-finite or out-of-range number, nests deeper than 127 levels, or holds anything but an object (`"null"`, `"[1]"`, …) | error result for the call's id |
//! | arguments an object nesting deeper than 127 levels, or of any other type (array, number, boolean) | error result for the call's id |
//!
//! Both the string form (OpenAI's, by its specification) and the object form (Anthropic's and
//! MCP's) are accepted by every adapter: OpenAI-compatible servers send objects, proxies send
//! strings, and either way the value the policy judges is the value the handler receives. Text
//! is parsed strictly because parsers disagree on duplicate keys (first or last wins), so a policy
//! could see one value and a handler another. An object arrives already parsed by your JSON
//! parser, which has resolved any duplicate keys in the raw body before toolgate sees it.
//!
//! [`parse_body`] parses a provider's whole body with the same strictness, so duplicate keys in
//! object-form arguments are refused too.
//!
//! A reader given a payload whose shape it does not recognise — another provider's message (an
//! Anthropic `tool_use` block or a Responses `output_text` part in a Chat message, Chat's
//! `tool_calls` in an Anthropic message), a whole response where a message is expected — refuses
//! it with a [`WireError`] naming the place, rather than reading it as a message without calls.
//! A Responses reader takes a bare array as a response's `output` or a stateless request's
//! `input` (user messages with or without `type`, outputs already sent, item references); its
//! places then name the array's own indices (`[2]`), and every `function_call` in it is a call.
//!
//! Error texts name the problem and its position, never a value, key or fragment of what was
//! sent; names are quoted bounded. No size limit is applied here (validation then bounds depth to
//! [`MAX_ARGUMENT_DEPTH`](crate::definition::MAX_ARGUMENT_DEPTH)); the provider's body size is yours to cap
//! before parsing.

pub mod anthropic;
pub mod gemini;
mod gemini_schema;
pub mod mcp;
pub mod names;
pub mod openai;
pub mod responses;
mod results;
pub mod stream;
mod strict;
#[cfg(feature = "mcp")]
pub(crate) use strict::parse as strict_parse;
#[cfg(feature = "mcp")]
mod unique_keys;
#[cfg(feature = "mcp")]
pub(crate) use unique_keys::check_unique_keys;
pub mod strict_schema;
mod turn;

pub use turn::{NotHandled, NotHandledReason, Turn};

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
    /// The payload holds an item that is not a call toolgate can run (a tool the provider ran
    /// itself, one that waits for an answer toolgate cannot give, or an unknown type), and the
    /// reader used has no place to report it. Read the payload with the adapter's `turn`
    /// function, which lists such items in [`Turn::not_handled`].
    #[error(
        "{place}: item of type {kind:?} is not a call toolgate runs ({reason:?}); read it with `turn`"
    )]
    NotHandled {
        /// Where in the payload, e.g. `output[1]`.
        place: String,
        /// The item's type, quoted bounded.
        kind: String,
        /// Why it is not handled.
        reason: NotHandledReason,
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
    /// The tool's input schema uses something the provider's schema dialect cannot express.
    /// Change the schema (or, for names, map them with [`names::NameMap`]).
    #[error("tool {tool:?} cannot be exported to {provider}: {place}: {problem}")]
    UnsupportedSchema {
        /// The tool's name.
        tool: String,
        /// The provider (or mode, e.g. `OpenAI strict mode`).
        provider: &'static str,
        /// Where in the schema, as a JSON pointer (`/properties/when/not`).
        place: String,
        /// What cannot be expressed there.
        problem: String,
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

/// OpenAI's naming rule (Chat Completions and Responses), shared with the strict-schema export.
const OPENAI_NAMES: NameRule = NameRule {
    provider: "OpenAI",
    max_len: 64,
    extra: "_-",
    text: "1 to 64 characters from a-z, A-Z, 0-9, '_' and '-'",
};

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

/// The shared step every adapter ends in: a non-empty string name, then the arguments read by
/// [`parse_arguments`]. `id` has been checked by the adapter (its place differs by format).
pub(crate) fn parse_call(
    id: String,
    name: Option<&Value>,
    arguments: Option<&Value>,
) -> ParsedCall {
    let name = match name {
        Some(Value::String(name)) if !name.is_empty() => name,
        _ => return Err(ToolResult::error(id, "tool call has no name")),
    };
    match parse_arguments(arguments) {
        Ok(arguments) => Ok(ToolCall::new(id, name.as_str(), arguments)),
        Err(problem) => Err(ToolResult::error(
            id,
            format!("invalid arguments for {}: {problem}", quote_bounded(name)),
        )),
    }
}

/// A call's id: a non-empty string at `place.field`, or a [`WireError`] naming that place.
/// The ids of the calls one payload (a message, a response, a stream) has held so far: a result
/// names the call it answers by id, so two calls with one id cannot both be answered.
#[derive(Debug, Default)]
pub(crate) struct DistinctIds(std::collections::HashSet<String>);

impl DistinctIds {
    /// Records `id`; one an earlier call of the payload had is a [`WireError`] at `place`.
    pub(crate) fn claim(&mut self, id: &str, place: &str) -> Result<(), WireError> {
        if self.0.contains(id) {
            return Err(WireError::malformed(place, "two calls share one id"));
        }
        self.0.insert(id.to_owned());
        Ok(())
    }
}

fn call_id(value: &Value, field: &str, place: &str) -> Result<String, WireError> {
    match value.get(field) {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        _ => Err(WireError::malformed(
            format!("{place}.{field}"),
            "missing or not a non-empty string",
        )),
    }
}

/// Reads a call's arguments as the table in the module docs says: absent or `null` is `{}`, an
/// object is taken as given, a string is parsed strictly and must hold an object (empty or only
/// JSON whitespace is `{}`); anything else is refused.
///
/// The error message names the problem and its position, never the text.
pub(crate) fn parse_arguments(arguments: Option<&Value>) -> Result<Value, String> {
    match arguments {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        // Checked before the clone, which recurses: a value built in code can nest arbitrarily.
        Some(object @ Value::Object(_)) if crate::definition::exceeds_depth(object, MAX_DEPTH) => {
            Err(format!("arguments nest deeper than {MAX_DEPTH} levels"))
        }
        Some(object @ Value::Object(_)) => Ok(object.clone()),
        Some(Value::String(text)) => parse_arguments_text(text),
        Some(other) => Err(format!(
            "arguments must be a JSON object or a string holding one, got {}",
            kind(other)
        )),
    }
}

/// The deepest nesting read, in either form: `serde_json` reads at most this many levels from
/// text, and objects are held to the same so both forms agree. (Validation later applies the
/// tighter [`MAX_ARGUMENT_DEPTH`](crate::definition::MAX_ARGUMENT_DEPTH).)
const MAX_DEPTH: usize = 127;

/// JSON's own whitespace; other Unicode spaces are not JSON and make the text invalid.
const JSON_WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// Parses an `arguments` string strictly: valid JSON, no duplicate keys (which parsers resolve
/// differently, so a policy could see one value and a handler another), and an object.
fn parse_arguments_text(text: &str) -> Result<Value, String> {
    if text.trim_matches(JSON_WHITESPACE).is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match strict::parse(text) {
        Ok(Value::Object(map)) => Ok(Value::Object(map)),
        Ok(other) => {
            let kind = kind(&other);
            crate::definition::drop_deep(other);
            Err(format!("arguments must be a JSON object, got {kind}"))
        }
        Err(problem) => Err(format!("arguments are {problem}")),
    }
}

/// Parses a provider's whole response body (or an MCP request) as strictly as toolgate parses
/// argument strings: valid JSON, no duplicate key in any object, at most 127 levels. Parse the
/// raw body with it, instead of `serde_json::from_str`, where calls carry their arguments as
/// objects (Anthropic `input`, MCP `arguments`, compatible servers that send objects): otherwise a
/// duplicate key in those arguments has been resolved by your parser, one way, before toolgate
/// sees them.
///
/// # Examples
///
/// ```
/// use toolgate::providers::{self, anthropic};
///
/// let body = r#"{"content": [{"type": "tool_use", "id": "t1", "name": "read_file",
///                "input": {"path": "/work/a", "path": "/etc/passwd"}}]}"#;
/// assert!(providers::parse_body(body).is_err());
/// assert_eq!(serde_json::from_str::<serde_json::Value>(body)?["content"][0]["input"]["path"], "/etc/passwd");
///
/// let body = r#"{"content": [{"type": "tool_use", "id": "t1", "name": "read_file",
///                "input": {"path": "/work/a"}}]}"#;
/// let calls = anthropic::tool_uses(&providers::parse_body(body)?)?;
/// assert_eq!(calls.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`WireError::Malformed`] at place `body`, naming the problem and its position, never the text.
pub fn parse_body(body: &str) -> Result<Value, WireError> {
    strict::parse(body).map_err(|problem| WireError::malformed("body", problem))
}

/// The kind of a JSON value, for messages that must not show the value.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
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
            parse_arguments_text(r#"{"a": [1, {"b": null}]}"#),
            Ok(json!({"a": [1, {"b": null}]}))
        );
        assert_eq!(parse_arguments_text(" \t\r\n"), Ok(json!({})));
        assert_eq!(parse_arguments(None), Ok(json!({})));
        assert_eq!(parse_arguments(Some(&Value::Null)), Ok(json!({})));
        assert_eq!(parse_arguments(Some(&json!({"a": 1}))), Ok(json!({"a": 1})));
    }

    #[test]
    fn only_json_whitespace_counts_as_no_arguments() {
        for text in ["\u{a0}", "\u{2028}", "\u{feff}", "\u{3000}"] {
            let error = parse_arguments_text(text).unwrap_err();
            assert!(
                error.starts_with("arguments are not valid JSON"),
                "{text:?}: {error}"
            );
        }
    }

    #[test]
    fn duplicate_key_errors_give_a_position_not_the_key() {
        let error = parse_arguments_text(r#"{"sk-SECRET": 1, "sk-SECRET": 2}"#).unwrap_err();
        assert_eq!(
            error,
            "arguments are not usable JSON: duplicate key in one object at line 1 column 28"
        );
    }

    #[test]
    fn values_neither_object_nor_string_are_refused_by_kind() {
        for (value, kind) in [
            (json!([1]), "an array"),
            (json!(3), "a number"),
            (json!(true), "a boolean"),
        ] {
            assert_eq!(
                parse_arguments(Some(&value)).unwrap_err(),
                format!("arguments must be a JSON object or a string holding one, got {kind}")
            );
        }
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        for text in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": {"p": "/work", "p": "/etc"}}"#,
            r#"[{"k":1,"k":1}]"#,
        ] {
            let error = parse_arguments_text(text).unwrap_err();
            assert!(error.contains("duplicate key"), "{text}: {error}");
        }
    }

    #[test]
    fn syntax_errors_give_a_position_not_the_text() {
        let error = parse_arguments_text(r#"{"password": "hunter2""#).unwrap_err();
        assert!(
            error.starts_with("arguments are not valid JSON: syntax error at line 1"),
            "{error}"
        );
        assert!(!error.contains("hunter2"));
        let trailing = parse_arguments_text(r#"{} {"second": "secret"}"#).unwrap_err();
        assert!(!trailing.contains("secret"), "{trailing}");
        for nan in ["{\"x\": NaN}", "{\"x\": Infinity}", "{\"x\": -Infinity}"] {
            assert!(parse_arguments_text(nan).is_err(), "{nan}");
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
                parse_arguments_text(text).unwrap_err(),
                format!("arguments must be a JSON object, got {kind}")
            );
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        assert!(parse_arguments_text(&deep).is_err());
    }
}
