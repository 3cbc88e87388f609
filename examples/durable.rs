//! Durable approvals: a request made by one controller survives the process that made it, is
//! answered by a new controller over the same SQLite ledger, re-checked and run once — and the
//! whole story is in a tamper-evident audit file.
//!
//! Run it with `cargo run --features sqlite --example durable`.

use serde_json::{Value, json};
use toolgate::approvals::SqliteApprovalStore;
use toolgate::audit::{JsonlAuditSink, verify_audit_file};
use toolgate::{
    ApprovalResponse, Outcome, ToolCall, ToolController, ToolDefinition, ToolError, ToolPolicy,
    ToolRegistry, ToolSpec,
};

fn controller(dir: &std::path::Path) -> Result<ToolController, Box<dyn std::error::Error>> {
    let deploy = ToolDefinition::new(
        ToolSpec::new(
            "deploy",
            "Deploy a service version.",
            json!({
                "type": "object",
                "properties": {"service": {"type": "string"}, "version": {"type": "string"}},
                "required": ["service", "version"],
                "additionalProperties": false
            }),
        ),
        |args: &Value| -> Result<String, ToolError> {
            Ok(format!("deployed {} {}", args["service"], args["version"]))
        },
    )?;
    Ok(ToolController::new(
        ToolRegistry::new([deploy])?,
        ToolPolicy::new(Vec::<String>::new(), ["deploy"])?,
    )
    .with_approval_store(SqliteApprovalStore::open(dir.join("approvals.db"))?)
    .with_audit_sink(JsonlAuditSink::open(dir.join("audit.jsonl"))?))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("toolgate-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    // First life: the model asks to deploy; the call waits for a person.
    let first = controller(&dir)?;
    let call = ToolCall::new(
        "call_1",
        "deploy",
        json!({"service": "api", "version": "1.4.2"}),
    );
    let Outcome::PendingApproval(request) = first.handle(call) else {
        return Err("deploy should wait for approval".into());
    };
    println!(
        "held {} ({}) digest {}",
        request.approval_id, request.reason, request.digest
    );
    drop(first); // the process could end here: the request is in approvals.db

    // Second life: a new controller over the same files lists and answers it.
    let second = controller(&dir)?;
    for waiting in second.pending() {
        println!(
            "waiting after restart: {} {}",
            waiting.call.tool_name, waiting.call.arguments
        );
    }
    let result = second.resolve(ApprovalResponse::approve(request.approval_id))?;
    println!("approved -> [{}] {}", result.call_id, result.content);
    println!("state: {:?}", second.approval_state(request.approval_id)?);
    println!(
        "answering again: {}",
        second
            .resolve(ApprovalResponse::approve(request.approval_id))
            .map_or_else(|error| error.to_string(), |result| result.content)
    );

    let tip = verify_audit_file(dir.join("audit.jsonl"))?;
    println!(
        "audit log: {} entries, chain intact, last {}",
        tip.entries, tip.last_hash
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
