//! One verdict, whole or streamed: every argument text, cut into pieces of every size, gets the
//! verdict the whole message gets.

use super::*;

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
