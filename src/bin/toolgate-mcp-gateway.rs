//! `toolgate-mcp-gateway`: puts toolgate in front of any MCP server.
//!
//! ```text
//! toolgate-mcp-gateway --policy policy.json [--audit audit.jsonl] -- <server command> [args…]
//! ```
//!
//! Starts the server as a child process, imports its tools with their schemas, and serves them
//! on stdin/stdout, every call resolved, validated and decided by the `RulePolicy` in
//! `policy.json` (re-read every second; a change is applied only if it loads whole) and, with
//! `--audit`, recorded in a JSONL audit log. Messages go to stderr; stdout is the protocol.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use toolgate::ToolController;
use toolgate::audit::JsonlAuditSink;
use toolgate::mcp::{McpServer, PolicyFile, Reload, Upstream};
use toolgate::rules::RulePolicy;

const USAGE: &str =
    "usage: toolgate-mcp-gateway --policy POLICY.json [--audit AUDIT.jsonl] -- COMMAND [ARGS...]";

struct Options {
    policy: String,
    audit: Option<String>,
    command: Vec<String>,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let (mut policy, mut audit) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--policy" => policy = args.next(),
            "--audit" => audit = args.next(),
            "--" => break,
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let command: Vec<String> = args.collect();
    match (policy, command.is_empty()) {
        (Some(policy), false) => Ok(Options {
            policy,
            audit,
            command,
        }),
        _ => Err(USAGE.to_owned()),
    }
}

async fn run(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    let mut command = tokio::process::Command::new(&options.command[0]);
    command.args(&options.command[1..]);
    let upstream = Upstream::spawn(command).await?;
    let (registry, skipped) = upstream.import_tools().await?;
    for tool in &skipped {
        eprintln!(
            "toolgate: upstream tool {} not served: {}",
            tool.name, tool.error
        );
    }
    let policy = RulePolicy::from_file(&options.policy, &registry)?;
    let mut controller = ToolController::try_new(registry, policy)?;
    if let Some(path) = &options.audit {
        controller = controller.with_audit_sink(JsonlAuditSink::open(path)?);
    }
    let controller = Arc::new(controller);
    let mut policy_file = PolicyFile::new(&options.policy);
    // The file just loaded is the baseline; only later changes are reloads.
    if let Reload::Rejected(error) = policy_file.check(&controller) {
        return Err(error.into());
    }
    let watcher = policy_file.watch(Arc::clone(&controller), Duration::from_secs(1));
    let served = McpServer::new(controller)?
        .with_implementation("toolgate-mcp-gateway", env!("CARGO_PKG_VERSION"))
        .serve_stdio()
        .await;
    watcher.abort();
    drop(upstream);
    Ok(served?)
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match run(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let mut message = format!("toolgate-mcp-gateway: {error}");
            let mut source = error.source();
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
