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

// ---- one verdict, whole or streamed ------------------------------------------------------------

/// Argument texts with every kind of verdict: usable, empty, duplicate keys, not JSON, not an
/// object, non-finite numbers, too deep.
fn argument_texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        r#"{"location": "Paris"}"#,
        "",
        "  ",
        r#"{"a": 1, "a": 2}"#,
        r#"{"x": {"p": "/work", "p": "/etc"}}"#,
        r#"{"location": "sk-SECRET"#,
        "[1]",
        "null",
        r#"{"x": NaN}"#,
        r#"{} {}"#,
        "\u{a0}{}",
        r#"{"é": "ü\u0000"}"#,
    ]
    .iter()
    .map(|text| (*text).to_owned())
    .collect();
    texts.push(format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200)));
    texts
}

/// Splits text into pieces of `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

#[test]
fn streamed_calls_get_the_same_verdict_as_whole_messages() {
    for text in argument_texts() {
        for size in [1, 3, 1000] {
            let whole_chat = openai::tool_calls(&json!({"tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "t", "arguments": text}}]}))
            .unwrap();
            let mut chat = ChatStream::new();
            chat.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "c1", "type": "function", "function": {"name": "t", "arguments": ""}}]}}]}))
                .unwrap();
            for piece in pieces(&text, size) {
                chat.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "function": {"arguments": piece}}]}}]}))
                    .unwrap();
            }
            let streamed = chat
                .push(
                    &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                )
                .unwrap();
            assert_eq!(streamed, whole_chat, "chat {text:?} in pieces of {size}");

            let whole = responses::function_calls(&json!({"output": [
                {"type": "function_call", "id": "fc", "call_id": "c1", "name": "t", "arguments": text}]}))
            .unwrap();
            let mut stream = ResponsesStream::new();
            stream.push(&json!({"type": "response.output_item.added", "output_index": 0, "item":
                {"type": "function_call", "id": "fc", "call_id": "c1", "name": "t", "arguments": ""}})).unwrap();
            for piece in pieces(&text, size) {
                stream
                    .push(
                        &json!({"type": "response.function_call_arguments.delta", "output_index": 0,
                    "item_id": "fc", "delta": piece}),
                    )
                    .unwrap();
            }
            let streamed = stream
                .push(&json!({"type": "response.function_call_arguments.done",
                "output_index": 0, "item_id": "fc", "arguments": text}))
                .unwrap();
            assert_eq!(streamed, whole, "responses {text:?} in pieces of {size}");

            let whole = anthropic::tool_uses(&json!({"content": [
                {"type": "tool_use", "id": "c1", "name": "t", "input": text}]}))
            .unwrap();
            let mut stream = AnthropicStream::new();
            stream
                .push(
                    &json!({"type": "content_block_start", "index": 0, "content_block":
                {"type": "tool_use", "id": "c1", "name": "t", "input": {}}}),
                )
                .unwrap();
            for piece in pieces(&text, size) {
                stream
                    .push(&json!({"type": "content_block_delta", "index": 0, "delta":
                    {"type": "input_json_delta", "partial_json": piece}}))
                    .unwrap();
            }
            let streamed = stream
                .push(&json!({"type": "content_block_stop", "index": 0}))
                .unwrap();
            assert_eq!(streamed, whole, "anthropic {text:?} in pieces of {size}");
            if let Err(result) = &streamed[0] {
                assert!(!result.content.contains("SECRET"));
            }
        }
    }
}

// ---- issue 21, item 3: bounds ----------------------------------------------------------------
// Each bound, in each of the three assemblers, driven through one adapter per format: an
// argument text over the per-call cap, open calls together over the buffered cap, one open call
// too many, one index too many, and two calls with one id.

use toolgate::providers::stream::{
    DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_MAX_OPEN_CALLS, StreamLimits,
};

/// One assembler behind the events every format has: open a call, send a fragment, close it.
enum Assembler {
    Chat(ChatStream),
    Responses(ResponsesStream),
    Anthropic(AnthropicStream),
}

