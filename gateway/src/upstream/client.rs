//! The gateway as an MCP client of one upstream: it names itself, hears the upstream say its
//! lists changed, and passes what it sends about a call (progress, log messages) on to the client
//! whose call it is, and resource updates to the clients subscribed.

use rmcp::ClientHandler;
use rmcp::ErrorData;
#[expect(
    deprecated,
    reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ErrorCode, Implementation,
    ProgressNotificationParam, ResourceUpdatedNotificationParam,
};
#[expect(
    deprecated,
    reason = "sampling and roots are refused, on the revisions that have them"
)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ListRootsResult};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::watch;

/// What an upstream's sessions tell the rest of the gateway: its tool list changed (the
/// refresher relists and judges it), its resource or prompt list changed (clients are told).
#[derive(Clone, Debug)]
pub struct Signals {
    tools: watch::Sender<u64>,
    listings: watch::Sender<u64>,
}

impl Signals {
    /// The signals, and the receivers counting tool and listing changes.
    pub fn new() -> (Self, watch::Receiver<u64>, watch::Receiver<u64>) {
        let (tools, tool_changes) = watch::channel(0);
        let (listings, listing_changes) = watch::channel(0);
        (Self { tools, listings }, tool_changes, listing_changes)
    }

    /// A new session: every list may have changed.
    pub fn restarted(&self) {
        self.tools.send_modify(|count| *count += 1);
        self.listings.send_modify(|count| *count += 1);
    }
}

/// The client handler for one upstream session.
pub struct GatewayClient {
    upstream: String,
    signals: Signals,
    forwarded: crate::config::Forwarded,
    /// This session's waiting calls, by the progress token each was sent with.
    pub progress: super::progress::ProgressRoutes,
    /// The clients subscribed to this session's resources.
    pub subscribers: super::subscriptions::Subscribers,
}

impl GatewayClient {
    pub fn new(
        upstream: String,
        signals: Signals,
        forwarded: crate::config::Forwarded,
        progress: super::progress::ProgressRoutes,
    ) -> Self {
        Self {
            upstream,
            signals,
            forwarded,
            progress,
            subscribers: super::subscriptions::Subscribers::default(),
        }
    }
}

impl GatewayClient {
    /// The refusal of a request the gateway does not pass on to its clients, and the operator's
    /// log line saying which upstream asked.
    fn not_forwarded(&self, method: &str, key: &str) -> ErrorData {
        tracing::info!(upstream = %self.upstream, method, "refused an upstream's request the config does not forward to clients");
        ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "{method} is not forwarded: this gateway's config does not pass upstream `{}`'s {method} requests to its clients (upstreams.{}.forward = [\"{key}\"] would); nobody was asked",
                self.upstream, self.upstream
            ),
            None,
        )
    }

    /// The client whose request an upstream's request came during: the one request waiting on
    /// this session when it arrived (decided by the transport as it arrived); none when none or
    /// several waited (it could be another client's), or that request is nobody's, and the
    /// request is refused.
    async fn asking_client(
        &self,
        method: &str,
        context: &RequestContext<RoleClient>,
    ) -> Result<toolgate::mcp::Downstream, ErrorData> {
        let during = context.extensions.get::<super::ordered::AskedDuring>();
        let client = match during {
            Some(during) => self.progress.client_of(&during.0).await,
            None => None,
        };
        // Not when another principal's call waited lately: it may be about that call.
        let client = client.filter(|client| self.progress.alone_with(client));
        client.ok_or_else(|| {
            tracing::info!(upstream = %self.upstream, method, "refused an upstream's request no single waiting call can own");
            ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "{method} refused: the gateway passes it only to the client of the one request waiting on this upstream when it arrived, when no other principal's request waited in the last {} s, and that did not hold; nobody was asked", super::progress::LATELY.as_secs()
                ),
                None,
            )
        })
    }
}

impl ClientHandler for GatewayClient {
    fn get_info(&self) -> ClientConfig {
        // Sampling and elicitation only where the config forwards them; never roots (an upstream
        // asking for what is not forwarded is refused, saying so).
        let mut capabilities = ClientCapabilities::default();
        if self.forwarded.sampling.is_some() {
            capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        if self.forwarded.elicitation.is_some() {
            capabilities.elicitation = Some(
                rmcp::model::ElicitationCapability::new()
                    .with_form(rmcp::model::FormElicitationCapability::new()),
            );
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("toolgate-mcp-gateway", env!("CARGO_PKG_VERSION")),
        )
    }

    #[expect(
        deprecated,
        reason = "sampling is refused, on the revisions that have it"
    )]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let method = "sampling/createMessage";
        let Some(gate) = &self.forwarded.sampling else {
            return Err(self.not_forwarded(method, "sampling"));
        };
        self.asking_client(method, &context)
            .await?
            .create_message(gate, params)
            .await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let method = "elicitation/create";
        let Some(gate) = &self.forwarded.elicitation else {
            return Err(self.not_forwarded(method, "elicitation"));
        };
        self.asking_client(method, &context)
            .await?
            .create_elicitation(gate, request)
            .await
    }

    #[expect(
        deprecated,
        reason = "roots are refused, on the revisions that have them"
    )]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        tracing::info!(upstream = %self.upstream, "refused an upstream's roots/list");
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "roots/list is not forwarded: toolgate-mcp-gateway never passes an upstream's roots/list to its clients; nobody was asked",
            None,
        ))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let sequence = context
            .extensions
            .get::<super::ordered::ProgressSequence>()
            .map(|sequence| sequence.0);
        self.progress.forward(params, sequence).await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(upstream = %self.upstream, "the upstream says its tool list changed");
        self.signals.tools.send_modify(|count| *count += 1);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(upstream = %self.upstream, "the upstream says its resource list changed");
        self.signals.listings.send_modify(|count| *count += 1);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(upstream = %self.upstream, "the upstream says its prompt list changed");
        self.signals.listings.send_modify(|count| *count += 1);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.subscribers.updated(params).await;
    }

    /// A log message names no call: it goes to the client of the one call waiting on this
    /// session when it arrived, and to nobody when none or several waited (it could be another
    /// client's).
    #[expect(
        deprecated,
        reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
    )]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let owner = context
            .extensions
            .get::<super::ordered::LogOwner>()
            .map(|owner| (owner.0.clone(), owner.1));
        if owner.is_none() {
            tracing::debug!(upstream = %self.upstream, "dropped an upstream log message no single waiting call can own");
        }
        self.progress.log(params, owner).await;
    }
}
