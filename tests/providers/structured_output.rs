//! Structured output: a handler's JSON value is checked against the tool's output schema before
//! anything is passed on, carried as `ToolResult::structured`, and mapped for each provider.

use crate::common::*;
use serde_json::{Value, json};
use toolgate::providers::{mcp, openai};
use toolgate::*;

fn output_schema() -> Value {
    json!({"type": "object", "properties": {"sum": {"type": "integer"}},
           "required": ["sum"], "additionalProperties": false})
}

fn spec() -> ToolSpec {
    ToolSpec::new(
        "add",
        "Add a and b.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
    )
    .with_output_schema(output_schema())
}

fn run(definition: ToolDefinition, arguments: Value) -> ToolResult {
    let controller = ToolController::new(registry([definition]), policy(&["add"], &[]));
    match controller.handle(ToolCall::new("c1", "add", arguments)) {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(request) => panic!("{request:?}"),
    }
}

#[test]
fn output_that_satisfies_the_schema_is_passed_on_structured() {
    let add = ToolDefinition::structured(spec(), |args: &Value| {
        Ok(json!({"sum": args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)}))
    })
    .unwrap();
    let result = run(add, json!({"a": 40, "b": 2}));
    assert_eq!(result, ToolResult::structured("c1", json!({"sum": 42})));
    assert_eq!(result.content, r#"{"sum":42}"#);
    // MCP sends the value as structuredContent, beside its text.
    let body = mcp::call_tool_result(&result);
    assert_eq!(body["structuredContent"], json!({"sum": 42}));
    assert_eq!(body["content"][0]["text"], r#"{"sum":42}"#);
    // Chat Completions has no structured tool result: the JSON text is the content.
    assert_eq!(openai::tool_message(&result)["content"], r#"{"sum":42}"#);
}

#[test]
fn output_that_breaks_the_schema_is_never_passed_on_and_never_quoted() {
    for (output, why) in [
        (json!({"sum": "SECRET-42"}), "wrong type"),
        (json!({"total": 42}), "missing and unexpected key"),
        (json!({"sum": 42, "SECRET-key": 1}), "additional property"),
        (json!("SECRET-text"), "not an object"),
        (json!(null), "null"),
    ] {
        let returned = output.clone();
        let tool =
            ToolDefinition::structured(spec(), move |_: &Value| Ok(returned.clone())).unwrap();
        let result = run(tool, json!({"a": 1, "b": 2}));
        assert!(result.is_error, "{why}: {result:?}");
        assert!(result.structured.is_none(), "{why}");
        assert!(
            result
                .content
                .contains("does not satisfy its output schema"),
            "{why}: {}",
            result.content
        );
        assert!(
            !result.content.contains("SECRET"),
            "{why}: {}",
            result.content
        );
    }
    // The count is exact: `{"total": 42}` misses `sum` and adds `total`.
    let tool = ToolDefinition::structured(spec(), |_: &Value| Ok(json!({"total": 42}))).unwrap();
    assert!(
        run(tool, json!({})).content.contains("(2 violation(s))"),
        "the violations are counted"
    );
    // A handler error is an error result as for any tool.
    let failing =
        ToolDefinition::structured(spec(), |_: &Value| Err(ToolError::new("no sum"))).unwrap();
    assert_eq!(run(failing, json!({})), ToolResult::error("c1", "no sum"));
}

#[test]
fn output_is_bounded_like_any_output() {
    let big = ToolDefinition::structured(
        ToolSpec::new("add", "Big.", json!({"type": "object"}))
            .with_output_schema(json!({"type": "object"})),
        |_: &Value| Ok(json!({"blob": "x".repeat(200)})),
    )
    .unwrap()
    .with_max_output_bytes(100);
    let result = run(big, json!({}));
    assert!(
        result.is_error && result.content.contains("too large"),
        "{result:?}"
    );
}

#[test]
fn a_structured_handler_and_an_output_schema_go_together() {
    let text = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let structured = |_: &Value| -> Result<Value, ToolError> { Ok(json!({})) };
    let plain = ToolSpec::new("add", "Add.", json!({"type": "object"}));
    for (result, what) in [
        (
            ToolDefinition::structured(plain.clone(), structured),
            "structured without a schema",
        ),
        (
            ToolDefinition::new(spec(), text),
            "a schema without a structured handler",
        ),
        (
            ToolDefinition::structured(plain.clone().with_output_schema(json!(true)), structured),
            "a schema that is not an object",
        ),
        (
            ToolDefinition::structured(
                plain
                    .clone()
                    .with_output_schema(json!({"$ref": "https://example.com/s.json"})),
                structured,
            ),
            "a remote reference",
        ),
    ] {
        assert!(result.is_err(), "{what}");
    }
}

#[test]
fn the_output_schema_is_part_of_the_definition_digest() {
    let structured = |_: &Value| -> Result<Value, ToolError> { Ok(json!({"sum": 1})) };
    let a = ToolDefinition::structured(spec(), structured).unwrap();
    let wider = spec().with_output_schema(json!({"type": "object"}));
    let b = ToolDefinition::structured(wider, structured).unwrap();
    assert_ne!(
        a.digest(),
        b.digest(),
        "changing the output schema makes approvals stale"
    );
    // A tool without one keeps the digest it always had.
    let text = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let plain =
        ToolDefinition::new(ToolSpec::new("t", "d", json!({"type": "object"})), text).unwrap();
    let round_trip: ToolSpec =
        serde_json::from_value(serde_json::to_value(plain.spec()).unwrap()).unwrap();
    assert_eq!(round_trip.output_schema, None);
    assert!(
        serde_json::to_value(plain.spec())
            .unwrap()
            .get("output_schema")
            .is_none()
    );
}

#[test]
fn an_async_structured_handler_is_checked_the_same_on_every_path() {
    let reply = |value: Value| {
        ToolDefinition::structured_async(spec(), move |_: Value| {
            let value = value.clone();
            async move { Ok::<_, ToolError>(value) }
        })
        .unwrap()
    };
    let good = reply(json!({"sum": 42}));
    assert!(good.is_async());
    assert_eq!(
        run(good, json!({"a": 1, "b": 2})),
        ToolResult::structured("c1", json!({"sum": 42}))
    );
    // Through handle_async too, and a value breaking the schema is never passed on.
    let controller = ToolController::new(
        registry([reply(json!({"sum": "secret-value-77"}))]),
        policy(&["add"], &[]),
    );
    let Outcome::Completed(result) =
        block_on(controller.handle_async(ToolCall::new("c2", "add", json!({}))))
    else {
        panic!("allowed")
    };
    assert!(result.is_error && result.structured.is_none());
    assert!(
        !result.content.contains("secret-value-77"),
        "{}",
        result.content
    );
    // The blocking path drives it to completion and checks it the same way.
    let result = run(reply(json!({"other": 1})), json!({}));
    assert!(result.is_error && result.structured.is_none(), "{result:?}");
    // An async structured handler needs an output schema like a blocking one.
    let no_schema = ToolSpec::new("add", "", json!({"type": "object"}));
    assert!(
        ToolDefinition::structured_async(no_schema, |_: Value| async { Ok(json!({})) }).is_err()
    );
}

fn structured_tool(output: Value) -> ToolRegistry {
    let spec = ToolSpec::new("s", "S.", json!({"type": "object"})).with_output_schema(json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 10}},
        "required": ["n"],
        "additionalProperties": false
    }));
    let def = ToolDefinition::structured(spec, move |_: &Value| -> Result<Value, ToolError> {
        Ok(output.clone())
    })
    .unwrap();
    registry([def])
}

