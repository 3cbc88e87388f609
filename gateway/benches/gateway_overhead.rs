//! What the gateway costs per call, side by side in one run: the same `echo` upstream (answering
//! at once) called directly and through `toolgate-mcp-gateway`, over Streamable HTTP with 32
//! concurrent clients (throughput, p50, p99) and over stdio with one client (p50, p99).
//!
//! ```text
//! cargo bench -p toolgate-gateway --bench gateway_overhead            # 32 clients × 300 calls
//! cargo bench -p toolgate-gateway --bench gateway_overhead -- 64 500  # clients, calls each
//! ```
//!
//! Not a criterion bench: criterion times one closure at a time, and what is measured here is a
//! whole system under concurrent load (two processes, 32 connections). The gateway is the release
//! binary cargo builds for the bench; the upstream is this program (stdio: re-run with
//! `--upstream-stdio`; HTTP: served in-process by the SDK's Streamable HTTP server).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use serde_json::json;

const GATEWAY: &str = env!("CARGO_BIN_EXE_toolgate-mcp-gateway");
const KEY: &str = "tg_benchmark_key";

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
            "name": "echo", "description": "Echo the text back.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
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

/// Serves `Echo` over Streamable HTTP on a free loopback port; its `/mcp` URL.
async fn http_upstream() -> String {
    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}/mcp")
}

/// Latencies of every call, and the wall time of all: `clients` clients at once, each making
/// `calls` sequential calls after a tenth as warm-up.
async fn load(
    url: &str,
    key: Option<&str>,
    tool: &'static str,
    clients: usize,
    calls: usize,
) -> (Vec<Duration>, Duration) {
    let mut sessions = Vec::new();
    for _ in 0..clients {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        if let Some(key) = key {
            config = config.auth_header(key.to_owned());
        }
        let client =
            ().serve(StreamableHttpClientTransport::from_config(config))
                .await
                .expect("connect");
        sessions.push(client);
    }
    let arguments = json!({"text": "hello"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let warm = calls / 10;
    let started = Arc::new(tokio::sync::Barrier::new(clients));
    let begun = Instant::now();
    let mut tasks = Vec::new();
    for client in sessions {
        let (arguments, barrier) = (arguments.clone(), Arc::clone(&started));
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(calls);
            for round in 0..warm + calls {
                if round == warm {
                    barrier.wait().await;
                }
                let at = Instant::now();
                let result = client
                    .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments.clone()))
                    .await
                    .expect("call");
                assert_ne!(result.is_error, Some(true), "the echo call failed");
                if round >= warm {
                    times.push(at.elapsed());
                }
            }
            let _ = client.cancel().await;
            times
        }));
    }
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await.expect("client"));
    }
    let wall = begun.elapsed();
    times.sort();
    (times, wall)
}

fn percentile(times: &[Duration], per_mille: usize) -> Duration {
    times[(times.len() * per_mille / 1000).min(times.len() - 1)]
}

/// p50 and p99 of `calls` sequential calls over stdio through `command`.
async fn stdio(command: tokio::process::Command, calls: usize) -> Vec<Duration> {
    let client =
        ().serve(TokioChildProcess::new(command).expect("spawn"))
            .await
            .expect("handshake");
    let arguments = json!({"text": "hello"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut times = Vec::new();
    for round in 0..calls + calls / 10 {
        let at = Instant::now();
        let result = client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments.clone()))
            .await
            .expect("call");
        assert_ne!(result.is_error, Some(true));
        if round >= calls / 10 {
            times.push(at.elapsed());
        }
    }
    let _ = client.cancel().await;
    times.sort();
    times
}

