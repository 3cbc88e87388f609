//! The upstream every path calls: `echo`, answering at once, over stdio or Streamable HTTP, in
//! a process of its own.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;

#[derive(Clone)]
pub struct Echo;

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
