//! The stream assemblers never panic and never drop a call: any bytes, cut into SSE `data`
//! payloads at newlines, pushed through all three; and any text streamed as a call's arguments
//! gets the verdict the whole-message reader gives it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use toolgate::providers::openai;
use toolgate::providers::stream::{AnthropicStream, ChatStream, ResponsesStream};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut chat = ChatStream::new();
    let mut responses = ResponsesStream::new();
    let mut anthropic = AnthropicStream::new();
    for line in text.lines() {
        let _ = chat.push_data(line);
        let _ = responses.push_data(line);
        let _ = anthropic.push_data(line);
    }
    let _ = chat.finish();
    let _ = responses.finish();
    let _ = anthropic.finish();

    // The same text as streamed arguments, cut at every third character.
    let mut chat = ChatStream::new();
    chat.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "t", "arguments": ""}}]}}]}))
        .expect("a well-formed chunk");
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(3) {
        let piece: String = piece.iter().collect();
        chat.push(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": piece}}]}}]}))
            .expect("a well-formed chunk");
    }
    let streamed = chat
        .push(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
        .expect("a well-formed chunk");
    let whole = openai::tool_calls(&json!({"tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "t", "arguments": text}}]}))
    .expect("a well-formed message");
    assert_eq!(streamed, whole, "a streamed call is judged like a whole one");
});
