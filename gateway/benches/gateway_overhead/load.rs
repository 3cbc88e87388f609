//! Driving a path: its clients, one call, the two loads (back to back, steady), and the figures.

use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::json;

/// The steady load: each client calls once per this period.
pub const PERIOD: Duration = Duration::from_millis(32);

/// One way to reach the upstream: its label, the tool's name there, and its connected clients.
pub struct Target {
    pub label: &'static str,
    pub tool: &'static str,
    pub clients: Vec<RunningService<RoleClient, ()>>,
}

impl Target {
    pub fn peers(&self) -> Vec<Peer<RoleClient>> {
        self.clients
            .iter()
            .map(|client| client.peer().clone())
            .collect()
    }

    pub async fn close(self) {
        for client in self.clients {
            let _ = client.cancel().await;
        }
    }
}

/// `count` Streamable HTTP clients of `url`, each with its own kept-alive connection.
pub async fn connect(
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
            .expect("HTTP client");
        let client =
            ().serve(StreamableHttpClientTransport::with_client(http, config))
                .await
                .expect("connect");
        clients.push(client);
    }
    clients
}

/// How long one `echo` call took.
pub async fn call(peer: &Peer<RoleClient>, tool: &'static str) -> Duration {
    let arguments = json!({"text": "hello"}).as_object().cloned();
    let mut request = CallToolRequestParams::new(tool);
    if let Some(arguments) = arguments {
        request = request.with_arguments(arguments);
    }
    let at = Instant::now();
    let result = peer.call_tool(request).await.expect("call");
    let took = at.elapsed();
    assert_ne!(result.is_error, Some(true), "the echo call failed");
    took
}

/// Every client calling back to back for `length` after a tenth of it as warm-up: calls per
/// second and every call's latency. Bounded by time, not calls, so a slow path takes no longer.
pub async fn saturate(target: &Target, length: Duration) -> (f64, Vec<Duration>) {
    let peers = target.peers();
    let warm_until = Instant::now() + length / 10;
    let mut tasks = Vec::new();
    for peer in peers {
        let tool = target.tool;
        tasks.push(tokio::spawn(async move {
            while Instant::now() < warm_until {
                call(&peer, tool).await;
            }
            let mut times = Vec::new();
            while Instant::now() < warm_until + length {
                times.push(call(&peer, tool).await);
            }
            times
        }));
    }
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await.expect("client"));
    }
    let ended = Instant::now();
    (
        times.len() as f64 / (ended - warm_until).as_secs_f64(),
        times,
    )
}

/// Every client calling once per [`PERIOD`], their starts spread over it, for `length` (a call
/// that overruns its slot makes the client skip the slots it missed).
pub async fn steady(target: &Target, length: Duration) -> Vec<Duration> {
    let peers = target.peers();
    let count = peers.len() as u32;
    let start = tokio::time::Instant::now() + Duration::from_millis(50);
    let end = start + length;
    let mut tasks = Vec::new();
    for (index, peer) in peers.into_iter().enumerate() {
        let tool = target.tool;
        let mut next = start + PERIOD * index as u32 / count;
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::new();
            while next < end {
                tokio::time::sleep_until(next).await;
                times.push(call(&peer, tool).await);
                while next <= tokio::time::Instant::now() {
                    next += PERIOD;
                }
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

pub fn percentile(times: &mut [Duration], per_mille: usize) -> Duration {
    times.sort_unstable();
    times[(times.len() * per_mille / 1000).min(times.len() - 1)]
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

pub fn row(label: &str, rate: Option<f64>, times: &mut [Duration]) {
    let rate = rate.map_or_else(String::new, |rate| format!("{rate:>8.0} calls/s"));
    println!(
        "  {label:<24} {rate:>16}   p50 {:>9.1?}   p99 {:>9.1?}",
        percentile(times, 500),
        percentile(times, 990)
    );
}

pub fn added(label: &str, through: &mut [Duration], direct: &mut [Duration]) {
    println!(
        "  {label}: added p50 {:.1?}, added p99 {:.1?}",
        percentile(through, 500).saturating_sub(percentile(direct, 500)),
        percentile(through, 990).saturating_sub(percentile(direct, 990)),
    );
}

/// What one path measured: calls per second (the median of its rounds), every call's latency
/// when saturated, and at the steady load.
pub struct Figures {
    pub label: &'static str,
    pub rate: f64,
    pub saturated: Vec<Duration>,
    pub steady: Vec<Duration>,
}

/// Both measurements of `targets`, alternating them round by round.
pub async fn measure_http(targets: &[Target], length: Duration, rounds: usize) -> Vec<Figures> {
    let mut rates = vec![Vec::new(); targets.len()];
    let mut saturated = vec![Vec::new(); targets.len()];
    let mut steadied = vec![Vec::new(); targets.len()];
    for _ in 0..rounds {
        for (index, target) in targets.iter().enumerate() {
            let (rate, times) = saturate(target, length).await;
            rates[index].push(rate);
            saturated[index].extend(times);
        }
    }
    for _ in 0..rounds {
        for (index, target) in targets.iter().enumerate() {
            steadied[index].extend(steady(target, length).await);
        }
    }
    targets
        .iter()
        .zip(rates.iter_mut().zip(saturated.into_iter().zip(steadied)))
        .map(|(target, (rates, (saturated, steady)))| Figures {
            label: target.label,
            rate: median(rates),
            saturated,
            steady,
        })
        .collect()
}

/// `rounds` rounds of one client calling `targets` back to back for `length` each, alternating.
pub async fn measure_stdio(
    targets: &[Target],
    length: Duration,
    rounds: usize,
) -> Vec<Vec<Duration>> {
    let mut times = vec![Vec::new(); targets.len()];
    for _ in 0..rounds {
        for (index, target) in targets.iter().enumerate() {
            let peer = target.clients[0].peer().clone();
            let warm_until = Instant::now() + length / 10;
            while Instant::now() < warm_until {
                call(&peer, target.tool).await;
            }
            while Instant::now() < warm_until + length {
                times[index].push(call(&peer, target.tool).await);
            }
        }
    }
    times
}

pub async fn stdio_target(label: &'static str, command: tokio::process::Command) -> Target {
    let client =
        ().serve(TokioChildProcess::new(command).expect("spawn"))
            .await
            .expect("handshake");
    Target {
        label,
        tool: "echo",
        clients: vec![client],
    }
}
