//! `prepare` never panics, hangs or lets an invalid call through, whatever the arguments.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use std::sync::OnceLock;
use toolgate::{ToolCall, ToolDefinition, ToolError, ToolRegistry, ToolRuntime, ToolSpec};

fn runtime() -> &'static ToolRuntime {
    static RUNTIME: OnceLock<ToolRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let schema = json!({
            "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "type": "object",
            "properties": {
                "path": {"type": "string", "pattern": "^(/[a-z]+)+$", "maxLength": 256},
                "n": {"type": "integer", "minimum": 0},
                "tree": {"$ref": "#/$defs/node"},
                "mode": {"enum": ["r", "w"]}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
        let tool = ToolDefinition::new(ToolSpec::new("t", "fuzz", schema), noop).expect("compiles");
        ToolRuntime::new(ToolRegistry::new([tool]).expect("one tool"))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(arguments) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let checked = arguments.clone();
    match runtime().prepare(ToolCall::new("c", "t", arguments)) {
        Ok(prepared) => {
            let definition = runtime().registry().resolve("t").expect("registered");
            assert!(definition.validate(&checked).is_ok(), "an invalid call prepared");
            assert_eq!(prepared.arguments(), &checked);
        }
        Err(result) => assert!(result.is_error && result.call_id == "c"),
    }
});
