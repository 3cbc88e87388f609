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

// ---- one reading of a call for every adapter ---------------------------------------------------

/// The four adapters that read calls.
#[derive(Debug, Clone, Copy)]
enum Adapter {
    Chat,
    Responses,
    Anthropic,
    Mcp,
}

const ADAPTERS: [Adapter; 4] = [
    Adapter::Chat,
    Adapter::Responses,
    Adapter::Anthropic,
    Adapter::Mcp,
];

/// What an adapter made of one call, in terms every adapter shares.
#[derive(Debug, Clone, PartialEq)]
enum Read {
    /// A usable call with these arguments.
    Call(Value),
    /// An error answer addressed to this call id (MCP: a `-32602` response with the request's id).
    ErrorFor { id: String, content: String },
    /// Nothing can be addressed (MCP: a `-32600` response with id `null`).
    Wire,
}

/// One call in `adapter`'s format, each part placed where that format puts it, or left out.
fn one_call(
    adapter: Adapter,
    id: Option<&Value>,
    name: Option<&Value>,
    arguments: Option<&Value>,
) -> Value {
    let mut call = serde_json::Map::new();
    let mut put = |key: &str, value: Option<&Value>| {
        if let Some(value) = value {
            call.insert(key.to_owned(), value.clone());
        }
    };
    match adapter {
        Adapter::Chat => {
            put("id", id);
            let mut function = serde_json::Map::new();
            for (key, value) in [("name", name), ("arguments", arguments)] {
                if let Some(value) = value {
                    function.insert(key.to_owned(), value.clone());
                }
            }
            put("type", Some(&json!("function")));
            put("function", Some(&Value::Object(function)));
            json!({"role": "assistant", "tool_calls": [call]})
        }
        Adapter::Responses => {
            put("type", Some(&json!("function_call")));
            put("id", Some(&json!("fc_1")));
            put("call_id", id);
            put("name", name);
            put("arguments", arguments);
            json!({"output": [call]})
        }
        Adapter::Anthropic => {
            put("type", Some(&json!("tool_use")));
            put("id", id);
            put("name", name);
            put("input", arguments);
            json!({"role": "assistant", "content": [call]})
        }
        Adapter::Mcp => {
            put("name", name);
            put("arguments", arguments);
            let mut request = json!({"jsonrpc": "2.0", "method": "tools/call", "params": call});
            if let Some(id) = id {
                request["id"] = id.clone();
            }
            request
        }
    }
}

fn one_tool_registry() -> ToolRegistry {
    let echo = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let spec = ToolSpec::new("t", "A tool.", json!({"type": "object"}));
    ToolRegistry::new([ToolDefinition::new(spec, echo).unwrap()]).unwrap()
}

/// Reads `payload` with `adapter`, checking what every outcome must carry: one call, never
/// dropped, answered under the id it was sent with.
fn read(adapter: Adapter, payload: &Value, registry: &ToolRegistry) -> Read {
    let single = |parsed: Result<Vec<ParsedCall>, WireError>| match parsed {
        Err(_) => Read::Wire,
        Ok(mut calls) => {
            assert_eq!(
                calls.len(),
                1,
                "{adapter:?}: a call was dropped or invented"
            );
            match calls.remove(0) {
                Ok(call) => {
                    assert_eq!(call.tool_name, "t", "{adapter:?}");
                    Read::Call(call.arguments)
                }
                Err(result) => {
                    assert!(result.is_error, "{adapter:?}");
                    Read::ErrorFor {
                        id: result.call_id,
                        content: result.content,
                    }
                }
            }
        }
    };
    match adapter {
        Adapter::Chat => single(openai::tool_calls(payload)),
        Adapter::Responses => single(responses::function_calls(payload)),
        Adapter::Anthropic => single(anthropic::tool_uses(payload)),
        Adapter::Mcp => match mcp::call_from_request(payload, registry) {
            Ok(call) => {
                assert_eq!(call.tool_name, "t");
                Read::Call(call.arguments)
            }
            Err(response) if response["error"]["code"] == mcp::INVALID_REQUEST => {
                assert_eq!(response["id"], Value::Null);
                Read::Wire
            }
            Err(response) => {
                assert_eq!(response["error"]["code"], mcp::INVALID_PARAMS);
                assert_eq!(response["id"], payload["id"], "answered under its id");
                Read::ErrorFor {
                    id: payload["id"].as_str().unwrap().to_owned(),
                    content: response["error"]["message"].as_str().unwrap().to_owned(),
                }
            }
        },
    }
}

