//! What the gateway costs per call, side by side in one run: the same `echo` upstream (answering
//! at once) called directly, through `toolgate-mcp-gateway`, and through a peer proxy (FastMCP's,
//! from PyPI) in front of the same upstream.
//!
//! ```text
//! .ci/bench-peer                                                      # the peer's venv, once
//! cargo bench -p toolgate-gateway --bench gateway_overhead            # 32 clients, 3 s rounds
//! cargo bench -p toolgate-gateway --bench gateway_overhead -- 64 5    # clients, seconds a round
//! cargo bench -p toolgate-gateway --bench gateway_overhead -- stdio   # stdio only
//! ```
//!
//! Three measurements, each alternating direct and gateway round by round so a neighbour's load
//! on the shared machine falls on both alike (the peer proxy is measured after them, alone):
//! - **throughput**: 32 Streamable HTTP clients calling back to back (the machine saturated; the
//!   latency figures then are mostly queueing for its two cores);
//! - **added latency at a steady load**: the same 32 clients each calling once every 32 ms
//!   (1,000 calls/s offered, well under every path's capacity), so a figure is what a call costs,
//!   not how long it queued;
//! - **stdio**: one client, sequential calls.
//!
//! Not a criterion bench: criterion times one closure at a time, and what is measured here is a
//! whole system under concurrent load (three processes, 32 connections). The gateway is the
//! release binary cargo builds for the bench; the upstream is this program (stdio: re-run with
//! `--upstream-stdio`; HTTP: served in-process by the SDK's Streamable HTTP server). Every client
//! keeps its connection open between calls, as an agent's HTTP client does (rmcp's default client
//! opens one per request, which would measure TCP handshakes, not MCP).

mod echo;
mod load;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;

use echo::{Echo, http_upstream};
use load::{PERIOD, Target, added, connect, measure_http, measure_stdio, row, stdio_target};

const GATEWAY: &str = env!("CARGO_BIN_EXE_toolgate-mcp-gateway");
const KEY: &str = "tg_benchmark_key";
/// Rounds of each measurement, the paths alternating within a round.
const ROUNDS: usize = 3;

/// A free loopback port, and a wait until something listens on it.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    listener.local_addr().expect("address").port()
}

async fn listening(port: u16, what: &str, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "{what} exited before listening"
        );
        assert!(
            Instant::now() < deadline,
            "{what} did not listen within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The peer proxy's Python (with `fastmcp`), made by `.ci/bench-peer`; `None` when absent.
fn peer_python() -> Option<PathBuf> {
    let python = std::env::var_os("TOOLGATE_BENCH_PEER_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-peer/bin/python")
        });
    python.exists().then_some(python)
}

fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/peer_proxy.py")
}

/// The gateway's config: one remote upstream `e` at `upstream`, `echo` allowed, one API key.
fn gateway_config(dir: &std::path::Path, upstream: &str, port: u16) -> PathBuf {
    std::fs::write(
        dir.join("policy.json"),
        r#"{"rules": [{"id": "echo", "tool": "e__echo", "action": "allow", "reason": "benchmark"}]}"#,
    )
    .expect("policy");
    use sha2::Digest as _;
    let hash: String = sha2::Sha256::digest(KEY.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[upstreams.e]\nurl = \"{upstream}\"\n[policy]\nlayers = [\"policy.json\"]\n\
             [listen]\nhttp = \"127.0.0.1:{port}\"\n[[clients]]\nid = \"bench\"\napi_key_sha256 = \"{hash}\"\n"
        ),
    )
    .expect("config");
    config
}