impl Assembler {
    fn all(limits: StreamLimits) -> [Self; 3] {
        [
            Self::Chat(ChatStream::with_limits(limits)),
            Self::Responses(ResponsesStream::with_limits(limits)),
            Self::Anthropic(AnthropicStream::with_limits(limits)),
        ]
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Chat(_) => "chat",
            Self::Responses(_) => "responses",
            Self::Anthropic(_) => "anthropic",
        }
    }

    fn open(&mut self, index: u64, id: &str) -> Result<Vec<ParsedCall>, WireError> {
        match self {
            Self::Chat(s) => s.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": index, "id": id, "type": "function",
                 "function": {"name": "t", "arguments": ""}}]}}]})),
            Self::Responses(s) => s.push(&json!({"type": "response.output_item.added",
                "output_index": index, "item": {"type": "function_call", "id": format!("fc_{index}"),
                "call_id": id, "name": "t", "arguments": ""}})),
            Self::Anthropic(s) => s.push(&json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": "t", "input": {}}})),
        }
    }

    /// Opens an index that is not a call (text), where the format has them.
    fn open_text(&mut self, index: u64) -> Option<Result<Vec<ParsedCall>, WireError>> {
        match self {
            Self::Chat(_) => None,
            Self::Responses(s) => Some(s.push(&json!({"type": "response.output_item.added",
                "output_index": index, "item": {"type": "message", "id": format!("m_{index}"),
                "role": "assistant", "content": []}}))),
            Self::Anthropic(s) => Some(s.push(&json!({"type": "content_block_start",
                "index": index, "content_block": {"type": "text", "text": ""}}))),
        }
    }

    fn delta(&mut self, index: u64, text: &str) -> Result<Vec<ParsedCall>, WireError> {
        match self {
            Self::Chat(s) => s.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": index, "function": {"arguments": text}}]}}]})),
            Self::Responses(s) => s.push(&json!({"type": "response.function_call_arguments.delta",
                "item_id": format!("fc_{index}"), "output_index": index, "delta": text})),
            Self::Anthropic(s) => s.push(&json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": text}})),
        }
    }

    /// Closes one call (Chat: every call, at its finish_reason).
    fn close(&mut self, index: u64, id: &str) -> Result<Vec<ParsedCall>, WireError> {
        match self {
            Self::Chat(s) => s.push(&json!({"choices": [{"index": 0, "delta": {},
                "finish_reason": "tool_calls"}]})),
            Self::Responses(s) => s.push(&json!({"type": "response.output_item.done",
                "output_index": index, "item": {"type": "function_call", "call_id": id, "name": "t"}})),
            Self::Anthropic(s) => s.push(&json!({"type": "content_block_stop", "index": index})),
        }
    }
}

fn refused_with(result: Result<Vec<ParsedCall>, WireError>, words: &str, how: &str) {
    match result {
        Err(WireError::Malformed { problem, .. }) => {
            assert!(problem.contains(words), "{how}: {problem}");
        }
        other => panic!("{how}: expected a WireError, got {other:?}"),
    }
}

#[test]
fn stream_bounds_the_default_argument_cap_ends_a_32_mib_call() {
    // The attack as found: 32 MiB of deltas for one call. The first MiB past the cap fails the
    // call; what follows is dropped, and the call is an error result for its id.
    let mebibyte = "a".repeat(1 << 20);
    for mut stream in Assembler::all(StreamLimits::default()) {
        let how = stream.name();
        stream.open(0, "big").unwrap();
        stream.delta(0, "{\"k\": \"").unwrap();
        for _ in 0..32 {
            assert!(stream.delta(0, &mebibyte).unwrap().is_empty(), "{how}");
        }
        let done = stream.close(0, "big").unwrap();
        assert_eq!(error_ids(&done), ["big"], "{how}");
        let Err(result) = &done[0] else {
            unreachable!()
        };
        assert!(
            result
                .content
                .contains(&format!("exceed {DEFAULT_MAX_ARGUMENT_BYTES} bytes")),
            "{how}: {}",
            result.content
        );
    }
}

#[test]
fn stream_bounds_a_call_at_its_cap_is_read_and_one_byte_more_is_not() {
    let limits = StreamLimits::default().with_max_argument_bytes(32);
    let at_cap = format!("{{\"k\": \"{}\"}}", "x".repeat(32 - 9));
    assert_eq!(at_cap.len(), 32);
    for (text, usable) in [(at_cap.clone(), true), (format!("{at_cap} "), false)] {
        for mut stream in Assembler::all(limits) {
            let how = stream.name();
            stream.open(0, "c").unwrap();
            for piece in pieces(&text, 5) {
                stream.delta(0, &piece).unwrap();
            }
            let done = stream.close(0, "c").unwrap();
            assert_eq!(done.len(), 1, "{how}");
            assert_eq!(
                done[0].is_ok(),
                usable,
                "{how} {}: {:?}",
                text.len(),
                done[0]
            );
        }
    }
}

