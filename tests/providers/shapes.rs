//! No silent drops: a payload of the wrong shape is a `WireError` for every adapter, items a
//! provider runs itself (or that wait for an answer toolgate cannot give) are reported, JSON-RPC
//! ids keep their type, and MCP messages that are not `tools/call` requests never become calls.
//! Also: structured results in each provider's result format.

use serde_json::{Value, json};
use toolgate::providers::{
    NotHandledReason, ParsedCall, WireError, anthropic, gemini, mcp, openai, responses,
};
use toolgate::*;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

// ---- wrong shapes ------------------------------------------------------------------------------

#[test]
fn wrong_shapes_are_wire_errors_in_every_adapter() {
    let chat = fixture("openai_chat_parallel.json");
    for wrong in [
        chat.clone(),               // the whole chat.completion
        chat["choices"][0].clone(), // the choice, not its message
        chat["choices"].clone(),    // the array
        json!({"role": "user", "content": "hi"}),
        json!("tool_calls"),
        json!({"role": "assistant", "content": null, "function_call": {"name": "t", "arguments": "{}"}}),
    ] {
        assert!(
            matches!(openai::tool_calls(&wrong), Err(WireError::Malformed { .. })),
            "{wrong}"
        );
    }
    assert_eq!(
        openai::tool_calls(&chat["choices"][0]["message"])
            .unwrap()
            .len(),
        3
    );

    let response = fixture("responses_parallel.json");
    for wrong in [
        json!({"choices": []}),
        json!({"output": {}}),
        json!({"output": [5]}),
    ] {
        assert!(responses::function_calls(&wrong).is_err(), "{wrong}");
    }
    let message = fixture("anthropic_parallel.json");
    for wrong in [
        json!({"role": "user", "content": []}),
        json!({"message": message.clone()}),
        json!({"content": ["text"]}),
    ] {
        assert!(anthropic::tool_uses(&wrong).is_err(), "{wrong}");
    }
    let gemini_response = fixture("gemini_parallel.json");
    for wrong in [
        json!({"candidates": []}),
        json!({"candidates": [gemini_response["candidates"][0].clone(), gemini_response["candidates"][0].clone()]}),
        json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]}),
        json!({"role": "user", "parts": []}),
        gemini_response["candidates"].clone(),
    ] {
        assert!(gemini::function_calls(&wrong).is_err(), "{wrong}");
    }
    assert_eq!(responses::function_calls(&response).unwrap().len(), 3);
    let error = gemini::function_calls(
        &json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]}),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("MALFORMED_FUNCTION_CALL"), "{error}");
}

// ---- items that are not calls ------------------------------------------------------------------

#[test]
fn responses_items_the_gate_cannot_run_are_reported_with_a_reason() {
    let response = json!({"output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "deepwiki", "tools": []},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "deepwiki", "name": "ask_question", "arguments": "{}", "output": "…"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_2", "action": {"type": "exec", "command": ["rm", "-rf", "/"]}},
        {"type": "computer_call", "id": "cu_1", "call_id": "call_3", "action": {"type": "click"}},
        {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "deepwiki", "name": "ask_question", "arguments": "{}"},
        {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        {"type": "some_future_call", "id": "x_1"}
    ]});
    let turn = responses::turn(&response).unwrap();
    assert_eq!(turn.calls.len(), 1);
    let reported: Vec<(&str, &str, NotHandledReason)> = turn
        .not_handled
        .iter()
        .map(|item| (item.place.as_str(), item.kind.as_str(), item.reason))
        .collect();
    use NotHandledReason::*;
    assert_eq!(
        reported,
        [
            ("output[1]", "mcp_list_tools", RanByProvider),
            ("output[2]", "mcp_call", RanByProvider),
            ("output[3]", "web_search_call", RanByProvider),
            ("output[5]", "local_shell_call", NeedsAnswer),
            ("output[6]", "computer_call", NeedsAnswer),
            ("output[7]", "mcp_approval_request", NeedsAnswer),
            ("output[9]", "some_future_call", Unknown),
        ]
    );
    assert_eq!(turn.not_handled[3].id.as_deref(), Some("call_2"));
    // The call-by-call reader has nowhere to put them: it refuses, naming the first.
    assert!(matches!(
        responses::function_calls(&response),
        Err(WireError::NotHandled { place, reason: RanByProvider, .. }) if place == "output[1]"
    ));
}

