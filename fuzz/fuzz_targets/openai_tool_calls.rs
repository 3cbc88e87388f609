//! Provider parsing never panics and never drops a call: any bytes as an OpenAI `arguments`
//! string, and any JSON as a whole assistant message for every adapter.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolgate::providers::{anthropic, openai, responses};

fuzz_target!(|data: &[u8]| {
    if let Ok(arguments) = std::str::from_utf8(data) {
        let message = json!({"tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "t", "arguments": arguments}}
        ]});
        let calls = openai::tool_calls(&message).expect("a well-formed message parses");
        assert_eq!(calls.len(), 1, "a call was dropped");
        match &calls[0] {
            Ok(call) => assert!(call.arguments.is_object() && call.call_id == "c1"),
            Err(result) => assert!(result.is_error && result.call_id == "c1"),
        }
    }
    if let Ok(message) = serde_json::from_slice::<Value>(data) {
        let _ = openai::tool_calls(&message);
        let _ = responses::function_calls(&message);
        let _ = anthropic::tool_uses(&message);
    }
});
