//! Google Gemini API function calling: `functionDeclarations` out, `functionCall` parts in,
//! `functionResponse` parts back.
//!
//! Gemini's parameter schemas are a subset of the OpenAPI 3.0 Schema object; [`tools`] converts
//! each input schema and names the place of anything it cannot express (see
//! [`parameters`] for the rules). A `functionCall` carries an `id` on the Gemini API when the
//! model sends one; when it does not, toolgate derives a stable id from the content and the
//! part's position, and [`function_response`] leaves it out again so Gemini matches the
//! response by name and order, as it does for calls without ids.
//!
//! ```
//! use serde_json::json;
//! use toolgate::providers::gemini;
//! use toolgate::{ToolResult, ToolSpec};
//!
//! let spec = ToolSpec::new("get_weather", "Weather.", json!({"type": "object",
//!     "properties": {"location": {"type": "string"}, "unit": {"type": ["string", "null"]}},
//!     "required": ["location"], "additionalProperties": false}));
//! let tools = gemini::tools([&spec])?;
//! assert_eq!(tools[0]["functionDeclarations"][0]["parameters"]["properties"]["unit"],
//!            json!({"type": "STRING", "nullable": true}));
//!
//! let response = json!({"candidates": [{"content": {"role": "model", "parts": [
//!     {"functionCall": {"id": "fc_1", "name": "get_weather", "args": {"location": "Paris"}}}]}}]});
//! let calls = gemini::function_calls(&response)?;
//! let call = calls[0].as_ref().map_err(|result| result.content.clone())?;
//! assert_eq!(call.call_id, "fc_1");
//! let part = gemini::function_response(&call.tool_name, &ToolResult::ok("fc_1", "sunny"), None);
//! assert_eq!(part["functionResponse"]["response"], json!({"output": "sunny"}));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde_json::{Value, json};
use sha2::Digest as _;

use super::{ExportError, NameRule, NotHandled, NotHandledReason, ParsedCall, Turn, WireError};
use super::{gemini_schema, parse_call};
use crate::contract::{ToolResult, ToolSpec};

pub(super) const NAMES: NameRule = NameRule {
    provider: "Gemini",
    max_len: 64,
    extra: "_-",
    text: "1 to 64 characters from a-z, A-Z, 0-9, '_' and '-', starting with a letter or '_'",
};

/// The prefix of an id toolgate derived for a call that came without one.
pub const DERIVED_ID_PREFIX: &str = "gemini-derived:";

/// The request's `tools` array: one `{"functionDeclarations": [...]}` entry with `{name,
/// description, parameters}` per spec, in order. `parameters` is the input schema converted by
/// [`parameters`]; it is left out for a tool whose schema is an object without properties.
///
/// # Errors
///
/// [`ExportError::InvalidName`] for a name Gemini would refuse (map names with
/// [`NameMap`](super::names::NameMap)); [`ExportError::UnsupportedSchema`] naming the first
/// place in a schema that Gemini's dialect cannot express.
pub fn tools<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>) -> Result<Value, ExportError> {
    let mut declarations = Vec::new();
    for spec in specs {
        NAMES.check(spec)?;
        if spec
            .name
            .starts_with(|c: char| c.is_ascii_digit() || c == '-')
        {
            return Err(ExportError::InvalidName {
                tool: spec.name.clone(),
                provider: NAMES.provider,
                rule: NAMES.text,
            });
        }
        let mut declaration = json!({"name": spec.name, "description": spec.description});
        let parameters = parameters(spec)?;
        if parameters
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| !properties.is_empty())
        {
            declaration["parameters"] = parameters;
        }
        declarations.push(declaration);
    }
    Ok(json!([{ "functionDeclarations": declarations }]))
}

