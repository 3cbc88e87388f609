//! Provider adapters against payloads shaped like the providers' documentation (see
//! `tests/fixtures/SOURCES.md`), plus every way a model's call can be unusable.

use serde_json::{Value, json};
use toolgate::providers::{
    self, ExportError, ParsedCall, WireError, anthropic, mcp, openai, responses,
};
use toolgate::*;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture exists"))
        .expect("fixture is JSON")
}

fn ok_calls(parsed: Vec<ParsedCall>) -> Vec<ToolCall> {
    parsed
        .into_iter()
        .map(|call| call.unwrap_or_else(|result| panic!("unexpected error result {result:?}")))
        .collect()
}

fn weather_registry() -> ToolRegistry {
    let echo = |args: &Value| -> Result<String, ToolError> { Ok(args.to_string()) };
    let location = json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]});
    ToolRegistry::new([
        ToolDefinition::new(
            ToolSpec::new("get_weather", "Weather for a location.", location),
            echo,
        )
        .unwrap(),
        ToolDefinition::new(
            ToolSpec::new("send_email", "Send an email.", json!({"type": "object"})),
            echo,
        )
        .unwrap(),
    ])
    .unwrap()
}

/// The weather tools with schemas that already meet OpenAI's strict-mode rules.
fn strict_weather_registry() -> ToolRegistry {
    let echo = |args: &Value| -> Result<String, ToolError> { Ok(args.to_string()) };
    let location = json!({"type": "object", "properties": {"location": {"type": "string"}},
        "required": ["location"], "additionalProperties": false});
    let empty =
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false});
    ToolRegistry::new([
        ToolDefinition::new(
            ToolSpec::new("get_weather", "Weather for a location.", location),
            echo,
        )
        .unwrap(),
        ToolDefinition::new(ToolSpec::new("send_email", "Send an email.", empty), echo).unwrap(),
    ])
    .unwrap()
}

// ---- OpenAI Chat Completions and DeepSeek ------------------------------------------------------

#[test]
fn openai_parallel_calls_keep_order_and_ids() {
    let response = fixture("openai_chat_parallel.json");
    let calls = ok_calls(openai::tool_calls(&response["choices"][0]["message"]).unwrap());
    let summary: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.call_id.as_str(), c.tool_name.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("call_12345xyz", "get_weather"),
            ("call_67890abc", "get_weather"),
            ("call_99999def", "send_email")
        ]
    );
    assert_eq!(calls[1].arguments, json!({"location": "Bogotá, Colombia"}));
}

#[test]
fn openai_round_trip_through_the_controller() {
    let controller = ToolController::new(
        weather_registry(),
        ToolPolicy::new(["get_weather"], ["send_email"]).unwrap(),
    );
    let response = fixture("openai_chat_parallel.json");
    let mut replies = Vec::new();
    for parsed in openai::tool_calls(&response["choices"][0]["message"]).unwrap() {
        let result = match parsed {
            Ok(call) => match controller.handle(call) {
                Outcome::Completed(result) => result,
                Outcome::PendingApproval(request) => controller
                    .resolve(ApprovalResponse::reject(request.approval_id))
                    .unwrap(),
            },
            Err(result) => result,
        };
        replies.push(openai::tool_message(&result));
    }
    let ids: Vec<&str> = replies
        .iter()
        .map(|r| r["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_12345xyz", "call_67890abc", "call_99999def"]);
    assert_eq!(
        replies[0],
        json!({"role": "tool", "tool_call_id": "call_12345xyz", "content": "{\"location\":\"Paris, France\"}"})
    );
    assert!(
        replies[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("rejected")
    );
}

#[test]
fn deepseek_uses_the_openai_format() {
    let response = fixture("deepseek_chat.json");
    let calls = ok_calls(openai::tool_calls(&response["choices"][0]["message"]).unwrap());
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].call_id,
        "call_0_8f9d6a1b-3c2e-4f5a-9b7c-1d2e3f4a5b6c"
    );
    assert_eq!(calls[0].arguments, json!({"location": "Hangzhou"}));
}

#[test]
fn openai_unusable_calls_become_error_results_in_place() {
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "ok", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Oslo\"}"}},
        {"id": "bad_json", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"sk-SECRET"}},
        {"id": "dup", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"a\",\"location\":\"b\"}"}},
        {"id": "array", "type": "function", "function": {"name": "get_weather", "arguments": "[\"Oslo\"]"}},
        {"id": "custom", "type": "custom", "custom": {"name": "code_exec", "input": "print('hello')"}},
        {"id": "nan", "type": "function", "function": {"name": "get_weather", "arguments": "{\"x\": NaN}"}},
        {"id": "no_args", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    ]});
    let parsed = openai::tool_calls(&message).unwrap();
    assert_eq!(parsed.len(), 7, "no call dropped");
    let ids: Vec<&str> = parsed
        .iter()
        .map(|p| match p {
            Ok(call) => call.call_id.as_str(),
            Err(result) => result.call_id.as_str(),
        })
        .collect();
    assert_eq!(
        ids,
        ["ok", "bad_json", "dup", "array", "custom", "nan", "no_args"]
    );
    assert!(parsed[0].is_ok());
    for (index, expected) in [
        (1, "not valid JSON"),
        (2, "duplicate key"),
        (3, "must be a JSON object, got an array"),
        (4, "unsupported tool call type \"custom\""),
        (5, "not valid JSON"),
    ] {
        let result = parsed[index].as_ref().unwrap_err();
        assert!(result.is_error);
        assert!(
            result.content.contains(expected),
            "{index}: {}",
            result.content
        );
        assert!(!result.content.contains("SECRET"));
    }
    assert_eq!(parsed[6].as_ref().unwrap().arguments, json!({}));
}

