//! Hostile inputs, one named case each: every one ends in a clear error value or error result —
//! no panic, no hang, no unbounded memory.

use crate::common::*;
use serde_json::{Value, json};
use toolgate::definition::ArgumentErrors;
use toolgate::definition::DEFAULT_MAX_OUTPUT_BYTES;
use toolgate::definition::DefinitionError;
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
    assert!(
        result.content.contains("nest deeper than 64 levels"),
        "{}",
        result.content
    );
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
            "tool output too large: {} bytes, the limit is {DEFAULT_MAX_OUTPUT_BYTES}; the tool ran, and its output was not passed on",
            20 * 1024 * 1024
        )
    );
    let result = completed(controller.handle(ToolCall::new("c2", "small", json!({}))));
    assert!(
        result.is_error && result.content.contains("100 bytes, the limit is 10"),
        "{result:?}"
    );
}

// ---- Error listings: bounded, and quoting nothing the model chose (issue 10, item 8) ----

/// The longest rejection content: the prefix naming the tool, then the bounded listing.
const MAX_REJECTION_BYTES: usize =
    "invalid arguments for probe: ".len() + ArgumentErrors::MAX_TEXT_BYTES;

/// The error result a tool named `probe` over `schema` gives for `arguments`, and the errors
/// `validate` reports for them.
fn rejection(schema: Value, arguments: Value) -> (String, ArgumentErrors) {
    let tool = ToolDefinition::new(
        ToolSpec::new("probe", "Probe.", schema),
        |_: &Value| -> Result<String, ToolError> { Ok(String::new()) },
    )
    .expect("schema compiles");
    let errors = tool.validate(&arguments).expect_err("invalid");
    let controller = ToolController::new(registry([tool]), policy(&["probe"], &[]));
    let result = completed(controller.handle(ToolCall::new("c", "probe", arguments)));
    assert!(result.is_error, "{}", result.content);
    assert!(
        result.content.len() <= MAX_REJECTION_BYTES,
        "{}",
        result.content.len()
    );
    (result.content, errors)
}

/// Neither the result content, nor the errors' `Display` or `Debug`, holds `SECRET`.
fn assert_quotes_nothing(content: &str, errors: &ArgumentErrors) {
    for text in [
        content.to_owned(),
        errors.to_string(),
        format!("{errors:?}"),
    ] {
        assert!(!text.contains("SECRET"), "{text}");
    }
}

fn pointers(errors: &ArgumentErrors) -> Vec<&str> {
    errors
        .violations()
        .iter()
        .map(|v| v.pointer.as_str())
        .collect()
}

#[test]
fn hostile_400_kb_argument_with_100000_violations_is_listed_within_the_cap() {
    let schema = json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}});
    let arguments = json!({"xs": vec!["x"; 100_000]});
    assert!(arguments.to_string().len() >= 400_000);
    // Before the bound this result was 5,488,934 bytes long.
    let (content, errors) = rejection(schema, arguments);
    assert_eq!(errors.violations().len(), ArgumentErrors::MAX_LISTED);
    assert!(errors.unlisted() > ArgumentErrors::MAX_COUNTED);
    assert!(
        content.starts_with("invalid arguments for probe: more than 1016 violations, the first 16 listed: at \"/xs/0\" (type)"),
        "{content}"
    );
}

#[test]
fn hostile_violation_count_is_exact_below_the_counting_bound() {
    let schema = json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}});
    let (content, errors) = rejection(schema, json!({"xs": vec!["x"; 500]}));
    assert_eq!(errors.unlisted(), 500 - ArgumentErrors::MAX_LISTED);
    assert!(
        content.contains(": 500 violations, the first 16 listed: "),
        "{content}"
    );
}

#[test]
fn hostile_100000_unexpected_secret_keys_are_counted_not_named() {
    let mut arguments = serde_json::Map::new();
    for index in 0..100_000 {
        arguments.insert(format!("SECRET{index}"), json!(1));
    }
    arguments.insert("a".to_owned(), json!(1));
    arguments.insert("b".to_owned(), json!(2));
    // Before, the listing quoted every key: 1,489,014 bytes.
    let (content, errors) = rejection(calculator_schema(), Value::Object(arguments));
    assert_quotes_nothing(&content, &errors);
    assert!(content.contains("(additionalProperties)"), "{content}");
    assert!(
        content.contains("100000 found; names not shown"),
        "{content}"
    );
}

#[test]
fn hostile_secret_key_under_unevaluated_properties_false() {
    let schema = json!({
        "type": "object",
        "allOf": [{"properties": {"a": {"type": "integer"}}}],
        "unevaluatedProperties": false
    });
    let (content, errors) = rejection(schema, json!({"a": 1, "SECRET_KEY": 2}));
    assert_quotes_nothing(&content, &errors);
    assert_eq!(errors.violations()[0].keyword, "unevaluatedProperties");
}