#[test]
fn anthropic_blocks_the_gate_cannot_run_are_reported_with_a_reason() {
    let message = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": "…", "signature": "sig"},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "weather"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "example", "input": {}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": false, "content": []},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
        {"type": "a_future_block"}
    ]});
    let turn = anthropic::turn(&message).unwrap();
    assert_eq!(turn.calls.len(), 1);
    let kinds: Vec<(&str, Option<&str>)> = turn
        .not_handled
        .iter()
        .map(|item| (item.kind.as_str(), item.id.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("server_tool_use", Some("srvtoolu_1")),
            ("web_search_tool_result", Some("srvtoolu_1")),
            ("mcp_tool_use", Some("mcptoolu_1")),
            ("mcp_tool_result", Some("mcptoolu_1")),
            ("a_future_block", None),
        ]
    );
    assert_eq!(turn.not_handled[4].reason, NotHandledReason::Unknown);
    assert!(matches!(
        anthropic::tool_uses(&message),
        Err(WireError::NotHandled { .. })
    ));
}

#[test]
fn gemini_parts_the_gate_cannot_run_are_reported() {
    let content = json!({"role": "model", "parts": [
        {"text": "Let me compute.", "thoughtSignature": "c2ln"},
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        {"functionCall": {"name": "t", "args": {}}},
        {}
    ]});
    let turn = gemini::turn(&content).unwrap();
    assert_eq!(turn.calls.len(), 1);
    let kinds: Vec<(&str, NotHandledReason)> = turn
        .not_handled
        .iter()
        .map(|item| (item.kind.as_str(), item.reason))
        .collect();
    assert_eq!(
        kinds,
        [
            ("executableCode", NotHandledReason::RanByProvider),
            ("codeExecutionResult", NotHandledReason::RanByProvider),
            ("(empty part)", NotHandledReason::Unknown),
        ]
    );
    assert!(gemini::function_calls(&content).is_err());
    // Beside a call in one part: a signature is the call's, code is listed (an independent
    // attack found it dropped).
    let content = json!({"role": "model", "parts": [
        {"functionCall": {"name": "t", "args": {}}, "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "t", "args": {}}, "executableCode": {"code": "print(1)"}}
    ]});
    let turn = gemini::turn(&content).unwrap();
    assert_eq!(turn.calls.len(), 2);
    let listed: Vec<(&str, &str)> = turn
        .not_handled
        .iter()
        .map(|item| (item.place.as_str(), item.kind.as_str()))
        .collect();
    assert_eq!(listed, [("parts[1]", "executableCode")]);
}

// ---- MCP ---------------------------------------------------------------------------------------

fn registry() -> ToolRegistry {
    let echo = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let spec = ToolSpec::new("t", "A tool.", json!({"type": "object"}));
    ToolRegistry::new([ToolDefinition::new(spec, echo).unwrap()]).unwrap()
}

fn request(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "t", "arguments": {}}})
}

#[test]
fn json_rpc_ids_keep_their_type() {
    let registry = registry();
    let ids = [
        json!(1),
        json!("1"),
        json!(-7),
        json!("-7"),
        json!("\"1\""),
        json!("req-7"),
        json!("\""),
        json!(u64::MAX),
        json!(i64::MIN),
    ];
    let mut call_ids = std::collections::BTreeSet::new();
    for id in &ids {
        let call = mcp::call_from_request(&request(id.clone()), &registry).unwrap();
        assert_eq!(
            &mcp::request_id(&call.call_id),
            id,
            "{id} comes back with its type"
        );
        assert!(
            call_ids.insert(call.call_id.clone()),
            "{id} shares a call id"
        );
    }
    assert_eq!(mcp::call_id_for(&json!(1)).as_deref(), Some("1"));
    assert_eq!(mcp::call_id_for(&json!("req-7")).as_deref(), Some("req-7"));
    for refused in [json!(null), json!(""), json!(1.5), json!([1]), json!({})] {
        assert_eq!(mcp::call_id_for(&refused), None, "{refused}");
    }
}

