//! Legitimate setup shared by the compile-fail cases: a runtime with one tool, and a call that went
//! through `prepare` and the policy the way the crate intends. The bypass each case attempts is in
//! the case file itself.
#![allow(dead_code)]

use serde_json::{Value, json};
use toolgate::{Authorized, PreparedToolCall, ToolCall, ToolDefinition, ToolError, ToolPolicy, ToolRegistry, ToolRuntime, ToolSpec};
use toolgate::PolicyOutcome;

pub fn runtime() -> ToolRuntime {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let spec = ToolSpec::new("t", "test tool", json!({"type": "object"}));
    let definition = ToolDefinition::new(spec, noop).expect("schema compiles");
    ToolRuntime::new(ToolRegistry::new([definition]).expect("one tool"))
}

pub fn call() -> ToolCall {
    ToolCall::new("c1", "t", json!({"path": "/workspace/notes.txt"}))
}

pub fn prepared(runtime: &ToolRuntime) -> PreparedToolCall {
    runtime.prepare(call()).expect("valid call")
}

pub fn authorized(runtime: &ToolRuntime) -> Authorized<PreparedToolCall> {
    let policy = ToolPolicy::new(["t"], Vec::<String>::new()).expect("valid policy");
    match Authorized::by_policy(&policy, prepared(runtime)) {
        PolicyOutcome::Allowed { authorized, .. } => authorized,
        _ => panic!("the policy allows t"),
    }
}