/// A child process killed when dropped, so a failed assertion leaves nothing running.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn http(clients: usize, length: Duration, dir: &std::path::Path) {
    let upstream = http_upstream().await;
    let port = free_port();
    let mut gateway = Running(
        std::process::Command::new(GATEWAY)
            .args(["serve", "--config"])
            .arg(gateway_config(dir, &upstream, port))
            .env("TOOLGATE_LOG", "warn")
            .spawn()
            .expect("gateway"),
    );
    listening(port, "the gateway", &mut gateway.0).await;
    let targets = [
        Target {
            label: "direct",
            tool: "echo",
            clients: connect(&upstream, None, clients).await,
        },
        Target {
            label: "through the gateway",
            tool: "e__echo",
            clients: connect(&format!("http://127.0.0.1:{port}/mcp"), Some(KEY), clients).await,
        },
    ];
    let mut figures = measure_http(&targets, length, ROUNDS).await;
    for target in targets {
        target.close().await;
    }
    drop(gateway);
    // The peer runs alone, after: it is slower by orders of magnitude, and its work on closed
    // sessions would go on loading the machine during the others' rounds.
    if let Some(python) = peer_python() {
        let peer_port = free_port();
        let mut peer = Running(
            std::process::Command::new(python)
                .arg(peer_script())
                .args(["http", &upstream, &peer_port.to_string()])
                // It reports each closed backend session on stderr ("Session termination failed").
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("peer proxy"),
        );
        listening(peer_port, "the peer proxy", &mut peer.0).await;
        let target = Target {
            label: "through FastMCP's proxy",
            tool: "echo",
            clients: connect(&format!("http://127.0.0.1:{peer_port}/mcp"), None, clients).await,
        };
        figures.extend(measure_http(std::slice::from_ref(&target), length, 1).await);
        target.close().await;
    }

    println!(
        "Streamable HTTP, {clients} clients calling back to back, {ROUNDS} rounds of {length:?} \
         (the peer: one round, alone):"
    );
    for figure in &mut figures {
        row(figure.label, Some(figure.rate), &mut figure.saturated);
    }
    for figure in &figures[1..] {
        println!(
            "  {}: throughput {:.0}% of direct",
            figure.label,
            100.0 * figure.rate / figures[0].rate
        );
    }
    println!(
        "Steady load: the {clients} clients each calling every {PERIOD:?} ({:.0} calls/s offered):",
        clients as f64 / PERIOD.as_secs_f64()
    );
    for figure in &mut figures {
        row(figure.label, None, &mut figure.steady);
    }
    let (direct, rest) = figures.split_first_mut().expect("direct");
    for figure in rest {
        added(figure.label, &mut figure.steady, &mut direct.steady);
    }
}

async fn stdio(length: Duration, dir: &std::path::Path) {
    let me = std::env::current_exe().expect("exe");
    std::fs::write(
        dir.join("stdio-policy.json"),
        r#"{"rules": [{"id": "echo", "tool": "echo", "action": "allow", "reason": "benchmark"}]}"#,
    )
    .expect("policy");
    let mut direct = tokio::process::Command::new(&me);
    direct.arg("--upstream-stdio");
    let mut gated = tokio::process::Command::new(GATEWAY);
    gated
        .arg("--policy")
        .arg(dir.join("stdio-policy.json"))
        .arg("--")
        .arg(&me)
        .arg("--upstream-stdio")
        .env("TOOLGATE_LOG", "warn");
    let targets = [
        stdio_target("direct", direct).await,
        stdio_target("through the gateway", gated).await,
    ];
    let rounds = ROUNDS + 2;
    let mut times = measure_stdio(&targets, length, rounds).await;
    let mut labels: Vec<&str> = targets.iter().map(|target| target.label).collect();
    for target in targets {
        target.close().await;
    }
    if let Some(python) = peer_python() {
        let mut command = tokio::process::Command::new(python);
        command
            .arg(peer_script())
            .arg("stdio")
            .arg(&me)
            .arg("--upstream-stdio")
            .env("FASTMCP_LOG_LEVEL", "WARNING");
        let target = stdio_target("through FastMCP's proxy", command).await;
        times.extend(measure_stdio(std::slice::from_ref(&target), length, 1).await);
        labels.push(target.label);
        target.close().await;
    }
    println!(
        "stdio, one client calling back to back, {rounds} rounds of {length:?} (the peer: one, alone):"
    );
    for (label, times) in labels.iter().zip(&mut times) {
        row(label, None, times);
    }
    let (direct, rest) = times.split_first_mut().expect("direct");
    for (label, through) in labels.iter().skip(1).zip(rest) {
        added(label, through, direct);
    }
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
    let length = Duration::from_secs(numbers.get(1).copied().unwrap_or(3) as u64);
    let only_stdio = args.iter().any(|arg| arg == "stdio");
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("toolgate-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        if !only_stdio {
            http(clients, length, &dir).await;
        }
        stdio(length, &dir).await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}
