//! Several agent servers sharing approvals and one audit chain in PostgreSQL: a call held on one
//! server appears in the approval UI of another, is approved there, runs once, and the server that
//! held it learns of the answer without polling.
//!
//! Run it with `cargo run --features postgres --example several_servers`. It uses the server at
//! `TOOLGATE_PG_URL`; without one it starts a throw-away server with `.ci/postgres` (Debian's
//! `postgresql` package) and stops it afterwards.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::approvals::{PostgresApprovalStore, Verdict};
use toolgate::audit::PostgresAuditSink;
use toolgate::{
    ApprovalResponse, Outcome, ToolCall, ToolController, ToolDefinition, ToolError, ToolPolicy,
    ToolRegistry, ToolSpec,
};

/// One agent server: the same tools and policy everywhere, approvals and audit in the database.
fn server(
    url: &str,
) -> Result<(ToolController, PostgresApprovalStore), Box<dyn std::error::Error>> {
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
    let store = PostgresApprovalStore::connect(url)?;
    let controller = ToolController::new(
        ToolRegistry::new([deploy])?,
        ToolPolicy::new(Vec::<String>::new(), ["deploy"])?,
    )
    .with_approval_store(store.clone())
    .with_audit_sink(PostgresAuditSink::connect(url)?);
    Ok((controller, store))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Ok(base) = std::env::var("TOOLGATE_PG_URL") else {
        // No server given: run this program again under a throw-away one.
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/postgres");
        println!(
            "TOOLGATE_PG_URL is not set: starting a throw-away server with {}",
            script.display()
        );
        let status = std::process::Command::new(script)
            .arg(std::env::current_exe()?)
            .status()?;
        std::process::exit(status.code().unwrap_or(1));
    };
    // A schema of its own, so the demo starts empty whatever the database holds.
    let schema = format!("toolgate_demo_{}", std::process::id());
    let mut admin = base.parse::<postgres::Config>()?.connect(postgres::NoTls)?;
    admin.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-csearch_path%3D{schema}");

    let (agent_server, agent_store) = server(&url)?;
    let (ui_server, ui_store) = server(&url)?;
    let mut feed = ui_store.subscribe()?;

    // Server A: the model asks to deploy; the call waits for a person.
    let call = ToolCall::new(
        "call_1",
        "deploy",
        json!({"service": "api", "version": "1.4.2"}),
    );
    let Outcome::PendingApproval(request) = agent_server.handle(call) else {
        return Err("deploy should wait for approval".into());
    };
    println!("server A held {} ({})", request.approval_id, request.reason);

    // Server B: the approval page learns of it from the feed and lists it.
    let change = feed
        .next_within(Duration::from_secs(5))?
        .ok_or("no change published")?;
    println!(
        "server B was told: {} is {:?}",
        change.approval_id, change.state
    );
    for waiting in ui_server.pending() {
        println!(
            "server B lists: {} {}",
            waiting.call.tool_name, waiting.call.arguments
        );
    }

    // A person approves on server B while server A waits for the answer.
    let approver = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let response = ApprovalResponse::approve(request.approval_id);
        assert_eq!(response.verdict, Verdict::Approve);
        ui_server.resolve(response)
    });
    let started = Instant::now();
    let state = agent_store.wait_for_answer(request.approval_id, Duration::from_secs(30))?;
    println!(
        "server A learned after {} ms: {state:?}",
        started.elapsed().as_millis()
    );
    let result = approver.join().map_err(|_| "the approver panicked")??;
    println!("server B ran it -> [{}] {}", result.call_id, result.content);
    println!(
        "server A answering again: {}",
        agent_server
            .resolve(ApprovalResponse::approve(request.approval_id))
            .map_or_else(|error| error.to_string(), |result| result.content)
    );

    let tip = PostgresAuditSink::connect(&url)?.verify()?;
    println!(
        "one audit chain for both servers: {} entries, intact, last {}",
        tip.entries, tip.last_hash
    );
    admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
    Ok(())
}
