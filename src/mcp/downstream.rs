//! The client request a handler runs for, as far as a forwarding handler needs it: where to send
//! progress and log messages, whether the client cancelled, and how to put an upstream's sampling
//! or elicitation request to the client — gated as a call for the request's caller. Set by
//! [`McpServer`](super::McpServer) around each `tools/call` (a task-local: the controller runs
//! the handler on the calling task).

use std::future::Future;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext, RoleServer};
use tokio_util::sync::CancellationToken;

/// How many sessions' log levels a server keeps.
pub(super) const MAX_LOG_LEVELS: usize = 10_000;

tokio::task_local! {
    static CURRENT: Downstream;
}

/// The client's `tools/call` a handler is running for: its progress token, if it asked for
/// progress, its cancellation, its caller, and the session to notify.
#[derive(Clone, Debug)]
pub struct Downstream {
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    cancelled: CancellationToken,
    caller: super::Caller,
    askable: super::approval::Askable,
    server: super::McpServer,
}

impl Downstream {
    /// The request a handler on this task runs for, inside [`McpServer`](super::McpServer)'s
    /// `tools/call`; `None` elsewhere (a call handled directly by a controller, say).
    pub fn current() -> Option<Self> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// Whether the client asked for progress notifications (gave a progress token).
    pub fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    /// Sends the client a progress notification for its call, under its own progress token —
    /// nothing when it gave none. A closed session is not an error: the call goes on.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = ProgressNotificationParam::new(token.clone(), progress);
        params.total = total;
        params.message = message;
        let _ = self.peer.notify_progress(params).await;
    }

    /// Sends the client a log message about its call, if it is as severe as the client asked
    /// for with `logging/setLevel`. A closed session is not an error.
    #[expect(
        deprecated,
        reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
    )]
    pub async fn log(&self, message: rmcp::model::LoggingMessageNotificationParam) {
        let asked = self
            .server
            .log_levels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(self.caller.session.as_deref().unwrap_or_default())
            .copied();
        let wanted = match asked {
            Some(least) => message.level as u8 >= least,
            // Without a level, a client on an `initialize` revision gets every message (the
            // server decides, as the protocol lets it); on 2026-07-28, which drops logging,
            // none.
            None => self.peer.peer_info().is_some_and(|client| {
                client.protocol_version.as_str()
                    < rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
            }),
        };
        if wanted {
            let _ = self.peer.notify_logging_message(message).await;
        }
    }

    /// Resolves when the client cancels its call (`notifications/cancelled`) or its session ends.
    pub async fn cancelled(&self) {
        self.cancelled.cancelled().await;
    }

    /// Whether the client has cancelled its call.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }

    /// Puts an upstream's `sampling/createMessage` to this client, as a call of `gate` (a
    /// registry tool made with [`sampling_gate`](super::passthrough::sampling_gate)) for this
    /// request's caller: resolved, decided by the policy, recorded in the audit log with the
    /// caller's principal; the client is asked only when the call is allowed or approved.
    ///
    /// # Errors
    ///
    /// Why the client was not asked or gave no answer, to send back to the upstream.
    #[expect(
        deprecated,
        reason = "sampling is forwarded on the revisions that have it"
    )]
    pub async fn create_message(
        &self,
        gate: &str,
        request: rmcp::model::CreateMessageRequestParams,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.through(gate, &request).await
    }

    /// Puts an upstream's `elicitation/create` to this client, gated as
    /// [`create_message`](Self::create_message) is (`gate` made with
    /// [`elicitation_gate`](super::passthrough::elicitation_gate)).
    ///
    /// # Errors
    ///
    /// Why the client was not asked or gave no answer, to send back to the upstream.
    pub async fn create_elicitation(
        &self,
        gate: &str,
        request: rmcp::model::ElicitRequestParams,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.through(gate, &request).await
    }

    /// Calls `gate` with `request` for this caller, with this request current (the gate's
    /// handler asks the client through it); the answer it got.
    async fn through<R: serde::Serialize, A: serde::de::DeserializeOwned>(
        &self,
        gate: &str,
        request: &R,
    ) -> Result<A, rmcp::ErrorData> {
        let arguments = serde_json::to_value(request)
            .map_err(|_| rmcp::ErrorData::invalid_params("the request cannot be encoded", None))?;
        let answer = CURRENT
            .scope(
                self.clone(),
                self.server.through_gate_for(
                    gate.to_owned(),
                    arguments,
                    &self.caller,
                    &self.peer,
                    self.askable,
                ),
            )
            .await?;
        serde_json::from_value(answer).map_err(|_| {
            rmcp::ErrorData::internal_error(
                "the client's answer is not a valid MCP result; nothing of it was passed on",
                None,
            )
        })
    }

    /// The session this request came in.
    pub(crate) fn peer(&self) -> &Peer<RoleServer> {
        &self.peer
    }

    fn of(
        context: &RequestContext<RoleServer>,
        server: &super::McpServer,
        caller: super::Caller,
    ) -> Self {
        Self {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            cancelled: context.ct.clone(),
            caller,
            askable: super::approval::Askable::of(context),
            server: server.clone(),
        }
    }
}

/// Runs `work` with `context` (served by `server`, for `caller`) as the [`Downstream::current`]
/// request.
pub(crate) async fn within<F: Future>(
    server: &super::McpServer,
    context: &RequestContext<RoleServer>,
    caller: super::Caller,
    work: F,
) -> F::Output {
    CURRENT
        .scope(Downstream::of(context, server, caller), work)
        .await
}