#[test]
fn stream_bounds_open_calls_together_share_the_buffered_cap() {
    // Two calls of 40 bytes each under a 64-byte budget: the second's fragment would exceed it
    // and fails that call only; the first is read.
    let limits = StreamLimits::default()
        .with_max_argument_bytes(48)
        .with_max_buffered_bytes(64);
    let text = format!("{{\"k\": \"{}\"}}", "y".repeat(31));
    assert_eq!(text.len(), 40);
    for mut stream in Assembler::all(limits) {
        let how = stream.name();
        stream.open(0, "first").unwrap();
        stream.open(1, "second").unwrap();
        stream.delta(0, &text).unwrap();
        stream.delta(1, &text).unwrap();
        let mut done = stream.close(0, "first").unwrap();
        if !matches!(stream, Assembler::Chat(_)) {
            done.extend(stream.close(1, "second").unwrap());
        }
        let summary = summary(&done);
        assert_eq!(summary.len(), 2, "{how}");
        assert_eq!(summary[0].0, "first", "{how}");
        assert!(summary[0].1.is_ok(), "{how}: {summary:?}");
        assert_eq!(summary[1].0, "second", "{how}");
        assert!(
            summary[1]
                .1
                .as_ref()
                .is_err_and(|e| e.contains("max_buffered_bytes")),
            "{how}: {summary:?}"
        );
    }
}

#[test]
fn stream_bounds_the_budget_is_given_back_when_a_call_completes() {
    // A stream of many calls one after another never holds more than one: a budget that fits
    // the ids and a few calls' text reads a hundred calls of 8 bytes (800 in all) in sequence
    // (Chat completes its calls together, so it is left out).
    let limits = StreamLimits::default()
        .with_max_argument_bytes(16)
        .with_max_buffered_bytes(400)
        .with_max_open_calls(1);
    for mut stream in Assembler::all(limits) {
        if matches!(stream, Assembler::Chat(_)) {
            continue;
        }
        let how = stream.name();
        for n in 0..100 {
            stream.open(n, &format!("c{n}")).unwrap();
            stream.delta(n, "{\"n\": 1}").unwrap();
            let done = stream.close(n, &format!("c{n}")).unwrap();
            assert!(done[0].is_ok(), "{how} call {n}: {done:?}");
        }
    }
}

#[test]
fn stream_bounds_one_open_call_too_many_is_a_wire_error() {
    // The attack as found: 100,000 open calls; the default cap stops the stream at the first
    // call past it.
    for mut stream in Assembler::all(StreamLimits::default()) {
        let how = stream.name();
        let mut refused = None;
        for n in 0..100_000_u64 {
            if let Err(error) = stream.open(n, &format!("c{n}")) {
                refused = Some((n, error));
                break;
            }
        }
        let (at, error) = refused.unwrap_or_else(|| panic!("{how}: never refused"));
        assert_eq!(at, DEFAULT_MAX_OPEN_CALLS as u64, "{how}");
        refused_with(Err(error), "max_open_calls", how);
    }
}

#[test]
fn stream_bounds_indices_that_are_not_calls_count_too() {
    let limits = StreamLimits::default().with_max_indices(10);
    for mut stream in Assembler::all(limits) {
        let how = stream.name();
        for n in 0..10 {
            match stream.open_text(n) {
                Some(opened) => assert!(opened.is_ok(), "{how}"),
                None => {
                    stream.open(n, &format!("c{n}")).unwrap();
                }
            }
        }
        let last = stream
            .open_text(10)
            .unwrap_or_else(|| stream.open(10, "c10"));
        refused_with(last, "max_indices", how);
    }
}