fn main() {
    // The SDK's HTTP client is built with rustls and no provider of its own (as the gateway is).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    if args.iter().any(|arg| arg == "--upstream-stdio") {
        runtime.block_on(async {
            let _ = Echo
                .serve(rmcp::transport::stdio())
                .await
                .expect("serve")
                .waiting()
                .await;
        });
        return;
    }
    let numbers: Vec<usize> = args.iter().filter_map(|arg| arg.parse().ok()).collect();
    let clients = numbers.first().copied().unwrap_or(32);
    let calls = numbers.get(1).copied().unwrap_or(300);
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("toolgate-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let upstream = http_upstream().await;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        std::fs::write(dir.join("policy.json"), r#"{"rules": [{"id": "echo", "tool": "e__echo", "action": "allow", "reason": "benchmark"}]}"#).unwrap();
        use sha2::Digest as _;
        let hash: String = sha2::Sha256::digest(KEY.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(
            dir.join("gateway.toml"),
            format!(
                "[upstreams.e]\nurl = \"{upstream}\"\n[policy]\nlayers = [\"policy.json\"]\n\
                 [listen]\nhttp = \"127.0.0.1:{port}\"\n[[clients]]\nid = \"bench\"\napi_key_sha256 = \"{hash}\"\n"
            ),
        )
        .unwrap();
        let mut gateway = std::process::Command::new(GATEWAY)
            .args(["serve", "--config"])
            .arg(dir.join("gateway.toml"))
            .env("TOOLGATE_LOG", "warn")
            .spawn()
            .expect("gateway");
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let through_url = format!("http://127.0.0.1:{port}/mcp");
        println!("Streamable HTTP, {clients} concurrent clients × {calls} calls, upstream answering at once:");
        let (direct, direct_wall) = load(&upstream, None, "echo", clients, calls).await;
        let (gated, gated_wall) = load(&through_url, Some(KEY), "e__echo", clients, calls).await;
        let total = (clients * calls) as f64;
        let report = |label: &str, times: &[Duration], wall: Duration| {
            println!(
                "  {label:<22} {:>8.0} calls/s   p50 {:>9.1?}   p99 {:>9.1?}",
                total / wall.as_secs_f64(),
                percentile(times, 500),
                percentile(times, 990)
            );
        };
        report("direct", &direct, direct_wall);
        report("through the gateway", &gated, gated_wall);
        println!(
            "  gateway: throughput {:.0}% of direct; added p50 {:.1?}, added p99 {:.1?}",
            100.0 * direct_wall.as_secs_f64() / gated_wall.as_secs_f64(),
            percentile(&gated, 500).saturating_sub(percentile(&direct, 500)),
            percentile(&gated, 990).saturating_sub(percentile(&direct, 990)),
        );
        let _ = gateway.kill();
        let _ = gateway.wait();

        let me = std::env::current_exe().expect("exe");
        let mut direct = tokio::process::Command::new(&me);
        direct.arg("--upstream-stdio");
        std::fs::write(dir.join("stdio-policy.json"), r#"{"rules": [{"id": "echo", "tool": "echo", "action": "allow", "reason": "benchmark"}]}"#).unwrap();
        let mut gated = tokio::process::Command::new(GATEWAY);
        gated.arg("--policy").arg(dir.join("stdio-policy.json")).arg("--").arg(&me).arg("--upstream-stdio");
        gated.env("TOOLGATE_LOG", "warn");
        let stdio_calls = calls * 10;
        println!("stdio, one client × {stdio_calls} sequential calls:");
        let direct = stdio(direct, stdio_calls).await;
        let through = stdio(gated, stdio_calls).await;
        for (label, times) in [("direct", &direct), ("through the gateway", &through)] {
            println!("  {label:<22} p50 {:>9.1?}   p99 {:>9.1?}", percentile(times, 500), percentile(times, 990));
        }
        println!(
            "  gateway: added p50 {:.1?}, added p99 {:.1?}",
            percentile(&through, 500).saturating_sub(percentile(&direct, 500)),
            percentile(&through, 990).saturating_sub(percentile(&direct, 990)),
        );
        let _ = std::fs::remove_dir_all(&dir);
    });
}