#[test]
fn hostile_failing_value_under_a_secret_key_of_a_map_has_its_pointer_masked() {
    let schema = json!({
        "type": "object",
        "properties": {"env": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}}},
        "patternProperties": {"^S": {"type": "integer"}}
    });
    let (content, errors) = rejection(
        schema,
        json!({"SECRET_TOKEN": "x", "env": {"SECRET_NAME": ["y"]}}),
    );
    assert_quotes_nothing(&content, &errors);
    let mut found = pointers(&errors);
    found.sort_unstable();
    // Declared names and array indices stay; the model's keys become `*`.
    assert_eq!(found, ["/*", "/env/*/0"]);
}

#[test]
fn hostile_numeric_map_key_is_masked_but_array_index_is_not() {
    let schema = json!({
        "type": "object",
        "properties": {"pins": {"type": "object", "additionalProperties": {"type": "integer"}}, "xs": {"type": "array", "items": {"type": "integer"}}}
    });
    let (content, errors) = rejection(schema, json!({"pins": {"4921": "x"}, "xs": [1, "y"]}));
    assert!(!content.contains("4921"), "{content}");
    let mut found = pointers(&errors);
    found.sort_unstable();
    assert_eq!(found, ["/pins/*", "/xs/1"]);
}

#[test]
fn hostile_secret_key_with_slash_and_tilde_is_masked_and_declared_ones_are_escaped() {
    let schema = json!({
        "type": "object",
        "properties": {"a/b~c": {"type": "integer"}},
        "additionalProperties": {"type": "integer"}
    });
    let (content, errors) = rejection(schema, json!({"a/b~c": "x", "SE/CR~ET/0": "y"}));
    assert_quotes_nothing(&content, &errors);
    assert!(
        !content.contains("CR~ET") && !content.contains("CR~0ET"),
        "{content}"
    );
    let mut found = pointers(&errors);
    found.sort_unstable();
    assert_eq!(found, ["/*", "/a~1b~0c"]);
}

#[test]
fn hostile_dependent_required_names_only_schema_names() {
    let schema = json!({"type": "object", "dependentRequired": {"card": ["cvv"]}});
    let (content, errors) = rejection(schema, json!({"card": "SECRET-4111"}));
    assert_quotes_nothing(&content, &errors);
    assert!(
        content.contains("\"cvv\" is a required property"),
        "{content}"
    );
}

#[test]
fn hostile_property_names_failure_does_not_quote_the_name() {
    let schema = json!({"type": "object", "propertyNames": {"maxLength": 3}});
    let (content, errors) = rejection(schema, json!({"SECRET_NAME": 1}));
    assert_quotes_nothing(&content, &errors);
    assert_eq!(errors.violations()[0].keyword, "propertyNames");
}

#[test]
fn hostile_enum_const_pattern_and_format_failures_mask_secret_values() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "e": {"enum": ["red", "green"]},
            "c": {"const": "fixed"},
            "p": {"pattern": "^[a-z]+$"},
            "f": {"format": "ipv4"}
        }
    });
    let (content, errors) = rejection(
        schema,
        json!({"e": "SECRET1", "c": "SECRET2", "p": "SECRET3", "f": "SECRET4"}),
    );
    assert_quotes_nothing(&content, &errors);
    let mut keywords: Vec<&str> = errors
        .violations()
        .iter()
        .map(|v| v.keyword.as_str())
        .collect();
    keywords.sort_unstable();
    assert_eq!(keywords, ["const", "enum", "format", "pattern"]);
}

#[test]
fn hostile_huge_const_message_is_cut() {
    // The message quotes the schema's expected value, here 10 KB long.
    let schema = json!({"type": "object", "properties": {"c": {"const": "k".repeat(10_000)}}});
    let (content, errors) = rejection(schema, json!({"c": "SECRET"}));
    assert_quotes_nothing(&content, &errors);
    let message = &errors.violations()[0].message;
    assert!(
        message.len() <= ArgumentErrors::MAX_MESSAGE_BYTES,
        "{}",
        message.len()
    );
    assert!(message.ends_with('…'), "{message}");
}

#[test]
fn hostile_many_long_declared_names_cut_the_listing_text() {
    // Sixteen violations at pointers the schema declares, each name 1 KiB: the text is cut.
    let name = |index: usize| format!("{index:04}{}", "n".repeat(1020));
    let properties: serde_json::Map<String, Value> = (0..16)
        .map(|index| (name(index), json!({"type": "integer"})))
        .collect();
    let arguments: serde_json::Map<String, Value> =
        (0..16).map(|index| (name(index), json!("x"))).collect();
    let schema = json!({"type": "object", "properties": properties});
    let (content, errors) = rejection(schema, Value::Object(arguments));
    assert_eq!(errors.violations().len(), 16);
    assert!(errors.to_string().len() <= ArgumentErrors::MAX_TEXT_BYTES);
    assert!(content.ends_with("; … (listing cut)"), "{content}");
}
