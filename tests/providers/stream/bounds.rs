//! The stream assemblers' bounds (issue 21, item 3), each in each of the three assemblers, driven
//! through one adapter per format: an argument text over the per-call cap, open calls together over
//! the buffered cap, one open call too many, one index too many, and two calls with one id.

use super::*;

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

mod edges;
