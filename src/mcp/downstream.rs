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
    /// The tool the request calls, or the gate a resource read or a prompt goes through once it
    /// is known (`None` before): what the upstream sends before the result is judged as that
    /// tool's result is.
    tool: Option<std::sync::Arc<str>>,
}

impl Downstream {
    /// The request a handler on this task runs for, inside [`McpServer`](super::McpServer)'s
    /// `tools/call`; `None` elsewhere (a call handled directly by a controller, say).
    pub fn current() -> Option<Self> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// Who made the request: its caller's principal (`None` over stdio or an unauthenticated
    /// transport).
    pub fn principal(&self) -> Option<&crate::Principal> {
        self.caller.principal.as_deref()
    }

    /// Whether the client asked for progress notifications (gave a progress token).
    pub fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    /// Sends the client a progress notification for its call, under its own progress token —
    /// nothing when it gave none. A closed session is not an error: the call goes on. Its
    /// message is judged as the tool's result is
    /// ([`ToolController::judge_interim`](crate::ToolController::judge_interim)): sent redacted
    /// where a result rule redacts, and left out where one withholds it.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        // Its numbers too, when whole and long enough to be a card or an account (a third
        // attack sent a card number as the progress): a notification a rule would change is not
        // sent, as a number cannot be redacted.
        let numbers: Vec<String> = [Some(progress), total]
            .into_iter()
            .flatten()
            .filter(|number| number.fract() == 0.0 && number.abs() >= 1e6)
            .map(|number| format!("{number:.0}"))
            .collect();
        if !numbers.is_empty() {
            let numbers = numbers.join(" ");
            if self.judged(&numbers).as_deref() != Some(numbers.as_str()) {
                return;
            }
        }
        let mut params = ProgressNotificationParam::new(token.clone(), progress);
        params.total = total;
        params.message = message.and_then(|message| self.judged(&message));
        let _ = self.peer.notify_progress(params).await;
    }

    /// Sends the client a log message about its call, if it is as severe as the client asked
    /// for with `logging/setLevel`. A closed session is not an error. Its data is judged as the
    /// tool's result is ([`ToolController::judge_interim`](crate::ToolController::judge_interim)):
    /// a string as text, other data leaf by leaf as structured content; sent as it came where no
    /// rule matched, redacted where one redacts, and not at all where one withholds it; its
    /// logger's name likewise, and its `_meta` left out where a rule would change it.
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
        if !wanted {
            return;
        }
        let mut message = message;
        message.data = match &message.data {
            serde_json::Value::String(text) => match self.judged(text) {
                Some(judged) => serde_json::Value::String(judged),
                None => return,
            },
            data => match self.judged_value(data) {
                Some(judged) => judged,
                None => return,
            },
        };
        // The logger's name and the message's `_meta` reach the client too: judged the same way
        // (a `_meta` a rule would change is left out: it cannot be rewritten safely).
        if let Some(logger) = &message.logger {
            let Some(judged) = self.judged(logger) else {
                return;
            };
            message.logger = Some(judged);
        }
        if let Some(meta) = &message.meta {
            let value = serde_json::to_value(meta).unwrap_or_default();
            if self.judged_value(&value).as_ref() != Some(&value) {
                message.meta = None;
            }
        }
        let _ = self.peer.notify_logging_message(message).await;
    }

    /// `text` the upstream sends toward the client's model during this request, judged by the
    /// controller as the called tool's result is ([`ToolController::judge_interim`]): the policy's
    /// result rules and provenance. `None` where a rule withholds it; and before the request
    /// names its tool or gate (nothing is then sent upstream, so nothing should come back).
    ///
    /// [`ToolController::judge_interim`]: crate::ToolController::judge_interim
    fn judged(&self, text: &str) -> Option<String> {
        let tool = self.tool.as_deref()?;
        let principal = self.caller.principal.as_deref();
        self.server.controller.judge_interim(tool, principal, text)
    }

    /// [`judged`](Self::judged) of JSON, leaf by leaf ([`ToolController::judge_interim_value`]).
    ///
    /// [`ToolController::judge_interim_value`]: crate::ToolController::judge_interim_value
    fn judged_value(&self, value: &serde_json::Value) -> Option<serde_json::Value> {
        let tool = self.tool.as_deref()?;
        let principal = self.caller.principal.as_deref();
        self.server
            .controller
            .judge_interim_value(tool, principal, value)
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
        // What it puts to the client's model is judged as the called tool's result is: a secret
        // a result rule withholds or redacts is not put to the model (a request cannot be
        // rewritten safely, so either refuses it), and its values are recorded for provenance.
        if self.judged_value(&arguments).as_ref() != Some(&arguments) {
            return Err(rmcp::ErrorData::invalid_request(
                "refused: a result rule matched what the request would put to the client; nobody was asked",
                None,
            ));
        }
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
        tool: Option<&str>,
    ) -> Self {
        Self {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            cancelled: context.ct.clone(),
            caller,
            askable: super::approval::Askable::of(context),
            server: server.clone(),
            tool: tool.map(std::sync::Arc::from),
        }
    }
}

/// Runs `work` with the [`Downstream::current`] request, if any, calling `tool` (a gate
/// reading a resource or getting a prompt, once it is known).
pub(crate) async fn as_tool<F: Future>(tool: &str, work: F) -> F::Output {
    match Downstream::current() {
        Some(current) => {
            let current = Downstream {
                tool: Some(std::sync::Arc::from(tool)),
                ..current
            };
            CURRENT.scope(current, work).await
        }
        None => work.await,
    }
}

/// Runs `work` with `context` (served by `server`, for `caller`, calling `tool` if a tool) as
/// the [`Downstream::current`] request.
pub(crate) async fn within<F: Future>(
    server: &super::McpServer,
    context: &RequestContext<RoleServer>,
    caller: super::Caller,
    tool: Option<&str>,
    work: F,
) -> F::Output {
    CURRENT
        .scope(Downstream::of(context, server, caller, tool), work)
        .await
}
