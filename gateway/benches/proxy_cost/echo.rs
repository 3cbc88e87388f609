//! The upstream in a process of its own: the `echo` server the overhead bench calls
//! (`../gateway_overhead/echo.rs`), served over stdio or Streamable HTTP.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::shared_echo::Echo;

/// Serves `Echo` on stdin and stdout until the client leaves.
pub async fn serve_stdio() {
    use rmcp::ServiceExt as _;
    let _ = Echo
        .serve(rmcp::transport::stdio())
        .await
        .expect("serve")
        .waiting()
        .await;
}

/// Serves `Echo` over Streamable HTTP at `127.0.0.1:PORT/mcp` until killed.
pub async fn serve_http(port: u16) {
    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_json_response(true),
    );
    crate::proxy::serve_router(port, axum::Router::new().nest_service("/mcp", service)).await;
}
