//! Streaming: tool calls assembled from event sequences shaped like the providers' documentation
//! (`tests/fixtures/stream/`, sources in `tests/fixtures/SOURCES.md`), interleaved parallel calls,
//! truncated and malformed streams, and the same verdict as a whole message for every argument
//! text.

use serde_json::{Value, json};
use toolgate::providers::stream::{AnthropicStream, ChatStream, ResponsesStream};
use toolgate::providers::{NotHandledReason, ParsedCall, WireError, anthropic, openai, responses};
use toolgate::*;

fn lines(name: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/fixtures/stream/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .expect("fixture exists")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn summary(calls: &[ParsedCall]) -> Vec<(String, Result<Value, String>)> {
    calls
        .iter()
        .map(|call| match call {
            Ok(call) => (call.call_id.clone(), Ok(call.arguments.clone())),
            Err(result) => (result.call_id.clone(), Err(result.content.clone())),
        })
        .collect()
}

fn error_ids(calls: &[ParsedCall]) -> Vec<&str> {
    calls
        .iter()
        .filter_map(|call| call.as_ref().err().map(|r| r.call_id.as_str()))
        .collect()
}

// ---- documented sequences ----------------------------------------------------------------------

#[test]
fn chat_stream_from_the_docs_yields_both_calls_at_finish_reason() {
    let mut stream = ChatStream::new();
    let mut yielded = Vec::new();
    for (number, line) in lines("openai_chat_parallel.jsonl").iter().enumerate() {
        let calls = stream.push_data(line).unwrap();
        if !calls.is_empty() {
            assert_eq!(number, 12, "calls complete at the finish_reason chunk");
        }
        yielded.extend(calls);
    }
    assert_eq!(
        summary(&yielded),
        [
            (
                "call_DdmO9pD3xa9XTPNJ32zg2hcA".to_owned(),
                Ok(json!({"location": "Paris, France"}))
            ),
            (
                "call_67890abc".to_owned(),
                Ok(json!({"location": "Bogotá, Colombia"}))
            ),
        ]
    );
    assert_eq!(stream.finish().unwrap().calls.len(), 0);
}

#[test]
fn responses_stream_from_the_docs_yields_each_call_at_its_done_event() {
    let mut stream = ResponsesStream::new();
    let mut at = Vec::new();
    for (number, line) in lines("responses_parallel.jsonl").iter().enumerate() {
        for call in stream.push_data(line).unwrap() {
            at.push((number, call.unwrap().call_id));
        }
    }
    assert_eq!(
        at,
        [
            (10, "call_1234xyz".to_owned()),
            (15, "call_67890abc".to_owned())
        ]
    );
    let rest = stream.finish().unwrap();
    assert!(rest.calls.is_empty() && rest.not_handled.is_empty());
}

#[test]
fn anthropic_stream_from_the_docs_yields_the_call_at_block_stop() {
    let mut stream = AnthropicStream::new();
    let mut at = Vec::new();
    for (number, line) in lines("anthropic_tool_use.jsonl").iter().enumerate() {
        for call in stream.push_data(line).unwrap() {
            at.push((number, call.unwrap()));
        }
    }
    assert_eq!(at.len(), 1);
    assert_eq!(at[0].0, 16, "the content_block_stop of block 1");
    assert_eq!(at[0].1.call_id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(
        at[0].1.arguments,
        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
}

#[test]
fn streamed_calls_run_through_the_controller_as_soon_as_they_complete() {
    let echo = |args: &Value| -> Result<String, ToolError> { Ok(args["location"].to_string()) };
    let spec = ToolSpec::new(
        "get_weather",
        "Weather.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}}),
    );
    let controller = ToolController::new(
        ToolRegistry::new([ToolDefinition::new(spec, echo).unwrap()]).unwrap(),
        ToolPolicy::new(["get_weather"], Vec::<&str>::new()).unwrap(),
    );
    let mut stream = ResponsesStream::new();
    let mut outputs = Vec::new();
    for line in lines("responses_parallel.jsonl") {
        for call in stream.push_data(&line).unwrap() {
            let result = match call.map(|call| controller.handle(call)) {
                Ok(Outcome::Completed(result)) | Err(result) => result,
                Ok(Outcome::PendingApproval(_)) => panic!("allowed tool"),
            };
            outputs.push(responses::function_call_output(&result));
        }
    }
    assert_eq!(outputs[0]["call_id"], "call_1234xyz");
    assert_eq!(outputs[1]["output"], "\"Bogotá, Colombia\"");
}

// ---- interleaved parallel calls ----------------------------------------------------------------

#[test]
fn chat_stream_interleaved_calls_are_assembled_by_index() {
    let chunk = |tool_calls: Value| json!({"choices": [{"index": 0, "delta": {"tool_calls": tool_calls}, "finish_reason": null}]});
    let mut stream = ChatStream::new();
    for tool_calls in [
        json!([{"index": 1, "id": "b", "type": "function", "function": {"name": "t", "arguments": "{\"x\":"}}]),
        json!([{"index": 0, "id": "a", "type": "function", "function": {"name": "t", "arguments": "{\"x\":"}}]),
        json!([{"index": 1, "function": {"arguments": "2}"}}, {"index": 0, "function": {"arguments": "1}"}}]),
    ] {
        assert!(stream.push(&chunk(tool_calls)).unwrap().is_empty());
    }
    let done = stream
        .push(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
        .unwrap();
    assert_eq!(
        summary(&done),
        [
            ("a".to_owned(), Ok(json!({"x": 1}))),
            ("b".to_owned(), Ok(json!({"x": 2})))
        ]
    );
}

#[test]
fn responses_stream_interleaved_calls_complete_independently() {
    let mut stream = ResponsesStream::new();
    let added = |index: u64, id: &str| {
        json!({"type": "response.output_item.added", "output_index": index,
        "item": {"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": "t", "arguments": ""}})
    };
    let delta = |index: u64, id: &str, text: &str| {
        json!({"type": "response.function_call_arguments.delta",
        "output_index": index, "item_id": format!("fc_{id}"), "delta": text})
    };
    let done = |index: u64, id: &str, text: &str| {
        json!({"type": "response.function_call_arguments.done",
        "output_index": index, "item_id": format!("fc_{id}"), "arguments": text})
    };
    stream.push(&added(0, "a")).unwrap();
    stream.push(&added(1, "b")).unwrap();
    stream.push(&delta(1, "b", "{\"y\":")).unwrap();
    stream.push(&delta(0, "a", "{\"x\":1}")).unwrap();
    stream.push(&delta(1, "b", "2}")).unwrap();
    let first = stream.push(&done(1, "b", "{\"y\":2}")).unwrap();
    assert_eq!(summary(&first), [("b".to_owned(), Ok(json!({"y": 2})))]);
    let second = stream.push(&done(0, "a", "{\"x\":1}")).unwrap();
    assert_eq!(summary(&second), [("a".to_owned(), Ok(json!({"x": 1})))]);
}

#[test]
fn anthropic_stream_interleaved_blocks_are_assembled_by_index() {
    let mut stream = AnthropicStream::new();
    let start = |index: u64, id: &str| {
        json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": "t", "input": {}}})
    };
    let delta = |index: u64, text: &str| {
        json!({"type": "content_block_delta", "index": index,
        "delta": {"type": "input_json_delta", "partial_json": text}})
    };
    stream.push(&start(0, "a")).unwrap();
    stream.push(&start(1, "b")).unwrap();
    stream.push(&delta(1, "{\"y\":")).unwrap();
    stream.push(&delta(0, "{\"x\":1}")).unwrap();
    stream.push(&delta(1, "2}")).unwrap();
    let b = stream
        .push(&json!({"type": "content_block_stop", "index": 1}))
        .unwrap();
    let a = stream
        .push(&json!({"type": "content_block_stop", "index": 0}))
        .unwrap();
    assert_eq!(summary(&b), [("b".to_owned(), Ok(json!({"y": 2})))]);
    assert_eq!(summary(&a), [("a".to_owned(), Ok(json!({"x": 1})))]);
}

// ---- truncated streams -------------------------------------------------------------------------

#[test]
fn truncated_streams_are_error_results_for_the_open_calls_only() {
    // Chat: `length` stops the choice while both calls are open.
    let mut chat = ChatStream::new();
    chat.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "a", "type": "function", "function": {"name": "t", "arguments": "{\"x\":1}"}},
        {"index": 1, "id": "b", "type": "function", "function": {"name": "t", "arguments": "{\"x\":"}}]}}]}))
        .unwrap();
    let cut = chat
        .push(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}))
        .unwrap();
    assert_eq!(error_ids(&cut), ["a", "b"]);
    assert!(cut[1].as_ref().unwrap_err().content.contains("length"));

    // Chat: the stream ends (no finish_reason) with a call open.
    let mut chat = ChatStream::new();
    chat.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "a", "function": {"name": "t", "arguments": "{"}}]}}]}))
        .unwrap();
    chat.push_data("[DONE]").unwrap();
    assert_eq!(error_ids(&chat.finish().unwrap().calls), ["a"]);

    // Responses: one call done, one cut by `response.incomplete`.
    let mut stream = ResponsesStream::new();
    for line in lines("responses_parallel.jsonl").iter().take(14) {
        stream.push_data(line).unwrap();
    }
    let cut = stream
        .push(&json!({"type": "response.incomplete", "response": {"status": "incomplete"}}))
        .unwrap();
    assert_eq!(error_ids(&cut), ["call_67890abc"]);
    assert!(stream.finish().unwrap().calls.is_empty());

    // Anthropic: the stream stops inside the tool_use block.
    let mut stream = AnthropicStream::new();
    for line in lines("anthropic_tool_use.jsonl").iter().take(12) {
        stream.push_data(line).unwrap();
    }
    let turn = stream.finish().unwrap();
    assert_eq!(error_ids(&turn.calls), ["toolu_01T1x1fJ34qAmk2tNTrN7Up6"]);

    // Anthropic: `max_tokens` with the block open, then an `error` event.
    let mut stream = AnthropicStream::new();
    for line in lines("anthropic_tool_use.jsonl").iter().take(12) {
        stream.push_data(line).unwrap();
    }
    let cut = stream
        .push(&json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}}))
        .unwrap();
    assert!(cut[0].as_ref().unwrap_err().content.contains("max_tokens"));
    let mut stream = AnthropicStream::new();
    for line in lines("anthropic_tool_use.jsonl").iter().take(9) {
        stream.push_data(line).unwrap();
    }
    let cut = stream
        .push(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
        .unwrap();
    assert_eq!(error_ids(&cut), ["toolu_01T1x1fJ34qAmk2tNTrN7Up6"]);
}

