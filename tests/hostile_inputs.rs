//! Hostile inputs, one named case each: every one ends in a clear error value or error result —
//! no panic, no hang, no unbounded memory. (The start of issue 7's catalogue.)

mod common;

use common::*;
use serde_json::{Value, json};
use toolgate::providers::openai;
use toolgate::*;

fn controller() -> ToolController {
    ToolController::new(registry([calculator()]), policy(&["calculator"], &[]))
}

fn completed(outcome: Outcome) -> ToolResult {
    match outcome {
        Outcome::Completed(result) => result,
        other => panic!("expected a result, got {other:?}"),
    }
}

/// Parses one OpenAI tool call whose `arguments` string is `arguments`.
fn parse_one(arguments: &str) -> Result<ToolCall, ToolResult> {
    let message = json!({"tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": arguments}}
    ]});
    let mut calls = openai::tool_calls(&message).expect("well-formed message");
    assert_eq!(calls.len(), 1, "never dropped");
    calls.remove(0)
}

fn deep_value(depth: usize) -> Value {
    let mut value = json!(0);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

#[test]
fn hostile_invalid_json_arguments() {
    for text in [
        "{",
        "{\"a\": }",
        "{\"a\": 1,}",
        "nul",
        "{\"a\": 1} trailing",
        "\u{feff}{}",
    ] {
        let error = parse_one(text).unwrap_err();
        assert!(
            error.is_error && error.call_id == "c1",
            "{text:?}: {error:?}"
        );
        assert!(
            error.content.contains("not valid JSON"),
            "{text:?}: {}",
            error.content
        );
    }
}

#[test]
fn hostile_nesting_past_129_levels_in_text() {
    let text = format!("{{\"a\": {}1{}}}", "[".repeat(200), "]".repeat(200));
    let error = parse_one(&text).unwrap_err();
    assert!(error.is_error, "{error:?}");
}

#[test]
fn hostile_100000_deep_value_built_in_code() {
    // Built by hand: `json!` would serialize the deep value recursively and overflow first.
    let mut arguments = serde_json::Map::new();
    arguments.insert("a".into(), json!(1));
    arguments.insert("b".into(), json!(2));
    arguments.insert("x".into(), deep_value(100_000));
    let call = ToolCall::new("c1", "calculator", Value::Object(arguments));
    let result = completed(controller().handle(call));
    assert!(result.content.contains("maxDepth"), "{}", result.content);
    // Unknown tool with a deep value: rejected and freed without recursion.
    let call = ToolCall::new("c2", "nope", deep_value(100_000));
    assert_eq!(
        completed(controller().handle(call)).content,
        "unknown tool: nope"
    );
}

#[test]
fn hostile_10_mb_string() {
    let huge = "x".repeat(10 * 1024 * 1024);
    let call = ToolCall::new("c1", "calculator", json!({"a": huge, "b": 1}));
    let result = completed(controller().handle(call));
    assert!(result.is_error);
    assert!(
        result.content.len() < 1_000,
        "the value is not echoed: {} bytes",
        result.content.len()
    );
}

#[test]
fn hostile_integers_beyond_64_bits() {
    let call =
        parse_one(r#"{"a": 123456789012345678901234567890, "b": 1}"#).expect("parses as a float");
    let result = completed(controller().handle(call));
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.call_id, "c1");
}

#[test]
fn hostile_nan_and_infinity_spellings() {
    for spelling in ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"] {
        let parsed = parse_one(&format!("{{\"a\": {spelling}, \"b\": 1}}"));
        match parsed {
            Err(result) => assert!(result.is_error, "{spelling}"),
            // 1e999 overflows to infinity, which JSON cannot hold: refused.
            Ok(call) => panic!("{spelling} parsed into {call:?}"),
        }
    }
}

#[test]
fn hostile_duplicate_keys() {
    let error = parse_one(r#"{"a": 1, "b": 2, "a": 40}"#).unwrap_err();
    assert!(error.content.contains("duplicate key"), "{}", error.content);
}

#[test]
fn hostile_homoglyph_and_padded_tool_names() {
    for name in [
        "calcuIator",
        "calculаtor",
        " calculator",
        "calculator\n",
        "CALCULATOR",
        "calculator\u{200b}",
    ] {
        let result =
            completed(controller().handle(ToolCall::new("c", name, json!({"a": 1, "b": 2}))));
        assert!(
            result.content.starts_with("unknown tool: "),
            "{name:?}: {}",
            result.content
        );
    }
}

#[test]
fn hostile_1_mb_call_id() {
    let id = "i".repeat(1024 * 1024);
    let result = completed(controller().handle(ToolCall::new(
        id.clone(),
        "calculator",
        json!({"a": 1, "b": 2}),
    )));
    assert_eq!(
        result.call_id, id,
        "the id comes back whole: the model must match it"
    );
    assert_eq!(result.content, "3");
}

#[test]
fn hostile_catastrophic_regex_in_a_schema() {
    let spec = ToolSpec::new(
        "t",
        "",
        json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|a)*$"}}}),
    );
    let tool = ToolDefinition::new(spec, |_: &Value| -> Result<String, ToolError> {
        Ok(String::new())
    })
    .expect("linear-time engine compiles it");
    let hostile = format!("{}b", "a".repeat(50_000));
    assert!(tool.validate(&json!({"s": hostile})).is_err());
    // Back-references cannot be run in linear time: refused when the tool is defined.
    let backref = ToolSpec::new(
        "u",
        "",
        json!({"type": "object", "properties": {"s": {"pattern": "(a+)\\1"}}}),
    );
    assert!(
        ToolDefinition::new(backref, |_: &Value| -> Result<String, ToolError> {
            Ok(String::new())
        })
        .is_err()
    );
}

#[test]
fn hostile_remote_file_refs_and_unknown_schema() {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    for schema in [
        json!({"$ref": "https://attacker.example/schema.json"}),
        json!({"$ref": "file:///etc/passwd"}),
        json!({"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:1/x"}}}),
        json!({"$schema": "https://attacker.example/meta", "type": "object"}),
    ] {
        let error = ToolDefinition::new(ToolSpec::new("t", "", schema.clone()), noop).unwrap_err();
        assert!(
            matches!(error, DefinitionError::ExternalReference { .. }),
            "{schema}: {error}"
        );
    }
}

#[test]
fn hostile_handler_returning_huge_output() {
    let flood = ToolDefinition::new(
        ToolSpec::new("flood", "Returns 20 MB.", json!({"type": "object"})),
        |_: &Value| -> Result<String, ToolError> { Ok("y".repeat(20 * 1024 * 1024)) },
    )
    .unwrap();
    let small = ToolDefinition::new(
        ToolSpec::new(
            "small",
            "Returns 100 bytes, limit 10.",
            json!({"type": "object"}),
        ),
        |_: &Value| -> Result<String, ToolError> { Ok("z".repeat(100)) },
    )
    .unwrap()
    .with_max_output_bytes(10);
    let controller =
        ToolController::new(registry([flood, small]), policy(&["flood", "small"], &[]));
    let result = completed(controller.handle(ToolCall::new("c1", "flood", json!({}))));
    assert!(result.is_error);
    assert_eq!(result.call_id, "c1");
    assert_eq!(
        result.content,
        format!(
            "tool output too large: {} bytes, the limit is {DEFAULT_MAX_OUTPUT_BYTES}; it was not passed on",
            20 * 1024 * 1024
        )
    );
    let result = completed(controller.handle(ToolCall::new("c2", "small", json!({}))));
    assert!(
        result.is_error && result.content.contains("100 bytes, the limit is 10"),
        "{result:?}"
    );
}