#[test]
fn openai_messages_without_ids_are_wire_errors() {
    let message =
        json!({"tool_calls": [{"type": "function", "function": {"name": "x", "arguments": "{}"}}]});
    assert_eq!(
        openai::tool_calls(&message),
        Err(WireError::Malformed {
            place: "tool_calls[0].id".into(),
            problem: "missing or not a non-empty string".into()
        })
    );
    assert!(openai::tool_calls(&json!({"tool_calls": {}})).is_err());
    assert_eq!(
        openai::tool_calls(&json!({"role": "assistant", "content": "hi"})),
        Ok(vec![])
    );
}

#[test]
fn openai_tools_export_in_order_with_strict() {
    // `strict: true` is only claimed for a schema that meets the strict-mode rules.
    assert!(matches!(
        openai::tools(weather_registry().specs(), true),
        Err(ExportError::UnsupportedSchema { place, .. }) if place == "/"
    ));
    let registry = strict_weather_registry();
    let tools = openai::tools(registry.specs(), true).unwrap();
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "get_weather");
    assert_eq!(tools[0]["function"]["strict"], true);
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["location"])
    );
    assert_eq!(tools[1]["function"]["name"], "send_email");
    assert!(
        openai::tools(registry.specs(), false).unwrap()[0]["function"]
            .get("strict")
            .is_none()
    );
}

// ---- names -------------------------------------------------------------------------------------

#[test]
fn names_a_provider_would_refuse_are_export_errors_naming_the_tool() {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let spec = |name: &str| ToolSpec::new(name, "", json!({"type": "object"}));
    let long = "a".repeat(65);
    for name in ["has space", "dot.ted", "ünïcode", long.as_str()] {
        let error = openai::tools([&spec(name)], false).unwrap_err();
        assert_eq!(
            error,
            ExportError::InvalidName {
                tool: name.to_owned(),
                provider: "OpenAI",
                rule: "1 to 64 characters from a-z, A-Z, 0-9, '_' and '-'"
            }
        );
        assert!(error.to_string().contains(&format!("{name:?}")));
        assert!(anthropic::tools([&spec(name)]).is_err(), "{name}");
        assert!(responses::tools([&spec(name)], false).is_err(), "{name}");
    }
    // MCP allows dots and up to 128 characters.
    assert!(mcp::tool(&spec("dot.ted")).is_ok());
    assert!(mcp::tool(&spec(&long)).is_ok());
    assert!(mcp::tool(&spec(&"a".repeat(129))).is_err());
    assert!(mcp::tool(&spec("has space")).is_err());
    let _ = ToolDefinition::new(spec("ok_name-1"), noop).unwrap();
    assert!(openai::tools([&spec("ok_name-1")], false).is_ok());
}

// ---- OpenAI Responses --------------------------------------------------------------------------

#[test]
fn responses_calls_correlate_by_call_id_not_item_id() {
    let response = fixture("responses_parallel.json");
    let calls = ok_calls(responses::function_calls(&response).unwrap());
    let ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["call_12345xyz", "call_67890abc", "call_99999def"]);
    let output = responses::function_call_output(&ToolResult::ok("call_67890abc", "18°C"));
    assert_eq!(
        output,
        json!({"type": "function_call_output", "call_id": "call_67890abc", "output": "18°C"})
    );
    assert!(responses::tools(weather_registry().specs(), true).is_err());
    let tools = responses::tools(strict_weather_registry().specs(), true).unwrap();
    assert_eq!(
        tools[0],
        json!({"type": "function", "name": "get_weather", "description": "Weather for a location.",
        "parameters": strict_weather_registry().specs().next().unwrap().input_schema, "strict": true})
    );
}

#[test]
fn responses_unusable_items_are_error_results() {
    let output = json!([
        {"type": "message", "id": "msg_1", "content": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"a\":1,\"a\":2}"},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_2", "name": "code_exec", "input": "rm -rf /"}
    ]);
    let parsed = responses::function_calls(&output).unwrap();
    assert_eq!(parsed.len(), 2);
    assert!(
        parsed[0]
            .as_ref()
            .unwrap_err()
            .content
            .contains("duplicate key")
    );
    assert_eq!(parsed[1].as_ref().unwrap_err().call_id, "call_2");
    assert!(
        responses::function_calls(&json!({"output": [{"type": "function_call", "id": "fc"}]}))
            .is_err()
    );
}