// ---- malformed streams -------------------------------------------------------------------------

#[test]
fn chat_stream_malformed_chunks_are_wire_errors_or_error_results_for_their_ids() {
    let push = |chunks: &[Value]| {
        let mut stream = ChatStream::new();
        let mut out = Vec::new();
        for chunk in chunks {
            out.push(stream.push(chunk));
        }
        out
    };
    let tc =
        |tool_calls: Value| json!({"choices": [{"index": 0, "delta": {"tool_calls": tool_calls}}]});
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    // Unattributable: no index, a choice other than 0, the legacy function_call, not a chunk.
    for chunk in [
        tc(json!([{"id": "a", "function": {"name": "t"}}])),
        json!({"choices": [{"index": 1, "delta": {}}]}),
        json!({"choices": [{"index": 0, "delta": {"function_call": {"name": "t", "arguments": "{}"}}}]}),
        json!({"object": "chat.completion.chunk"}),
        json!({"error": {"message": "server error"}}),
    ] {
        assert!(
            matches!(
                push(std::slice::from_ref(&chunk))[0],
                Err(WireError::Malformed { .. })
            ),
            "{chunk}"
        );
    }
    // A call that never got an id cannot be answered.
    let out = push(&[
        tc(json!([{"index": 0, "function": {"name": "t", "arguments": "{}"}}])),
        finish.clone(),
    ]);
    assert!(out[1].is_err());
    // Two ids at one index: both ids get an error result; a non-text fragment: an error result.
    let out = push(&[
        tc(json!([{"index": 0, "id": "a", "function": {"name": "t", "arguments": "{}"}}])),
        tc(json!([{"index": 0, "id": "b", "function": {"arguments": ""}}])),
        tc(json!([{"index": 1, "id": "c", "function": {"name": "t", "arguments": {"x": 1}}}])),
        tc(json!([{"index": 2, "id": "d", "function": {"name": "t", "arguments": "{}"}}])),
        tc(json!([{"index": 2, "function": {"name": "u"}}])),
        finish.clone(),
    ]);
    let done = out[5].as_ref().unwrap();
    assert_eq!(error_ids(done), ["b", "a", "c", "d"]);
    // Nothing after the end.
    let out = push(&[
        finish.clone(),
        tc(json!([{"index": 0, "id": "late", "function": {"name": "t"}}])),
    ]);
    assert!(out[1].is_err());
}

