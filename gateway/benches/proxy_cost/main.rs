//! What the gateway's own work costs per call, against what the MCP SDK it is built on costs:
//! CPU time per call and latency, in one alternating run, for the same `echo` upstream called
//!
//! - directly (the upstream's own CPU per call),
//! - through an rmcp-only pass-through proxy (this program, `proxy.rs`: the SDK's client and
//!   server and nothing else — no lookup, validation, policy or result checks),
//! - through `toolgate-mcp-gateway` (one upstream under its own names, one allow rule, no audit
//!   sink; the audit log's cost is measured apart, with `--audit`), and
//! - over Streamable HTTP only, through a design measured and not shipped (`rawcall.rs`): rmcp
//!   for the protocol's state, each `tools/call` gated by toolgate outside the SDK's request path,
//!
//! over Streamable HTTP and over stdio. Each hop's CPU is read from `/proc/PID/stat` (user and
//! system time of every thread of that process alone, not of its children) before and after each
//! round; rounds alternate the paths so a neighbour's load on the shared machine falls on
//! all alike; the figures are the medians of the rounds.
//!
//! ```text
//! cargo bench -p toolgate-gateway --bench proxy_cost                  # 8 concurrent calls, 7 rounds of 2 s
//! cargo bench -p toolgate-gateway --bench proxy_cost -- 16 3          # concurrency, seconds a round
//! cargo bench -p toolgate-gateway --bench proxy_cost -- --rate 2000   # every path at 2,000 calls a second
//! cargo bench -p toolgate-gateway --bench proxy_cost -- --audit       # the gateway with a JSONL audit log too
//! ```
//!
//! `proxy_cost --calls URL CALLS [KEY]` (the built bench binary) makes a fixed number of calls, 8
//! in flight over 8 sessions, against one endpoint: for counting a hop's instructions under
//! `valgrind --tool=callgrind` (the gateway's README says how).

mod cpu;
mod echo;
mod proxy;
mod rawcall;
// The overhead bench's `echo` server; its in-process HTTP upstream is not used here.
#[allow(
    dead_code,
    reason = "http_upstream serves the overhead bench, not this one"
)]
#[path = "../gateway_overhead/echo.rs"]
mod shared_echo;

// The allocator the gateway uses, so the comparison is of the work, not of the allocators.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

const GATEWAY: &str = env!("CARGO_BIN_EXE_toolgate-mcp-gateway");
const KEY: &str = "tg_benchmark_key";
const ROUNDS: usize = 7;

/// A child process killed when dropped.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    listener.local_addr().expect("address").port()
}