/// Reads the same call through all four adapters and returns the one reading they agree on.
fn read_everywhere(id: Option<&Value>, name: Option<&Value>, arguments: Option<&Value>) -> Read {
    let registry = one_tool_registry();
    let readings: Vec<Read> = ADAPTERS
        .iter()
        .map(|&adapter| read(adapter, &one_call(adapter, id, name, arguments), &registry))
        .collect();
    for (adapter, reading) in ADAPTERS.iter().zip(&readings).skip(1) {
        assert_eq!(
            reading, &readings[0],
            "{adapter:?} reads the call differently from Chat"
        );
    }
    readings.into_iter().next().unwrap()
}

/// An object nesting `levels` containers deep: `{"a":[[…[1]…]]}`.
fn nested_text(levels: usize) -> String {
    let arrays = levels - 1;
    format!("{{\"a\":{}1{}}}", "[".repeat(arrays), "]".repeat(arrays))
}

fn nested_object(levels: usize) -> Value {
    let mut value = json!(1);
    for _ in 1..levels {
        value = Value::Array(vec![value]);
    }
    let mut object = serde_json::Map::new();
    object.insert("a".to_owned(), value);
    Value::Object(object)
}

#[test]
fn hostile_arguments_read_the_same_through_every_adapter() {
    let big = "x".repeat(1 << 20);
    let usable: Vec<(&str, Option<Value>, Value)> = vec![
        ("absent", None, json!({})),
        ("null", Some(Value::Null), json!({})),
        ("empty object", Some(json!({})), json!({})),
        (
            "object",
            Some(json!({"a": 1, "b": [true, null]})),
            json!({"a": 1, "b": [true, null]}),
        ),
        ("empty string", Some(json!("")), json!({})),
        ("JSON whitespace only", Some(json!(" \t\r\n")), json!({})),
        ("object text", Some(json!("{\"a\":1}")), json!({"a": 1})),
        (
            "object text in whitespace",
            Some(json!("\n {\"a\":1} \t")),
            json!({"a": 1}),
        ),
        (
            "1 MiB string inside",
            Some(json!(format!("{{\"a\":\"{big}\"}}"))),
            json!({"a": big}),
        ),
        (
            "127 levels in text",
            Some(json!(nested_text(127))),
            nested_object(127),
        ),
        (
            "127 levels as an object",
            Some(nested_object(127)),
            nested_object(127),
        ),
    ];
    for (case, arguments, expected) in &usable {
        let reading = read_everywhere(Some(&json!("c1")), Some(&json!("t")), arguments.as_ref());
        assert_eq!(reading, Read::Call(expected.clone()), "{case}");
    }

    let refused: Vec<(&str, Value, &str)> = vec![
        ("no-break space only", json!("\u{a0}"), "not valid JSON"),
        ("byte order mark", json!("\u{feff}{}"), "not valid JSON"),
        ("cut off", json!("{\"key\": \"sk-SECRET"), "not valid JSON"),
        (
            "trailing value",
            json!("{} {\"key\": \"sk-SECRET\"}"),
            "not valid JSON",
        ),
        ("single quotes", json!("{'a': 1}"), "not valid JSON"),
        (
            "comment",
            json!("{\"a\": 1 /* sk-SECRET */}"),
            "not valid JSON",
        ),
        (
            "duplicate key",
            json!("{\"sk-SECRET\": 1, \"sk-SECRET\": 2}"),
            "duplicate key",
        ),
        (
            "nested duplicate key",
            json!("{\"x\": {\"p\": \"/work\", \"p\": \"/etc\"}}"),
            "duplicate key",
        ),
        (
            "duplicate key inside an array",
            json!("[{\"k\": 1, \"k\": 1}]"),
            "duplicate key",
        ),
        ("NaN", json!("{\"x\": NaN}"), "not valid JSON"),
        ("Infinity", json!("{\"x\": Infinity}"), "not valid JSON"),
        ("-Infinity", json!("{\"x\": -Infinity}"), "not valid JSON"),
        (
            "number out of range",
            json!("{\"x\": 1e400}"),
            "not valid JSON",
        ),
        (
            "lone surrogate",
            json!("{\"x\": \"\\ud800\"}"),
            "not valid JSON",
        ),
        (
            "128 levels in text",
            json!(nested_text(128)),
            "not valid JSON",
        ),
        (
            "128 levels as an object",
            nested_object(128),
            "arguments nest deeper than 127 levels",
        ),
        (
            "null text",
            json!("null"),
            "must be a JSON object, got null",
        ),
        (
            "array text",
            json!("[1]"),
            "must be a JSON object, got an array",
        ),
        (
            "string text",
            json!("\"{}\""),
            "must be a JSON object, got a string",
        ),
        (
            "number text",
            json!("3"),
            "must be a JSON object, got a number",
        ),
        (
            "boolean text",
            json!("true"),
            "must be a JSON object, got a boolean",
        ),
        (
            "array",
            json!(["sk-SECRET"]),
            "or a string holding one, got an array",
        ),
        (
            "empty array",
            json!([]),
            "or a string holding one, got an array",
        ),
        ("number", json!(3), "or a string holding one, got a number"),
        (
            "boolean",
            json!(false),
            "or a string holding one, got a boolean",
        ),
    ];
    for (case, arguments, problem) in &refused {
        let reading = read_everywhere(Some(&json!("c1")), Some(&json!("t")), Some(arguments));
        let Read::ErrorFor { id, content } = reading else {
            panic!("{case}: {reading:?}");
        };
        assert_eq!(id, "c1", "{case}");
        assert!(
            content.starts_with("invalid arguments for t: "),
            "{case}: {content}"
        );
        assert!(content.contains(problem), "{case}: {content}");
        assert!(
            !content.contains("SECRET") && !content.contains("/etc"),
            "{case}: {content}"
        );
        assert!(content.len() < 200, "{case}: {} bytes", content.len());
    }
}