#[test]
fn mcp_messages_other_than_tools_call_requests_are_never_calls() {
    let registry = registry();
    let notification = json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "t"}});
    let cancelled =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let other_with_name =
        json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "t"}});
    let response = json!({"jsonrpc": "2.0", "id": 4, "result": {"content": []}});
    assert_eq!(
        mcp::read_message(&notification, &registry),
        mcp::Message::Notification
    );
    assert_eq!(
        mcp::read_message(&cancelled, &registry),
        mcp::Message::Notification
    );
    assert_eq!(
        mcp::read_message(&list, &registry),
        mcp::Message::OtherMethod
    );
    assert_eq!(
        mcp::read_message(&other_with_name, &registry),
        mcp::Message::OtherMethod
    );
    assert_eq!(
        mcp::read_message(&response, &registry),
        mcp::Message::Response
    );
    assert!(matches!(
        mcp::read_message(&request(json!(5)), &registry),
        mcp::Message::Call(call) if call.call_id == "5"
    ));
    assert!(matches!(
        mcp::read_message(&json!([1]), &registry),
        mcp::Message::Reply(_)
    ));
    // Read with call_from_request, another method is METHOD_NOT_FOUND under its id, and a
    // notification never a call.
    let error = mcp::call_from_request(&other_with_name, &registry).unwrap_err();
    assert_eq!(error["error"]["code"], mcp::METHOD_NOT_FOUND);
    assert_eq!(error["id"], 3);
    assert!(mcp::call_from_request(&notification, &registry).is_err());
}

// ---- structured results ------------------------------------------------------------------------

#[test]
fn structured_results_map_to_each_providers_result_format() {
    let result = ToolResult::ok("c1", "2 rows");
    let rows = json!({"rows": [{"id": 1}, {"id": 2}]});
    let rows_text = rows.to_string();

    let chat = openai::tool_message_with(&result, Some(&rows));
    assert_eq!(
        chat["content"],
        json!([{"type": "text", "text": "2 rows"}, {"type": "text", "text": rows_text}])
    );
    assert_eq!(
        openai::tool_message_with(&result, None),
        openai::tool_message(&result)
    );

    let item = responses::function_call_output_with(&result, Some(&rows));
    assert_eq!(
        item["output"][1],
        json!({"type": "input_text", "text": rows_text})
    );

    let block = anthropic::tool_result_block_with(&ToolResult::error("c1", "partial"), Some(&rows));
    assert_eq!(block["is_error"], true);
    assert_eq!(block["content"][1]["text"], rows_text.as_str());

    let mcp_result = mcp::call_tool_result_with(&result, Some(&rows));
    assert_eq!(mcp_result["structuredContent"], rows);
    assert_eq!(mcp_result["content"][1]["text"], rows_text.as_str());
    assert!(
        mcp::call_tool_result_with(&result, Some(&json!([1])))
            .get("structuredContent")
            .is_none(),
        "MCP structuredContent is an object"
    );

    let part = gemini::function_response("query", &result, Some(&rows));
    assert_eq!(
        part["functionResponse"]["response"],
        json!({"output": rows, "text": "2 rows"})
    );
    assert_eq!(part["functionResponse"]["id"], "c1");
    let only_json = gemini::function_response("query", &ToolResult::ok("c1", ""), Some(&rows));
    assert_eq!(
        only_json["functionResponse"]["response"],
        json!({"output": rows})
    );
    let failed = gemini::function_response("query", &ToolResult::error("c1", "no table"), None);
    assert_eq!(
        failed["functionResponse"]["response"],
        json!({"error": "no table"})
    );
    // A JSON-only result sends no empty text block.
    let chat = openai::tool_message_with(&ToolResult::ok("c1", ""), Some(&rows));
    assert_eq!(chat["content"].as_array().unwrap().len(), 1);
}

// ---- issue 21, item 4: nothing dropped silently ----------------------------------------------

/// What a reader made of one payload.
type Read = Result<Vec<ParsedCall>, WireError>;
// Each reader given another format's message refuses it instead of reading zero calls; a
// Responses stateless input (user messages without `type`, outputs already sent) is read, with
// places naming the array's own indices; two calls with one id in one message are refused.