async fn listening(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not listen within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The gateway's config in `dir`: upstream `e` reached as `upstream` (TOML), its tools under
/// their own names, `echo` allowed, `listen` (TOML), an audit log when `audit`.
fn gateway_config(dir: &Path, upstream: &str, listen: &str, audit: bool) -> PathBuf {
    std::fs::write(
        dir.join("policy.json"),
        r#"{"rules": [{"id": "echo", "tool": "echo", "action": "allow", "reason": "benchmark"}]}"#,
    )
    .expect("policy");
    use sha2::Digest as _;
    let hash: String = sha2::Sha256::digest(KEY.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let audit = if audit {
        "[audit]\njsonl = \"audit.jsonl\"\n"
    } else {
        ""
    };
    let config = dir.join(format!("gateway-{}.toml", listen.len()));
    std::fs::write(
        &config,
        format!(
            "[upstreams.e]\n{upstream}\nown_names = true\n[policy]\nlayers = [\"policy.json\"]\n{audit}\
             {listen}\n[[clients]]\nid = \"bench\"\napi_key_sha256 = \"{hash}\"\n"
        ),
    )
    .expect("config");
    config
}

/// One path to the upstream: its label, the process whose CPU is its cost, and its clients.
struct Path3 {
    label: &'static str,
    pid: u32,
    peers: Vec<Peer<RoleClient>>,
    services: Vec<RunningService<RoleClient, ()>>,
}

async fn http_clients(
    url: &str,
    key: Option<&str>,
    count: usize,
) -> Vec<RunningService<RoleClient, ()>> {
    let mut clients = Vec::new();
    for _ in 0..count {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        if let Some(key) = key {
            config = config.auth_header(key.to_owned());
        }
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .expect("client");
        clients.push(
            ().serve(StreamableHttpClientTransport::with_client(http, config))
                .await
                .expect("connect"),
        );
    }
    clients
}

fn path(label: &'static str, pid: u32, services: Vec<RunningService<RoleClient, ()>>) -> Path3 {
    Path3 {
        label,
        pid,
        peers: services
            .iter()
            .map(|service| service.peer().clone())
            .collect(),
        services,
    }
}

/// How each path is driven: `concurrency` callers, each calling back to back, or — with a
/// rate — each at its share of `rate` calls a second (a caller behind its schedule skips the
/// calls it missed rather than bunching them).
#[derive(Clone, Copy)]
struct Load {
    concurrency: usize,
    length: Duration,
    rate: Option<f64>,
}

impl Load {
    fn describe(&self) -> String {
        match self.rate {
            Some(rate) => format!("{rate} calls a second from {} callers", self.concurrency),
            None => format!("{} calls in flight", self.concurrency),
        }
    }
}

/// Calls `echo` on every peer as `load` says, for `length`: the calls made and each one's
/// latency.
async fn run(peers: &[Peer<RoleClient>], load: Load, length: Duration) -> Vec<Duration> {
    let until = Instant::now() + length;
    let mut tasks = Vec::new();
    for index in 0..load.concurrency {
        let peer = peers[index % peers.len()].clone();
        let mut pace = load.rate.map(|rate| {
            let mut pace =
                tokio::time::interval(Duration::from_secs_f64(load.concurrency as f64 / rate));
            pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            pace
        });
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::new();
            let arguments = serde_json::json!({"text": "hello"})
                .as_object()
                .cloned()
                .expect("object");
            while Instant::now() < until {
                if let Some(pace) = &mut pace {
                    pace.tick().await;
                }
                let request = CallToolRequestParams::new("echo").with_arguments(arguments.clone());
                let at = Instant::now();
                let result = peer.call_tool(request).await.expect("call");
                times.push(at.elapsed());
                assert_ne!(result.is_error, Some(true), "the echo call failed");
            }
            times
        }));
    }
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await.expect("client"));
    }
    times
}

/// CPU per call (µs) and latencies of each path, rounds alternating; medians per path.
async fn measure(paths: &[Path3], load: Load) -> Vec<(f64, Vec<Duration>)> {
    let mut cpu = vec![Vec::new(); paths.len()];
    let mut latency = vec![Vec::new(); paths.len()];
    for path in paths {
        run(&path.peers, load, load.length / 4).await; // warm-up
    }
    for _ in 0..ROUNDS {
        for (index, path) in paths.iter().enumerate() {
            let before = cpu::of(path.pid);
            let times = run(&path.peers, load, load.length).await;
            let used = cpu::of(path.pid) - before;
            cpu[index].push(used.as_secs_f64() * 1e6 / times.len() as f64);
            latency[index].extend(times);
        }
    }
    cpu.into_iter()
        .map(|mut rounds| {
            rounds.sort_by(f64::total_cmp);
            rounds[rounds.len() / 2]
        })
        .zip(latency)
        .collect()
}

fn report(title: &str, paths: &[Path3], figures: &mut [(f64, Vec<Duration>)]) {
    println!("{title}");
    for (path, (cpu, times)) in paths.iter().zip(figures.iter_mut()) {
        times.sort_unstable();
        println!(
            "  {:<28} CPU {:>7.1} µs/call   p50 {:>8.1?}   p99 {:>8.1?}   ({} calls)",
            path.label,
            cpu,
            times[times.len() / 2],
            times[times.len() * 99 / 100],
            times.len()
        );
    }
    if let [_, (proxy, _), (gateway, _), rest @ ..] = figures {
        println!(
            "  gateway CPU / rmcp-only proxy CPU: {:.2}×",
            *gateway / *proxy
        );
        if let [(prototype, _), (kept, _)] = rest {
            println!(
                "  raw-call prototype CPU / rmcp-only proxy CPU: {:.2}×",
                *prototype / *proxy
            );
            println!(
                "  rmcp server + client transport CPU / rmcp-only proxy CPU: {:.2}×",
                *kept / *proxy
            );
        }
    }
}