#[test]
fn responses_stream_contradictions_are_error_results_or_wire_errors() {
    let added = json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "function_call", "id": "fc_a", "call_id": "a", "name": "t", "arguments": ""}});
    let delta = json!({"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_a", "delta": "{\"x\":1}"});
    // `done` arguments that differ from the deltas: an error result for the call.
    let mut stream = ResponsesStream::new();
    stream.push(&added).unwrap();
    stream.push(&delta).unwrap();
    let done = stream
        .push(&json!({"type": "response.function_call_arguments.done", "output_index": 0, "item_id": "fc_a", "arguments": "{\"x\":2}"}))
        .unwrap();
    assert!(done[0].as_ref().unwrap_err().content.contains("differ"));
    // A finished item that contradicts the call already yielded: a wire error.
    let mut stream = ResponsesStream::new();
    stream.push(&added).unwrap();
    stream.push(&delta).unwrap();
    stream
        .push(&json!({"type": "response.function_call_arguments.done", "output_index": 0, "item_id": "fc_a", "arguments": "{\"x\":1}"}))
        .unwrap();
    assert!(
        stream
            .push(&json!({"type": "response.output_item.done", "output_index": 0, "item":
                {"type": "function_call", "id": "fc_a", "call_id": "a", "name": "rm", "arguments": "{\"x\":1}"}}))
            .is_err()
    );
    // Deltas for an index never opened, a call item without call_id, an event without a type.
    let mut stream = ResponsesStream::new();
    assert!(stream.push(&delta).is_err());
    assert!(
        stream
            .push(&json!({"type": "response.output_item.added", "output_index": 3, "item": {"type": "function_call", "name": "t"}}))
            .is_err()
    );
    assert!(stream.push(&json!({"output_index": 0})).is_err());
}