#[test]
fn structured_output_breaking_schema_is_never_passed_on_nor_quoted() {
    for output in [
        json!({"n": 11, "secret": "SECRET-VALUE"}),
        json!({"n": "SECRET-VALUE"}),
        json!({"SECRET-VALUE": 1}),
        json!({"n": 1.5}),
        json!(["SECRET-VALUE"]),
        json!("SECRET-VALUE"),
    ] {
        let controller = ToolController::try_new(
            structured_tool(output.clone()),
            ToolPolicy::new(["s"], Vec::<String>::new()).unwrap(),
        )
        .unwrap();
        let Outcome::Completed(result) = controller.handle(ToolCall::new("c", "s", json!({})))
        else {
            panic!("allowed")
        };
        assert!(result.is_error, "{output} was passed on");
        assert!(result.structured.is_none());
        assert!(!result.content.contains("SECRET"), "{}", result.content);
        assert!(!result.content.contains("11"), "{}", result.content);
    }
}

#[test]
fn structured_output_valid_value_passes() {
    let controller = ToolController::try_new(
        structured_tool(json!({"n": 10.0})),
        ToolPolicy::new(["s"], Vec::<String>::new()).unwrap(),
    )
    .unwrap();
    let Outcome::Completed(result) = controller.handle(ToolCall::new("c", "s", json!({}))) else {
        panic!("allowed")
    };
    // 10.0 is an integer by JSON Schema; it passes, and what passes must satisfy the schema.
    if !result.is_error {
        assert!(result.structured.is_some());
    }
}