/// A spec's input schema in Gemini's schema dialect: `type` names upper-cased, `["T", "null"]`
/// as `nullable`, `oneOf` as `anyOf`, local `$ref`s inlined, string `const` as a one-value
/// `enum`; annotations and `additionalProperties: false` dropped (the gate still validates every
/// call against the original schema, so the model is told less, never allowed more).
///
/// # Errors
///
/// [`ExportError::UnsupportedSchema`] naming the place (a JSON pointer) of the first keyword
/// with no Gemini equivalent (`not`, `allOf`, `if`, `patternProperties`, `uniqueItems`, …), a
/// map, a tuple, a recursive `$ref`, a schema without a type, an `enum` that is not all strings,
/// or several non-null types; or a root that is not an object schema.
pub fn parameters(spec: &ToolSpec) -> Result<Value, ExportError> {
    let unsupported = |(place, problem): (String, String)| ExportError::UnsupportedSchema {
        tool: spec.name.clone(),
        provider: "Gemini",
        place,
        problem,
    };
    let converted = gemini_schema::convert(&spec.input_schema).map_err(unsupported)?;
    if converted.get("type").and_then(Value::as_str) != Some("OBJECT") {
        return Err(unsupported((
            "/type".into(),
            "the root must be an object schema".into(),
        )));
    }
    Ok(converted)
}

/// The `functionCall` parts of a response, in order. See [`turn`].
///
/// # Errors
///
/// As [`turn`], and [`WireError::NotHandled`] for the first part that is not a call toolgate
/// runs (`executableCode`, `codeExecutionResult`, an unknown kind of part).
pub fn function_calls(response: &Value) -> Result<Vec<ParsedCall>, WireError> {
    let turn = turn(response)?;
    super::turn::refuse(&turn.not_handled)?;
    Ok(turn.calls)
}

/// The calls of a `GenerateContentResponse` (its one candidate's `content`) or of a `Content`
/// (`{"role": "model", "parts": [...]}`), in order, and every part that is not a call toolgate
/// runs. `text`, `thought`, `inlineData` and `fileData` parts are content.
///
/// Each `functionCall` is read as the [module docs](super) say (`args` an object or absent);
/// its id is its `id`, or — when absent — `gemini-derived:` followed by 16 hex digits of the
/// SHA-256 of the content's canonical JSON and the part's position: the same response always
/// gives the same ids, and two responses almost never share one.
///
/// # Errors
///
/// [`WireError`] if the value is neither a response nor a model content; if a response has no
/// candidate, several (request `candidateCount: 1`), or a candidate without content (its
/// `finishReason`, e.g. `MALFORMED_FUNCTION_CALL`, is named); if a part is not an object, an
/// `id` is present but not a non-empty string or starts with [`DERIVED_ID_PREFIX`], or two calls
/// share an id.
pub fn turn(response: &Value) -> Result<Turn, WireError> {
    let content = content_of(response)?;
    if content.get("role").is_some_and(|role| role != "model") {
        return Err(WireError::malformed(
            "content.role",
            "expected a model content",
        ));
    }
    let parts = content
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| WireError::malformed("content.parts", "missing or not an array"))?;
    let digest = sha2::Sha256::digest(crate::canonical::canonical_json(content).as_bytes());
    let stem = crate::canonical::hex_digest(&digest);
    let stem = &stem["sha256:".len().."sha256:".len() + 16];
    let mut turn = Turn::default();
    let mut ids = super::DistinctIds::default();
    for (index, part) in parts.iter().enumerate() {
        let place = format!("parts[{index}]");
        let Some(object) = part.as_object() else {
            return Err(WireError::malformed(place, "a part is not an object"));
        };
        if let Some(call) = object.get("functionCall") {
            let id = match call.get("id") {
                None | Some(Value::Null) => format!("{DERIVED_ID_PREFIX}{stem}:{index}"),
                // toolgate's own prefix, which `function_response` leaves out again: a call the
                // model named so would be answered without its id (an independent attack).
                Some(Value::String(id)) if id.starts_with(DERIVED_ID_PREFIX) => {
                    return Err(WireError::malformed(
                        format!("{place}.functionCall.id"),
                        "starts with `gemini-derived:`, the prefix of the ids toolgate gives calls without one",
                    ));
                }
                Some(Value::String(id)) if !id.is_empty() => id.clone(),
                Some(_) => {
                    return Err(WireError::malformed(
                        format!("{place}.functionCall.id"),
                        "not a non-empty string",
                    ));
                }
            };
            ids.claim(&id, &format!("{place}.functionCall.id"))?;
            turn.calls
                .push(parse_call(id, call.get("name"), call.get("args")));
            // Anything else in the part (`executableCode` beside the call) is listed, not
            // dropped.
            let mut rest = object
                .keys()
                .filter(|key| *key != "functionCall")
                .peekable();
            if rest.peek().is_some()
                && let Some(item) = classify(rest, place)
            {
                turn.not_handled.push(item);
            }
        } else if let Some(item) = classify(object.keys(), place) {
            turn.not_handled.push(item);
        }
    }
    Ok(turn)
}

