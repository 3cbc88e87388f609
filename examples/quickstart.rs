//! The original design's flow through one controller: an allowed calculator call, an apply_patch
//! that waits for approval and runs once approved, a denied tool, an unknown tool and invalid
//! arguments. Each outcome is printed.
//!
//! Run it with `cargo run --example quickstart`.

use serde_json::{Value, json};
use toolgate::{
    ApprovalResponse, Outcome, ToolCall, ToolController, ToolDefinition, ToolError, ToolPolicy,
    ToolRegistry, ToolSpec,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calculator = ToolDefinition::new(
        ToolSpec::new(
            "calculator",
            "Add exactly two integers named a and b.",
            json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": false
            }),
        ),
        |args: &Value| -> Result<String, ToolError> {
            let (a, b) = (args["a"].as_i64(), args["b"].as_i64());
            let (Some(a), Some(b)) = (a, b) else {
                return Err(ToolError::new("a and b must be 64-bit integers"));
            };
            a.checked_add(b)
                .map(|sum| sum.to_string())
                .ok_or_else(|| ToolError::new("the sum overflows a 64-bit integer"))
        },
    )?;
    let apply_patch = ToolDefinition::new(
        ToolSpec::new(
            "apply_patch",
            "Apply a unified diff to the workspace.",
            json!({
                "type": "object",
                "properties": {"patch": {"type": "string"}},
                "required": ["patch"]
            }),
        ),
        |args: &Value| -> Result<String, ToolError> {
            let lines = args["patch"]
                .as_str()
                .map_or(0, |patch| patch.lines().count());
            Ok(format!("patch applied ({lines} lines)"))
        },
    )?;
    // Registered but named by no policy entry: denied by default.
    let shell = ToolDefinition::new(
        ToolSpec::new(
            "shell",
            "Run a shell command.",
            json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        ),
        |_: &Value| -> Result<String, ToolError> { unreachable!("the policy never allows shell") },
    )?;

    let controller = ToolController::new(
        ToolRegistry::new([calculator, apply_patch, shell])?,
        ToolPolicy::new(["calculator"], ["apply_patch"])?,
    );

    let calls = [
        (
            "allowed",
            ToolCall::new("call_1", "calculator", json!({"a": 40, "b": 2})),
        ),
        (
            "asked",
            ToolCall::new(
                "call_2",
                "apply_patch",
                json!({"patch": "--- a/x\n+++ b/x\n"}),
            ),
        ),
        (
            "denied",
            ToolCall::new("call_3", "shell", json!({"command": "rm -rf /"})),
        ),
        (
            "unknown",
            ToolCall::new("call_4", "delete_everything", json!({})),
        ),
        (
            "invalid",
            ToolCall::new("call_5", "calculator", json!({"a": "forty"})),
        ),
    ];

    for (label, call) in calls {
        match controller.handle(call) {
            Outcome::Completed(result) => print_result(label, &result),
            Outcome::PendingApproval(request) => {
                println!(
                    "{label:>8}: {} waits for approval ({}): {}",
                    request.call.tool_name, request.reason, request.approval_id
                );
                // A person would look at `request.call` here; the example approves.
                let result = controller.resolve(ApprovalResponse::approve(request.approval_id))?;
                print_result("approved", &result);
            }
        }
    }
    Ok(())
}

fn print_result(label: &str, result: &toolgate::ToolResult) {
    let status = if result.is_error { "error" } else { "ok" };
    println!(
        "{label:>8}: [{}] {status}: {}",
        result.call_id, result.content
    );
}