#[test]
fn stream_bounds_two_calls_with_one_id_never_both_become_calls() {
    // The second call with an id the stream already used is refused, whether the first is still
    // open or already yielded.
    for first_yielded in [false, true] {
        for mut stream in Assembler::all(StreamLimits::default()) {
            let how = format!("{} (first yielded: {first_yielded})", stream.name());
            if first_yielded && matches!(stream, Assembler::Chat(_)) {
                continue; // nothing opens after a Chat stream's finish_reason
            }
            stream.open(0, "toolu_same").unwrap();
            stream.delta(0, "{}").unwrap();
            if first_yielded {
                assert!(stream.close(0, "toolu_same").unwrap()[0].is_ok(), "{how}");
            }
            refused_with(stream.open(1, "toolu_same"), "two calls share one id", &how);
        }
    }
}

#[test]
fn stream_bounds_a_chat_call_sent_many_ids_is_refused_past_sixteen() {
    let mut stream = ChatStream::new();
    let mut last = Ok(Vec::new());
    for n in 0..=17 {
        last = stream.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": format!("id{n}"), "function": {"name": "t"}}]}}]}));
        if n <= 16 {
            assert!(last.is_ok(), "id {n}: {last:?}");
        }
    }
    refused_with(last, "more than 16 ids", "chat");
}

#[test]
fn stream_bounds_a_yielded_responses_call_keeps_no_text_but_is_still_checked() {
    // A yielded call is remembered by digest: a finished item repeating its arguments passes, one
    // with other arguments is refused.
    let mut stream = ResponsesStream::new();
    stream
        .push(
            &json!({"type": "response.output_item.added", "output_index": 0, "item": {
            "type": "function_call", "id": "fc_0", "call_id": "c0", "name": "t", "arguments": ""}}),
        )
        .unwrap();
    stream
        .push(
            &json!({"type": "response.function_call_arguments.delta", "item_id": "fc_0",
            "output_index": 0, "delta": "{\"a\": 1}"}),
        )
        .unwrap();
    let done = stream
        .push(
            &json!({"type": "response.function_call_arguments.done", "item_id": "fc_0",
            "output_index": 0, "arguments": "{\"a\": 1}"}),
        )
        .unwrap();
    assert!(done[0].is_ok());
    let item = |arguments: &str| {
        json!({"type": "response.output_item.done", "output_index": 0, "item": {
            "type": "function_call", "call_id": "c0", "name": "t", "arguments": arguments}})
    };
    assert!(stream.push(&item("{\"a\": 1}")).unwrap().is_empty());
    refused_with(stream.push(&item("{\"a\": 2}")), "differs", "responses");
}

#[test]
fn stream_bounds_whole_inputs_long_names_and_many_ids_are_bounded_too() {
    let limits = StreamLimits::default()
        .with_max_argument_bytes(64)
        .with_max_buffered_bytes(256);
    let big = "z".repeat(100);
    // An Anthropic block whose start event carries the whole input, no deltas.
    let mut anthropic = AnthropicStream::with_limits(limits);
    anthropic
        .push(
            &json!({"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_big", "name": "t", "input": {"k": big}}}),
        )
        .unwrap();
    let done = anthropic
        .push(&json!({"type": "content_block_stop", "index": 0}))
        .unwrap();
    assert!(
        done[0]
            .as_ref()
            .is_err_and(|r| r.content.contains("max_argument_bytes")),
        "{done:?}"
    );
    // A Responses item finished without ever being opened, its arguments whole.
    let mut responses = ResponsesStream::with_limits(limits);
    let done = responses
        .push(
            &json!({"type": "response.output_item.done", "output_index": 0, "item": {
            "type": "function_call", "call_id": "c_big", "name": "t",
            "arguments": format!("{{\"k\": \"{big}\"}}")}}),
        )
        .unwrap();
    assert!(
        done[0]
            .as_ref()
            .is_err_and(|r| r.content.contains("max_argument_bytes")),
        "{done:?}"
    );
    // A name longer than any provider allows fails its call, and is not kept.
    for mut stream in Assembler::all(limits) {
        let how = stream.name();
        let long = "n".repeat(2000);
        let opened = match &mut stream {
            Assembler::Chat(s) => s
                .push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "c", "function": {"name": long, "arguments": "{}"}}]}}]})),
            Assembler::Responses(s) => s.push(&json!({"type": "response.output_item.added",
                "output_index": 0, "item": {"type": "function_call", "id": "fc_0", "call_id": "c",
                "name": long, "arguments": "{}"}})),
            Assembler::Anthropic(s) => s.push(&json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": "c", "name": long, "input": {}}})),
        };
        opened.unwrap();
        let done = match &mut stream {
            Assembler::Responses(s) => s
                .push(&json!({"type": "response.function_call_arguments.done",
                "item_id": "fc_0", "output_index": 0, "arguments": "{}"})),
            other => other.close(0, "c"),
        }
        .unwrap();
        assert!(
            done[0]
                .as_ref()
                .is_err_and(|r| r.content.contains("longer than 1024 bytes")),
            "{how}: {done:?}"
        );
    }
    // Ids are kept for the whole stream: their bytes together are bounded too.
    let mut stream = AnthropicStream::with_limits(limits);
    let mut refused = None;
    for n in 0..64_u64 {
        let id = format!("{n:0>40}");
        if let Err(error) = stream.push(&json!({"type": "content_block_start", "index": n,
            "content_block": {"type": "tool_use", "id": id, "name": "t", "input": {}}}))
        {
            refused = Some((n, error));
            break;
        }
        stream
            .push(&json!({"type": "content_block_stop", "index": n}))
            .unwrap();
    }
    let (at, error) = refused.expect("refused before 64 ids of 40 bytes");
    assert_eq!(at, 6, "256 bytes hold six 40-byte ids");
    refused_with(Err(error), "call ids exceed 256 bytes", "anthropic");
    // Exactly at the bound is within it: four 64-byte ids fill 256 bytes, the fifth is refused.
    let mut stream = AnthropicStream::with_limits(limits);
    for n in 0..5_u64 {
        let id = format!("{n:0>64}");
        let opened = stream.push(&json!({"type": "content_block_start", "index": n,
            "content_block": {"type": "tool_use", "id": id, "name": "t", "input": {}}}));
        assert_eq!(opened.is_ok(), n < 4, "id {n}: {opened:?}");
    }
}

