//! A remote upstream: an MCP server reached over Streamable HTTP (the SDK's reqwest client),
//! its replies bounded like a child's, its token read from the environment.

use std::collections::{BTreeMap, HashMap};

use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::client::GatewayClient;
use super::started::{StartError, Started};
use crate::config::{Limits, UpstreamConfig};

/// Connects to `url` and completes the handshake within `limits.startup_timeout`.
pub async fn start(
    upstream: &UpstreamConfig,
    url: &str,
    headers: &BTreeMap<String, String>,
    bearer_token_env: Option<&str>,
    limits: &Limits,
    signals: super::client::Signals,
) -> Result<Started, StartError> {
    let failed = |what: String| StartError {
        name: upstream.name.clone(),
        command: url.to_owned(),
        what,
        tail: None,
    };
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.max_json_response_size = limits.max_message_bytes;
    config.max_sse_event_size = limits.max_message_bytes;
    if let Some(name) = bearer_token_env {
        let token = std::env::var(name).map_err(|_| {
            failed(format!(
                "could not be reached: its bearer token variable {name} is not set"
            ))
        })?;
        config = config.auth_header(token);
    }
    let custom: HashMap<http::HeaderName, http::HeaderValue> = headers
        .iter()
        .filter_map(|(name, value)| {
            Some((
                http::HeaderName::try_from(name.as_str()).ok()?,
                http::HeaderValue::try_from(value.as_str()).ok()?,
            ))
        })
        .collect();
    config = config.custom_headers(custom);
    let client = super::traced_client::TracedClient(pooled_client().map_err(failed)?);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let progress = super::progress::ProgressRoutes::default();
    let transport = super::ordered::Ordered::new(transport, progress.clone());
    let handshake = GatewayClient::new(
        upstream.name.clone(),
        signals,
        upstream.forwarded.clone(),
        progress,
    )
    .serve(transport);
    match tokio::time::timeout(limits.startup_timeout, handshake).await {
        Ok(Ok(service)) => Ok(Started {
            service,
            child: None,
        }),
        Ok(Err(error)) => Err(failed(format!(
            "did not complete the MCP handshake over HTTP: {error}"
        ))),
        Err(_) => Err(failed(format!(
            "did not answer the MCP handshake within {} ms (limits.startup_timeout_ms)",
            limits.startup_timeout.as_millis()
        ))),
    }
}

/// The HTTP client one remote upstream is called through: its connections kept open for the next
/// call (rmcp's default client closes each one, which costs a TCP handshake per call and, at 32
/// concurrent clients, halves the gateway's throughput), and redirects not followed, so a call and
/// its credentials go to the configured URL and nowhere else.
fn pooled_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .pool_idle_timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|error| format!("could not build its HTTP client: {error}"))
}