fn content_of(response: &Value) -> Result<&Value, WireError> {
    let Some(candidates) = response.get("candidates") else {
        if response.get("parts").is_some() {
            return Ok(response);
        }
        return Err(WireError::malformed(
            "candidates",
            "expected a GenerateContentResponse or a model content",
        ));
    };
    let candidates = candidates
        .as_array()
        .ok_or_else(|| WireError::malformed("candidates", "not an array"))?;
    let candidate = match candidates.as_slice() {
        [one] => one,
        [] => {
            return Err(WireError::malformed(
                "candidates",
                "no candidate (the prompt may have been blocked)",
            ));
        }
        _ => {
            return Err(WireError::malformed(
                "candidates",
                "several candidates: request candidateCount 1",
            ));
        }
    };
    match candidate.get("content") {
        Some(content) if content.is_object() => Ok(content),
        _ => Err(WireError::malformed(
            "candidates[0].content",
            format!(
                "missing (finishReason {})",
                crate::contract::quote_bounded(
                    candidate
                        .get("finishReason")
                        .and_then(Value::as_str)
                        .unwrap_or("absent")
                )
            ),
        )),
    }
}

/// A part other than `functionCall`: `None` for content, else what to report.
fn classify<'a>(
    keys: impl Iterator<Item = &'a String> + Clone,
    place: String,
) -> Option<NotHandled> {
    const CONTENT: [&str; 6] = [
        "text",
        "thought",
        "thoughtSignature",
        "inlineData",
        "fileData",
        "videoMetadata",
    ];
    let kind = keys.clone().find(|key| !CONTENT.contains(&key.as_str()));
    if kind.is_none() && keys.clone().next().is_some() {
        return None;
    }
    let kind = kind.map_or("(empty part)", String::as_str);
    let reason = match kind {
        "executableCode" | "codeExecutionResult" => NotHandledReason::RanByProvider,
        _ => NotHandledReason::Unknown,
    };
    Some(NotHandled::new(place, kind, None, reason))
}

/// The `functionResponse` part answering a call named `name`: `response` is `{"error": text}`
/// for an error result, else `{"output": text}` — or, with `structured`, `{"output": value}`
/// plus `"text"` when the text is not empty. The id goes back unless toolgate derived it.
pub fn function_response(name: &str, result: &ToolResult, structured: Option<&Value>) -> Value {
    let response = match (result.is_error, structured) {
        (true, _) => json!({"error": result.content}),
        (false, None) => json!({"output": result.content}),
        (false, Some(value)) if result.content.is_empty() => json!({"output": value}),
        (false, Some(value)) => json!({"output": value, "text": result.content}),
    };
    let mut body = json!({"name": name, "response": response});
    if !result.call_id.starts_with(DERIVED_ID_PREFIX) {
        body["id"] = Value::String(result.call_id.clone());
    }
    json!({ "functionResponse": body })
}

/// The `user` content carrying every `functionResponse` part of one turn, in the order given.
pub fn function_responses_content(parts: Vec<Value>) -> Value {
    json!({"role": "user", "parts": parts})
}