#[test]
fn calls_without_a_usable_name_are_error_results_in_every_adapter() {
    let arguments = json!({"a": 1});
    for name in [
        None,
        Some(Value::Null),
        Some(json!("")),
        Some(json!(42)),
        Some(json!(["t"])),
        Some(json!({"name": "t"})),
    ] {
        assert_eq!(
            read_everywhere(Some(&json!("c1")), name.as_ref(), Some(&arguments)),
            Read::ErrorFor {
                id: "c1".into(),
                content: "tool call has no name".into()
            },
            "{name:?}"
        );
    }
}

#[test]
fn calls_without_a_usable_id_are_wire_errors_in_every_adapter() {
    let arguments = json!({"a": 1});
    for id in [
        None,
        Some(Value::Null),
        Some(json!("")),
        Some(json!(true)),
        Some(json!(1.5)),
        Some(json!(["c1"])),
        Some(json!({"id": "c1"})),
    ] {
        assert_eq!(
            read_everywhere(id.as_ref(), Some(&json!("t")), Some(&arguments)),
            Read::Wire,
            "{id:?}"
        );
    }
    // JSON-RPC, and so MCP, also allows integer ids; the other formats have string ids only.
    let registry = one_tool_registry();
    for adapter in ADAPTERS {
        let payload = one_call(
            adapter,
            Some(&json!(7)),
            Some(&json!("t")),
            Some(&arguments),
        );
        let expected = match adapter {
            Adapter::Mcp => Read::Call(arguments.clone()),
            _ => Read::Wire,
        };
        assert_eq!(read(adapter, &payload, &registry), expected, "{adapter:?}");
    }
}