#[test]
fn stream_bounds_hold_exactly_at_each_edge() {
    // The limits read back as set, and as documented by default.
    let default = StreamLimits::default();
    assert_eq!(
        (
            default.max_argument_bytes(),
            default.max_buffered_bytes(),
            default.max_open_calls(),
            default.max_indices()
        ),
        (1 << 20, 8 << 20, 128, 4096)
    );
    let set = default
        .with_max_argument_bytes(11)
        .with_max_buffered_bytes(22)
        .with_max_open_calls(3)
        .with_max_indices(44);
    assert_eq!(
        (
            set.max_argument_bytes(),
            set.max_buffered_bytes(),
            set.max_open_calls(),
            set.max_indices()
        ),
        (11, 22, 3, 44)
    );
    // Whole inputs of exactly the cap are taken; one byte more is not. `{"k":"…"}` is 8 bytes
    // around the text.
    let limits = StreamLimits::default()
        .with_max_argument_bytes(64)
        .with_max_buffered_bytes(128);
    for (text, usable) in [("a".repeat(56), true), ("a".repeat(57), false)] {
        let mut anthropic = AnthropicStream::with_limits(limits);
        anthropic
            .push(
                &json!({"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": "c", "name": "t", "input": {"k": text}}}),
            )
            .unwrap();
        let done = anthropic
            .push(&json!({"type": "content_block_stop", "index": 0}))
            .unwrap();
        assert_eq!(
            done[0].is_ok(),
            usable,
            "anthropic {}: {done:?}",
            text.len()
        );
        let mut responses = ResponsesStream::with_limits(limits);
        let done = responses
            .push(
                &json!({"type": "response.output_item.done", "output_index": 0, "item": {
                "type": "function_call", "call_id": "c", "name": "t",
                "arguments": json!({"k": text})}}),
            )
            .unwrap();
        assert_eq!(
            done[0].is_ok(),
            usable,
            "responses {}: {done:?}",
            text.len()
        );
    }
    // Two whole inputs filling the buffered budget exactly are both held; given back at their
    // stop, so forty in pairs fit (2,560 bytes through a 128-byte budget; the ids fit too).
    let mut anthropic = AnthropicStream::with_limits(limits);
    for pair in 0..20_u64 {
        for slot in [2 * pair, 2 * pair + 1] {
            anthropic
                .push(
                    &json!({"type": "content_block_start", "index": slot, "content_block": {
                    "type": "tool_use", "id": format!("c{slot}"), "name": "t",
                    "input": {"k": "a".repeat(56)}}}),
                )
                .unwrap();
        }
        for slot in [2 * pair, 2 * pair + 1] {
            let done = anthropic
                .push(&json!({"type": "content_block_stop", "index": slot}))
                .unwrap();
            assert!(done[0].is_ok(), "block {slot}: {done:?}");
        }
    }
    // Argument text filling the buffered budget exactly, over two calls, is held (Anthropic's
    // start events also hold their `{}` input: 2 bytes each).
    let forty = format!("{{\"k\": \"{}\"}}", "y".repeat(31));
    for (index, mut stream) in Assembler::all(StreamLimits::default())
        .into_iter()
        .enumerate()
    {
        let budget = if index == 2 { 84 } else { 80 };
        let exact = StreamLimits::default()
            .with_max_argument_bytes(48)
            .with_max_buffered_bytes(budget);
        stream = match stream {
            Assembler::Chat(_) => Assembler::Chat(ChatStream::with_limits(exact)),
            Assembler::Responses(_) => Assembler::Responses(ResponsesStream::with_limits(exact)),
            Assembler::Anthropic(_) => Assembler::Anthropic(AnthropicStream::with_limits(exact)),
        };
        let how = stream.name();
        stream.open(0, "first").unwrap();
        stream.open(1, "second").unwrap();
        stream.delta(0, &forty).unwrap();
        stream.delta(1, &forty).unwrap();
        let mut done = stream.close(0, "first").unwrap();
        if !matches!(stream, Assembler::Chat(_)) {
            done.extend(stream.close(1, "second").unwrap());
        }
        assert!(done.iter().all(Result::is_ok), "{how}: {done:?}");
    }
    // A name of exactly 1,024 bytes is a name.
    let mut chat = ChatStream::new();
    chat.push(
        &json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c",
        "function": {"name": "n".repeat(1024), "arguments": "{}"}}]}}]}),
    )
    .unwrap();
    let done = chat
        .push(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
        .unwrap();
    assert!(done[0].is_ok(), "{done:?}");
}