#[test]
fn anthropic_stream_contradictions_are_error_results_or_wire_errors() {
    let start = json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "a", "name": "t", "input": {}}});
    let stop = json!({"type": "content_block_stop", "index": 0});
    // A text delta inside a tool_use block: an error result.
    let mut stream = AnthropicStream::new();
    stream.push(&start).unwrap();
    stream
        .push(&json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}))
        .unwrap();
    assert!(stream.push(&stop).unwrap()[0].is_err());
    // After the stop, a delta or a second stop: wire errors; as are a block started twice,
    // a stop for a block never started, and a tool_use block without an id.
    assert!(
        stream
            .push(&json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}))
            .is_err()
    );
    assert!(stream.push(&stop).is_err());
    assert!(stream.push(&start).is_err());
    assert!(
        stream
            .push(&json!({"type": "content_block_stop", "index": 9}))
            .is_err()
    );
    assert!(
        stream
            .push(&json!({"type": "content_block_start", "index": 5, "content_block": {"type": "tool_use", "name": "t"}}))
            .is_err()
    );
    // A block without deltas keeps its start input; nothing after message_stop.
    let mut stream = AnthropicStream::new();
    stream.push(&start).unwrap();
    assert_eq!(
        stream.push(&stop).unwrap()[0].as_ref().unwrap().arguments,
        json!({})
    );
    stream.push(&json!({"type": "message_stop"})).unwrap();
    assert!(stream.push(&start).is_err());
}

#[test]
fn stream_envelopes_with_duplicate_keys_are_refused() {
    let mut chat = ChatStream::new();
    assert!(chat.push_data(r#"{"choices": [], "choices": []}"#).is_err());
    let mut responses = ResponsesStream::new();
    assert!(
        responses
            .push_data(r#"{"type": "ping", "type": "error"}"#)
            .is_err()
    );
    let mut anthropic = AnthropicStream::new();
    assert!(anthropic.push_data("{\"type\": ").is_err());
}

// ---- items that are not calls ------------------------------------------------------------------

#[test]
fn streamed_provider_side_items_are_reported_not_skipped() {
    let mut stream = ResponsesStream::new();
    stream.push(&json!({"type": "response.output_item.added", "output_index": 0, "item":
        {"type": "mcp_call", "id": "mcp_1", "server_label": "deepwiki", "name": "ask_question", "arguments": ""}})).unwrap();
    let custom = stream.push(&json!({"type": "response.output_item.added", "output_index": 1, "item":
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "code_exec", "input": ""}})).unwrap();
    assert_eq!(error_ids(&custom), ["call_c"]);
    stream.push(&json!({"type": "response.output_item.done", "output_index": 2, "item":
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_s", "action": {"type": "exec", "command": ["ls"]}}})).unwrap();
    let reasons: Vec<NotHandledReason> = stream
        .not_handled()
        .iter()
        .map(|item| item.reason)
        .collect();
    assert_eq!(
        reasons,
        [
            NotHandledReason::RanByProvider,
            NotHandledReason::NeedsAnswer
        ]
    );
    assert_eq!(
        stream.finish().unwrap().not_handled[1].id.as_deref(),
        Some("call_s")
    );

    let mut stream = AnthropicStream::new();
    stream
        .push(
            &json!({"type": "content_block_start", "index": 0, "content_block":
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}}),
        )
        .unwrap();
    stream
        .push(&json!({"type": "content_block_delta", "index": 0, "delta":
        {"type": "input_json_delta", "partial_json": "{\"query\": \"weather\"}"}}))
        .unwrap();
    assert!(
        stream
            .push(&json!({"type": "content_block_stop", "index": 0}))
            .unwrap()
            .is_empty()
    );
    let turn = stream.finish().unwrap();
    assert_eq!(turn.not_handled[0].kind, "server_tool_use");
    assert_eq!(turn.not_handled[0].reason, NotHandledReason::RanByProvider);
}

/// Splits text into pieces of `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

mod bounds;
mod verdicts;