// ---- Anthropic ---------------------------------------------------------------------------------

#[test]
fn anthropic_parallel_tool_uses_and_one_results_message() {
    let message = fixture("anthropic_parallel.json");
    let calls = ok_calls(anthropic::tool_uses(&message).unwrap());
    let summary: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.call_id.as_str(), c.tool_name.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("toolu_01A09q90qw90lq917835lq9", "get_weather"),
            ("toolu_01B09q90qw90lq917835lq9", "get_time")
        ]
    );

    let controller = ToolController::new(
        weather_registry(),
        ToolPolicy::new(["get_weather"], Vec::<String>::new()).unwrap(),
    );
    let results: Vec<ToolResult> = calls
        .into_iter()
        .map(|call| match controller.handle(call) {
            Outcome::Completed(result) => result,
            other => panic!("{other:?}"),
        })
        .collect();
    let reply = anthropic::tool_results_message(&results);
    assert_eq!(reply["role"], "user");
    assert_eq!(
        reply["content"].as_array().unwrap().len(),
        2,
        "all results in one message"
    );
    assert_eq!(
        reply["content"][0]["tool_use_id"],
        "toolu_01A09q90qw90lq917835lq9"
    );
    assert!(reply["content"][0].get("is_error").is_none());
    assert_eq!(
        reply["content"][1],
        json!({"type": "tool_result", "tool_use_id": "toolu_01B09q90qw90lq917835lq9",
        "content": "unknown tool: get_time", "is_error": true})
    );
}

#[test]
fn anthropic_tools_and_bad_blocks() {
    let tools = anthropic::tools(weather_registry().specs()).unwrap();
    assert_eq!(tools[0]["input_schema"]["type"], "object");
    assert!(tools[0].get("parameters").is_none());
    let message = json!({"content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": ["Paris"]}]});
    let parsed = anthropic::tool_uses(&message).unwrap();
    assert!(
        parsed[0]
            .as_ref()
            .unwrap_err()
            .content
            .contains("got an array")
    );
    assert!(
        anthropic::tool_uses(&json!({"content": [{"type": "tool_use", "name": "x"}]})).is_err()
    );
}

// ---- MCP ---------------------------------------------------------------------------------------

#[test]
fn mcp_tools_list_round_trips_and_keeps_annotations_as_hints() {
    let listed = fixture("mcp_tools_list.json");
    let entry = &listed["result"]["tools"][0];
    let tool = mcp::tool_from_list_entry(entry).unwrap();
    assert_eq!(tool.spec.name, "get_weather");
    assert_eq!(tool.title.as_deref(), Some("Weather Information Provider"));
    assert_eq!(
        tool.annotations,
        Some(json!({"readOnlyHint": true, "destructiveHint": false}))
    );
    let back = mcp::tool(&tool.spec).unwrap();
    assert_eq!(back["inputSchema"], entry["inputSchema"]);

    // A read-only hint grants nothing: with a policy that names no tool, the call is denied.
    let echo = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let registry = ToolRegistry::new([ToolDefinition::new(tool.spec, echo).unwrap()]).unwrap();
    let controller = ToolController::new(registry, ToolPolicy::default());
    let outcome = controller.handle(ToolCall::new("1", "get_weather", json!({"location": "x"})));
    assert!(matches!(
        outcome,
        Outcome::Completed(ToolResult { is_error: true, .. })
    ));
}

#[test]
fn mcp_tools_call_and_unknown_tool_error_match_the_spec() {
    let exchange = fixture("mcp_tools_call.json");
    let registry = weather_registry();
    let call = mcp::call_from_request(&exchange["request"], &registry).unwrap();
    assert_eq!(
        call,
        ToolCall::new("2", "get_weather", json!({"location": "New York"}))
    );
    let text = exchange["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(
        mcp::call_tool_response(&json!(2), &ToolResult::ok("2", text)),
        exchange["result"]
    );
    assert_eq!(
        mcp::call_from_request(&exchange["unknown_tool_request"], &registry).unwrap_err(),
        exchange["unknown_tool_error"]
    );
    let failed = mcp::call_tool_result(&ToolResult::error("2", "city not found"));
    assert_eq!(failed["isError"], true);
    let bad_args = json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "get_weather", "arguments": [1]}});
    assert_eq!(
        mcp::call_from_request(&bad_args, &registry).unwrap_err()["error"]["code"],
        mcp::INVALID_PARAMS
    );
    let string_id = json!({"jsonrpc": "2.0", "id": "req-7", "method": "tools/call", "params": {"name": "send_email"}});
    assert_eq!(
        mcp::call_from_request(&string_id, &registry)
            .unwrap()
            .call_id,
        "req-7"
    );
    let list = mcp::tools_list_result(registry.specs()).unwrap();
    assert_eq!(list["tools"][1]["name"], "send_email");
}

mod one_reading;