#[test]
fn wire_shapes_a_reader_given_another_formats_message_refuses_it() {
    let anthropic_message = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "/etc/passwd"}}]});
    let responses_message = json!({"role": "assistant", "content": [
        {"type": "output_text", "text": "hi", "annotations": []}]});
    let chat_with_parts = json!({"role": "assistant", "content": [{"type": "text", "text": "x"}],
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": "{}"}}]});
    let cases: [(&str, Read, &str); 5] = [
        (
            "anthropic message to openai",
            openai::tool_calls(&anthropic_message),
            "message.content[1].type",
        ),
        (
            "responses message to openai",
            openai::tool_calls(&responses_message),
            "message.content[0].type",
        ),
        (
            "content of another type to openai",
            openai::tool_calls(&json!({"role": "assistant", "content": 7})),
            "message.content",
        ),
        (
            "chat message to anthropic",
            anthropic::tool_uses(&chat_with_parts),
            "tool_calls",
        ),
        (
            "chat message in a responses array",
            responses::function_calls(&json!([chat_with_parts])),
            "[0]",
        ),
    ];
    for (how, read, expected_place) in cases {
        match read {
            Err(WireError::Malformed { place, .. } | WireError::NotHandled { place, .. }) => {
                assert_eq!(place, expected_place, "{how}");
            }
            other => panic!("{how}: expected a WireError, got {other:?}"),
        }
    }
    // The control: the same calls in their own format are read.
    assert_eq!(anthropic::tool_uses(&anthropic_message).unwrap().len(), 1);
    assert_eq!(openai::tool_calls(&chat_with_parts).unwrap().len(), 1);
}

#[test]
fn wire_shapes_a_responses_stateless_input_is_read() {
    let input = json!([
        {"role": "user", "content": "What is in notes.txt?"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "please"}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file",
         "arguments": "{\"path\": \"notes.txt\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
        {"type": "item_reference", "id": "msg_0"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "read_file",
         "arguments": "{oops"}
    ]);
    let turn = responses::turn(&input).unwrap();
    assert!(turn.not_handled.is_empty(), "{:?}", turn.not_handled);
    let ids: Vec<_> = turn
        .calls
        .iter()
        .map(|call| match call {
            Ok(call) => call.call_id.as_str(),
            Err(result) => result.call_id.as_str(),
        })
        .collect();
    // `call_1` was answered in the input: history, not a call to run again.
    assert_eq!(ids, ["call_2"]);
    // Errors in a bare array name its own indices, not `output[…]`.
    let broken = json!([{"role": "user", "content": "hi"}, {"type": "function_call", "name": "x"}]);
    assert_eq!(
        responses::function_calls(&broken),
        Err(WireError::Malformed {
            place: "[1].call_id".into(),
            problem: "missing or not a non-empty string".into()
        })
    );
    // A typeless item holding another format's parts or calls is not a message: reported.
    for other in [
        json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}]),
        json!([{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]),
        json!([{"role": "assistant", "tool_calls": []}]),
        json!([{"role": "assistant"}]),
    ] {
        assert!(
            matches!(responses::function_calls(&other), Err(WireError::NotHandled { place, .. }) if place == "[0]"),
            "{other}"
        );
    }
    // A typeless item without a role is still an unknown item, not content.
    assert!(matches!(
        responses::function_calls(&json!([{"content": "hi"}])),
        Err(WireError::NotHandled { place, .. }) if place == "[0]"
    ));
}

#[test]
fn wire_shapes_two_calls_with_one_id_in_one_message_are_refused() {
    let twice = |call: Value| [call.clone(), call];
    let cases: [(&str, Read, &str); 4] = [
        (
            "openai",
            openai::tool_calls(&json!({"role": "assistant", "tool_calls": twice(json!(
                {"id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}}))})),
            "tool_calls[1].id",
        ),
        (
            "anthropic",
            anthropic::tool_uses(&json!({"role": "assistant", "content": twice(json!(
                {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}))})),
            "content[1].id",
        ),
        (
            "responses",
            responses::function_calls(&json!({"output": twice(json!(
                {"type": "function_call", "call_id": "call_1", "name": "t", "arguments": "{}"}))})),
            "output[1].call_id",
        ),
        (
            "gemini",
            gemini::function_calls(&json!({"candidates": [{"content": {"role": "model",
                "parts": twice(json!({"functionCall": {"id": "fc_1", "name": "t", "args": {}}}))}}]})),
            "parts[1].functionCall.id",
        ),
    ];
    for (how, read, expected_place) in cases {
        assert_eq!(
            read,
            Err(WireError::Malformed {
                place: expected_place.into(),
                problem: "two calls share one id".into()
            }),
            "{how}"
        );
    }
}
