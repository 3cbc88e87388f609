//! The gateway as an MCP client of one upstream: it names itself, and hears the upstream say its
//! tool list changed.

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::watch;

/// The client handler for one upstream session.
pub struct GatewayClient {
    upstream: String,
    list_changed: watch::Sender<u64>,
}

impl GatewayClient {
    pub fn new(upstream: String, list_changed: watch::Sender<u64>) -> Self {
        Self {
            upstream,
            list_changed,
        }
    }
}

impl ClientHandler for GatewayClient {
    fn get_info(&self) -> ClientConfig {
        // No elicitation, sampling or roots: the gateway forwards none of them (an upstream
        // asking for one gets the SDK's method-not-found).
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate-mcp-gateway", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(upstream = %self.upstream, "the upstream says its tool list changed");
        self.list_changed.send_modify(|count| *count += 1);
    }
}
