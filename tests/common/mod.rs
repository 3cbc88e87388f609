//! Tools and policies shared by the integration tests.
#![allow(
    dead_code,
    reason = "each test file uses a different subset of the helpers"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolgate::{ToolDefinition, ToolError, ToolPolicy, ToolRegistry, ToolSpec};

pub fn calculator_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": false
    })
}

pub fn calculator() -> ToolDefinition {
    let add = |args: &Value| -> Result<String, ToolError> {
        let (a, b) = (args["a"].as_i64(), args["b"].as_i64());
        match (a, b) {
            (Some(a), Some(b)) => a
                .checked_add(b)
                .map(|sum| sum.to_string())
                .ok_or_else(|| ToolError::new("overflow")),
            _ => Err(ToolError::new("a and b must be integers")),
        }
    };
    ToolDefinition::new(
        ToolSpec::new(
            "calculator",
            "Add exactly two integers named a and b.",
            calculator_schema(),
        ),
        add,
    )
    .expect("calculator schema compiles")
}

/// A tool that counts how often its handler ran, with the given schema.
pub fn counted(name: &str, schema: Value, runs: &Arc<AtomicUsize>) -> ToolDefinition {
    let runs = Arc::clone(runs);
    ToolDefinition::new(
        ToolSpec::new(name, "Counts its runs.", schema),
        move |_: &Value| -> Result<String, ToolError> {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(format!("run {run}"))
        },
    )
    .expect("schema compiles")
}

pub fn patch_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"patch": {"type": "string"}},
        "required": ["patch"]
    })
}

pub fn panicking(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        ToolSpec::new(name, "Always panics.", json!({"type": "object"})),
        |_: &Value| -> Result<String, ToolError> { panic!("handler defect") },
    )
    .expect("schema compiles")
}

pub fn failing(name: &str, message: &'static str) -> ToolDefinition {
    ToolDefinition::new(
        ToolSpec::new(name, "Always reports a failure.", json!({"type": "object"})),
        move |_: &Value| -> Result<String, ToolError> { Err(ToolError::new(message)) },
    )
    .expect("schema compiles")
}

pub fn registry(definitions: impl IntoIterator<Item = ToolDefinition>) -> ToolRegistry {
    ToolRegistry::new(definitions).expect("distinct names")
}

pub fn policy(allowed: &[&str], ask: &[&str]) -> ToolPolicy {
    ToolPolicy::new(allowed.iter().copied(), ask.iter().copied()).expect("disjoint sets")
}

pub fn run_count(counter: &Arc<AtomicUsize>) -> usize {
    counter.load(Ordering::SeqCst)
}
