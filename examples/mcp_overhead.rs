//! What the gateway costs per call: the same `echo` tool called over stdio directly, and through
//! `toolgate-mcp-gateway` (allowed by a rule; once without and once with the JSONL audit log).
//!
//! ```text
//! cargo build --release -p toolgate-gateway && cargo build --release --features mcp --example mcp_overhead
//! target/release/examples/mcp_overhead target/release/toolgate-mcp-gateway [CALLS]
//! ```
//!
//! The upstream is this program itself, run with `--upstream`: a bare `rmcp` server with one
//! `echo` tool, so the numbers are the protocol hop and the gate, not a slow tool.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::TokioChildProcess;
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use serde_json::json;
use toolgate::mcp::rmcp;

#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tool = serde_json::from_value(json!({
            "name": "echo",
            "description": "Echo the text back.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                            "required": ["text"]},
        }))
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .and_then(|arguments| arguments.get("text").cloned())
            .unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text.to_string())]).into())
    }
}

/// Median and 95th percentile of `calls` sequential echo calls through `command`.
async fn measure(
    command: tokio::process::Command,
    calls: usize,
) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    let client = ().serve(TokioChildProcess::new(command)?).await?;
    let arguments = json!({"text": "hello"});
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let mut times = Vec::with_capacity(calls);
    for round in 0..calls + calls / 10 {
        let started = Instant::now();
        let result = client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments.clone()))
            .await?;
        if result.is_error == Some(true) {
            return Err("the echo call failed".into());
        }
        // The first tenth warms up and is not counted.
        if round >= calls / 10 {
            times.push(started.elapsed());
        }
    }
    client.cancel().await?;
    times.sort();
    Ok((times[times.len() / 2], times[times.len() * 95 / 100]))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--upstream") {
        Echo.serve(rmcp::transport::stdio())
            .await?
            .waiting()
            .await?;
        return Ok(());
    }
    let gateway = args
        .get(1)
        .ok_or("usage: mcp_overhead GATEWAY_BINARY [CALLS]")?;
    let calls: usize = args.get(2).map_or(Ok(2_000), |n| n.parse())?;
    let me = std::env::current_exe()?;
    let dir = std::env::temp_dir().join(format!("toolgate-mcp-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let policy = dir.join("policy.json");
    std::fs::write(
        &policy,
        r#"{"rules": [{"id": "echo", "tool": "echo", "action": "allow", "reason": "benchmark"}]}"#,
    )?;

    let mut direct = tokio::process::Command::new(&me);
    direct.arg("--upstream");
    let gated = |audit: bool| {
        let mut command = tokio::process::Command::new(gateway);
        command.arg("--policy").arg(&policy);
        if audit {
            command.arg("--audit").arg(dir.join("audit.jsonl"));
        }
        command.arg("--").arg(&me).arg("--upstream");
        command
    };
    let report = |label: &str, (median, p95): (Duration, Duration)| {
        println!("{label:<28} median {median:>10.1?}  p95 {p95:>10.1?}");
    };
    let plain = measure(direct, calls).await?;
    report("direct", plain);
    let through = measure(gated(false), calls).await?;
    report("through the gateway", through);
    let audited = measure(gated(true), calls).await?;
    report("through the gateway + audit", audited);
    println!(
        "gateway overhead per call (median): {:.1?}; with audit: {:.1?}",
        through.0.saturating_sub(plain.0),
        audited.0.saturating_sub(plain.0)
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