async fn http(dir: &Path, load: Load, audit: bool) {
    let me = std::env::current_exe().expect("exe");
    let (upstream_port, proxy_port, gateway_port, rawcall_port, kept_port) = (
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
    );
    let upstream = Running(
        std::process::Command::new(&me)
            .args(["--upstream-http", &upstream_port.to_string()])
            .spawn()
            .expect("upstream"),
    );
    listening(upstream_port, "the upstream").await;
    let upstream_url = format!("http://127.0.0.1:{upstream_port}/mcp");
    let proxy = Running(
        std::process::Command::new(&me)
            .args(["--proxy-http", &proxy_port.to_string(), &upstream_url])
            .spawn()
            .expect("proxy"),
    );
    let config = gateway_config(
        dir,
        &format!("url = {upstream_url:?}"),
        &format!("[listen]\nhttp = \"127.0.0.1:{gateway_port}\""),
        audit,
    );
    let gateway = Running(
        std::process::Command::new(GATEWAY)
            .args(["serve", "--config"])
            .arg(config)
            .env("TOOLGATE_LOG", "warn")
            .spawn()
            .expect("gateway"),
    );
    let rawcall = Running(
        std::process::Command::new(&me)
            .args(["--rawcall-http", &rawcall_port.to_string(), &upstream_url])
            .spawn()
            .expect("raw-call prototype"),
    );
    listening(proxy_port, "the proxy").await;
    listening(gateway_port, "the gateway").await;
    let kept = Running(
        std::process::Command::new(&me)
            .args(["--server-kept-http", &kept_port.to_string(), &upstream_url])
            .spawn()
            .expect("server-kept prototype"),
    );
    listening(rawcall_port, "the raw-call prototype").await;
    listening(kept_port, "the server-kept prototype").await;
    let clients = load.concurrency.min(8);
    let paths = [
        path(
            "upstream alone",
            upstream.0.id(),
            http_clients(&upstream_url, None, clients).await,
        ),
        path(
            "rmcp-only proxy",
            proxy.0.id(),
            http_clients(&format!("http://127.0.0.1:{proxy_port}/mcp"), None, clients).await,
        ),
        path(
            if audit {
                "gateway (JSONL audit)"
            } else {
                "gateway"
            },
            gateway.0.id(),
            http_clients(
                &format!("http://127.0.0.1:{gateway_port}/mcp"),
                Some(KEY),
                clients,
            )
            .await,
        ),
        path(
            "raw-call prototype",
            rawcall.0.id(),
            http_clients(
                &format!("http://127.0.0.1:{rawcall_port}/mcp"),
                Some(KEY),
                clients,
            )
            .await,
        ),
        path(
            "rmcp server + client transport",
            kept.0.id(),
            http_clients(
                &format!("http://127.0.0.1:{kept_port}/mcp"),
                Some(KEY),
                clients,
            )
            .await,
        ),
    ];
    let mut figures = measure(&paths, load).await;
    report(
        &format!(
            "Streamable HTTP, {} over {clients} sessions, {ROUNDS} rounds of {:?}:",
            load.describe(),
            load.length
        ),
        &paths,
        &mut figures,
    );
    for path in paths {
        for service in path.services {
            let _ = service.cancel().await;
        }
    }
}

