//! The gateway as an MCP client of one upstream: it names itself, hears the upstream say its
//! tool list changed, and passes the progress it reports on to the client whose call it is.

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ErrorCode, Implementation,
    ProgressNotificationParam,
};
#[expect(
    deprecated,
    reason = "sampling and roots are refused, on the revisions that have them"
)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ListRootsResult};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::watch;

/// The client handler for one upstream session.
pub struct GatewayClient {
    upstream: String,
    list_changed: watch::Sender<u64>,
    /// This session's waiting calls, by the progress token each was sent with.
    pub progress: super::progress::ProgressRoutes,
}

impl GatewayClient {
    pub fn new(upstream: String, list_changed: watch::Sender<u64>) -> Self {
        Self {
            upstream,
            list_changed,
            progress: super::progress::ProgressRoutes::default(),
        }
    }
}

impl GatewayClient {
    /// The refusal of a request the gateway does not pass on to its clients, and the operator's
    /// log line saying which upstream asked.
    fn not_forwarded(&self, method: &str) -> ErrorData {
        tracing::info!(upstream = %self.upstream, method, "refused an upstream's request the gateway does not forward to its clients");
        ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "{method} is not forwarded: toolgate-mcp-gateway does not pass an upstream's {method} requests to its clients (not supported yet); nobody was asked"
            ),
            None,
        )
    }
}

impl ClientHandler for GatewayClient {
    fn get_info(&self) -> ClientConfig {
        // No elicitation, sampling or roots: the gateway forwards none of them yet (an upstream
        // asking for one is refused, saying so).
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate-mcp-gateway", env!("CARGO_PKG_VERSION")),
        )
    }

    #[expect(
        deprecated,
        reason = "sampling is refused, on the revisions that have it"
    )]
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Err(self.not_forwarded("sampling/createMessage"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Err(self.not_forwarded("elicitation/create"))
    }

    #[expect(
        deprecated,
        reason = "roots are refused, on the revisions that have them"
    )]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Err(self.not_forwarded("roots/list"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.forward(params).await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(upstream = %self.upstream, "the upstream says its tool list changed");
        self.list_changed.send_modify(|count| *count += 1);
    }
}
