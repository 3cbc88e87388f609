//! Each stream bound exactly at its edge, and what a failed call gives back.

use super::*;

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