#[test]
fn oversized_names_are_quoted_bounded_in_every_adapter() {
    let name = json!(format!("sk-SECRET{}", "n".repeat(1 << 20)));
    let registry = one_tool_registry();
    for adapter in ADAPTERS {
        let payload = one_call(
            adapter,
            Some(&json!("c1")),
            Some(&name),
            Some(&json!("[1]")),
        );
        let text = match adapter {
            // MCP refuses a tool its registry lacks before reading arguments.
            Adapter::Mcp => {
                mcp::call_from_request(&payload, &registry).unwrap_err()["error"]["message"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            }
            _ => match read(adapter, &payload, &registry) {
                Read::ErrorFor { content, .. } => content,
                other => panic!("{adapter:?}: {other:?}"),
            },
        };
        assert!(text.len() < 300, "{adapter:?}: {} bytes", text.len());
    }
}

#[test]
fn openai_calls_without_a_function_or_of_another_type_are_error_results() {
    let message = json!({"tool_calls": [
        {"id": "no_function", "type": "function"},
        {"id": "function_not_object", "type": "function", "function": "t"},
        {"id": "type_number", "type": 5, "function": {"name": "t", "arguments": "{}"}},
        {"id": "no_type", "function": {"name": "t", "arguments": "{}"}}
    ]});
    let parsed = openai::tool_calls(&message).unwrap();
    let contents: Vec<&str> = parsed
        .iter()
        .map(|p| p.as_ref().map_or_else(|r| r.content.as_str(), |_| "call"))
        .collect();
    assert_eq!(
        contents,
        [
            "tool call has no name",
            "tool call has no name",
            "unsupported tool call type a number: only function tools can be called",
            "call"
        ]
    );
}

/// Frees a value without recursion (dropping it the ordinary way would overflow the stack).
fn free_iteratively(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, item)| item)),
            _ => {}
        }
    }
}

#[test]
fn arguments_built_100000_levels_deep_are_refused_without_recursion_in_every_adapter() {
    let registry = one_tool_registry();
    let mut readings = Vec::new();
    for adapter in ADAPTERS {
        let mut payload = one_call(
            adapter,
            Some(&json!("c1")),
            Some(&json!("t")),
            Some(&json!({})),
        );
        let slot = match adapter {
            Adapter::Chat => "/tool_calls/0/function/arguments",
            Adapter::Responses => "/output/0/arguments",
            Adapter::Anthropic => "/content/0/input",
            Adapter::Mcp => "/params/arguments",
        };
        // Moved into place, never cloned: a clone of this value would recurse 100,000 times.
        *payload.pointer_mut(slot).unwrap() = nested_object(100_000);
        readings.push(read(adapter, &payload, &registry));
        free_iteratively(payload);
    }
    for reading in &readings {
        assert_eq!(
            reading,
            &Read::ErrorFor {
                id: "c1".into(),
                content: "invalid arguments for t: arguments nest deeper than 127 levels".into()
            }
        );
    }
}

#[test]
fn parse_body_refuses_duplicate_keys_in_object_form_arguments() {
    let duplicated = [
        // Anthropic `input` and MCP `arguments` are objects inside the body.
        r#"{"content": [{"type": "tool_use", "id": "t1", "name": "t", "input": {"sk-SECRET": 1, "sk-SECRET": 2}}]}"#,
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {"p": {"q": "/work", "q": "/etc"}}}}"#,
        // And anywhere else in the body.
        r#"{"id": "a", "id": "b"}"#,
    ];
    for body in duplicated {
        let Err(WireError::Malformed { place, problem }) = providers::parse_body(body) else {
            panic!("{body}: accepted");
        };
        assert_eq!(place, "body");
        assert!(
            problem.starts_with("not usable JSON: duplicate key in one object at line 1 column "),
            "{problem}"
        );
        assert!(!problem.contains("SECRET") && !problem.contains("/etc"));
    }
    for broken in [
        "",
        "{",
        "{\"a\": NaN}",
        "{} {}",
        &format!("{}1{}", "[".repeat(128), "]".repeat(128)),
    ] {
        let Err(WireError::Malformed { problem, .. }) = providers::parse_body(broken) else {
            panic!("{broken}: accepted");
        };
        assert!(
            problem.starts_with("not valid JSON: syntax error at line 1 column "),
            "{problem}"
        );
    }
    let body = fixture_text("anthropic_parallel.json");
    assert_eq!(
        providers::parse_body(&body).unwrap(),
        serde_json::from_str::<Value>(&body).unwrap()
    );
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture exists")
}