#[test]
fn stream_bounds_a_failed_call_gives_its_text_back() {
    // 40 bytes, then a fragment that is not text: the call fails and its 40 bytes are released,
    // so the next call's 40 fit a 64-byte budget.
    let limits = StreamLimits::default()
        .with_max_argument_bytes(48)
        .with_max_buffered_bytes(64);
    let text = format!("{{\"k\": \"{}\"}}", "y".repeat(31));
    let mut stream = AnthropicStream::with_limits(limits);
    for slot in [0, 1] {
        stream
            .push(
                &json!({"type": "content_block_start", "index": slot, "content_block": {
                "type": "tool_use", "id": format!("c{slot}"), "name": "t", "input": {}}}),
            )
            .unwrap();
    }
    stream
        .push(&json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": text}}))
        .unwrap();
    stream
        .push(&json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": 7}}))
        .unwrap();
    stream
        .push(&json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": text}}))
        .unwrap();
    let first = stream
        .push(&json!({"type": "content_block_stop", "index": 0}))
        .unwrap();
    let second = stream
        .push(&json!({"type": "content_block_stop", "index": 1}))
        .unwrap();
    assert!(
        first[0]
            .as_ref()
            .is_err_and(|r| r.content.contains("not text")),
        "{first:?}"
    );
    assert!(second[0].is_ok(), "{second:?}");
}

#[test]
fn stream_names_are_read_as_before() {
    // An empty or null name is no name yet; a second, different one is a contradiction.
    let chunk = |name: Value| {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c",
            "function": {"name": name, "arguments": ""}}]}}]})
    };
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    for first in [json!(""), Value::Null] {
        let mut stream = ChatStream::new();
        stream.push(&chunk(first.clone())).unwrap();
        stream.push(&chunk(json!("t"))).unwrap();
        let done = stream.push(&finish).unwrap();
        assert_eq!(
            done[0].as_ref().map(|call| call.tool_name.as_str()),
            Ok("t"),
            "{first}"
        );
    }
    let mut stream = ChatStream::new();
    stream.push(&chunk(json!("t"))).unwrap();
    stream.push(&chunk(json!("u"))).unwrap();
    let done = stream.push(&finish).unwrap();
    assert!(
        done[0]
            .as_ref()
            .is_err_and(|r| r.content.contains("named one call twice")),
        "{done:?}"
    );
}
