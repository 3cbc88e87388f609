//! The rmcp-only pass-through proxy the gateway is measured against: the SDK's server for the
//! client, the SDK's client for the upstream, and between them nothing — `tools/list` and
//! `tools/call` forwarded as the SDK's typed values, no lookup, validation, policy, result checks
//! or audit. What a gateway built on rmcp cannot cost less than.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};

#[derive(Clone)]
pub struct Proxy {
    upstream: Peer<RoleClient>,
}

impl Proxy {
    pub fn new(upstream: Peer<RoleClient>) -> Self {
        Self { upstream }
    }
}

fn failed(error: rmcp::ServiceError) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream.list_tools(request).await.map_err(failed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.upstream
            .call_tool(request)
            .await
            .map(Into::into)
            .map_err(failed)
    }
}

/// Serves one client on stdin and stdout, forwarding to the upstream `command` started as a
/// child.
pub async fn stdio(command: &[String]) {
    let mut upstream = tokio::process::Command::new(&command[0]);
    upstream.args(&command[1..]);
    let upstream =
        ().serve(TokioChildProcess::new(upstream).expect("spawn"))
            .await
            .expect("upstream handshake");
    let proxy = Proxy {
        upstream: upstream.peer().clone(),
    };
    let _ = proxy
        .serve(rmcp::transport::stdio())
        .await
        .expect("serve")
        .waiting()
        .await;
}

/// Serves Streamable HTTP at `127.0.0.1:PORT/mcp`, forwarding to the upstream at `url` over one
/// kept-alive client (as the gateway does).
pub async fn http(port: u16, url: &str) {
    let (upstream, peer) = upstream_peer(url).await;
    let service = StreamableHttpService::new(
        move || {
            Ok(Proxy {
                upstream: peer.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_json_response(true),
    );
    serve_router(port, axum::Router::new().nest_service("/mcp", service)).await;
    drop(upstream);
}

/// An rmcp client of the upstream at `url` over one kept-alive HTTP client, and its peer.
pub async fn upstream_peer(url: &str) -> (RunningService<RoleClient, ()>, Peer<RoleClient>) {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .expect("client");
    let upstream =
        ().serve(StreamableHttpClientTransport::with_client(client, config))
            .await
            .expect("upstream handshake");
    let peer = upstream.peer().clone();
    (upstream, peer)
}

/// Serves `router` on `127.0.0.1:PORT` with `TCP_NODELAY`, until killed.
pub async fn serve_router(port: u16, router: axum::Router) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind");
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        let _ = stream.set_nodelay(true);
    });
    let _ = axum::serve(listener, router).await;
}