async fn stdio(dir: &Path, load: Load, audit: bool) {
    let me = std::env::current_exe().expect("exe");
    let spawn = |command: tokio::process::Command| async move {
        let child = TokioChildProcess::new(command).expect("spawn");
        let pid = child.id().expect("pid");
        (pid, ().serve(child).await.expect("handshake"))
    };
    let mut direct = tokio::process::Command::new(&me);
    direct.arg("--upstream-stdio");
    let mut proxy = tokio::process::Command::new(&me);
    proxy
        .args(["--proxy-stdio"])
        .arg(&me)
        .arg("--upstream-stdio");
    let config = gateway_config(
        dir,
        &format!(
            "command = {:?}\nargs = [\"--upstream-stdio\"]",
            me.display().to_string()
        ),
        "[listen]\nstdio = true",
        audit,
    );
    let mut gateway = tokio::process::Command::new(GATEWAY);
    gateway
        .args(["serve", "--config"])
        .arg(config)
        .env("TOOLGATE_LOG", "warn");
    let (direct, proxy, gateway) = (
        spawn(direct).await,
        spawn(proxy).await,
        spawn(gateway).await,
    );
    let paths = [
        path("upstream alone", direct.0, vec![direct.1]),
        path("rmcp-only proxy", proxy.0, vec![proxy.1]),
        path(
            if audit {
                "gateway (JSONL audit)"
            } else {
                "gateway"
            },
            gateway.0,
            vec![gateway.1],
        ),
    ];
    let mut figures = measure(&paths, load).await;
    report(
        &format!(
            "stdio, {} on one session, {ROUNDS} rounds of {:?}:",
            load.describe(),
            load.length
        ),
        &paths,
        &mut figures,
    );
    for path in paths {
        for service in path.services {
            let _ = service.cancel().await;
        }
    }
}

async fn fixed_calls(url: &str, calls: usize, key: Option<&str>) {
    let services = http_clients(url, key, 8).await;
    let peers: Vec<_> = services
        .iter()
        .map(|service| service.peer().clone())
        .collect();
    let mut tasks = Vec::new();
    for (index, peer) in peers.into_iter().enumerate() {
        let share = calls / 8 + usize::from(index < calls % 8);
        tasks.push(tokio::spawn(async move {
            for _ in 0..share {
                let arguments = serde_json::json!({"text": "hello"})
                    .as_object()
                    .cloned()
                    .expect("object");
                let request = CallToolRequestParams::new("echo").with_arguments(arguments);
                let result = peer.call_tool(request).await.expect("call");
                assert_ne!(result.is_error, Some(true), "the echo call failed");
            }
        }));
    }
    for task in tasks {
        task.await.expect("client");
    }
    for service in services {
        let _ = service.cancel().await;
    }
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    match args.get(1).map(String::as_str) {
        Some("--upstream-stdio") => return runtime.block_on(echo::serve_stdio()),
        Some("--upstream-http") => {
            return runtime.block_on(echo::serve_http(args[2].parse().expect("port")));
        }
        Some("--proxy-stdio") => return runtime.block_on(proxy::stdio(&args[2..])),
        Some("--proxy-http") => {
            return runtime.block_on(proxy::http(args[2].parse().expect("port"), &args[3]));
        }
        Some("--server-kept-http") => {
            return runtime.block_on(rawcall::http_server_kept(
                args[2].parse().expect("port"),
                &args[3],
                KEY,
            ));
        }
        Some("--rawcall-http") => {
            return runtime.block_on(rawcall::http(args[2].parse().expect("port"), &args[3], KEY));
        }
        // A fixed number of calls against one endpoint, for instruction counts of a hop run
        // under a profiler: `--calls URL CALLS [KEY]`, 8 in flight over 8 sessions.
        Some("--calls") => {
            return runtime.block_on(fixed_calls(
                &args[2],
                args[3].parse().expect("calls"),
                args.get(4).map(String::as_str),
            ));
        }
        _ => {}
    }
    let rate_at = args.iter().position(|arg| arg == "--rate").map(|at| at + 1);
    let rate = rate_at.map(|at| args[at].parse::<f64>().expect("--rate CALLS_A_SECOND"));
    let numbers: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(at, _)| Some(*at) != rate_at)
        .filter_map(|(_, arg)| arg.parse().ok())
        .collect();
    let load = Load {
        concurrency: numbers.first().copied().unwrap_or(8),
        length: Duration::from_secs(numbers.get(1).copied().unwrap_or(2) as u64),
        rate,
    };
    let audit = args.iter().any(|arg| arg == "--audit");
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("toolgate-proxy-cost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        http(&dir, load, audit).await;
        stdio(&dir, load, audit).await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}
