//! A [`ToolController`] served as an MCP server through the SDK's `ServerHandler`.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServiceExt as _};
use serde_json::Value;

use super::McpError;
use super::approval::{self, Answer, StateSeal};
use super::call_ids::CallIds;
use super::wire;
use crate::approvals::{ApprovalId, ApprovalRequest, ApprovalResponse};
use crate::contract::{Principal, ToolCall, ToolResult};
use crate::controller::{Outcome, ToolController};

/// How often a connection looks whether the registry or policy was replaced.
const DEFAULT_CHANGE_POLL: Duration = Duration::from_millis(250);

/// How long a 2025-11-25 elicitation may wait for the person before the call is left pending
/// out of band.
pub(super) const ELICITATION_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// A [`ToolController`] as an MCP server: `tools/list` shows the controller's current tools less
/// those its policy denies whatever their arguments; `tools/call` goes through
/// [`ToolController::handle_async`].
///
/// # Guarantees
///
/// - A `tools/call` runs a handler only through the controller: resolved, validated, allowed or
///   approved once (G1–G6). Unknown, invalid and denied calls are error results, never protocol
///   successes, and run nothing.
/// - A hidden tool is hidden only from the list; calling it is still decided by the policy.
/// - When the policy asks: on 2026-07-28 the answer is an `input_required` result with an
///   elicitation showing the tool, the reason and the arguments, and a `requestState` sealed with
///   a key only this server holds, bound to the tool and its canonical arguments. The client's
///   retry with the person's answer resolves the approval: accept → re-checked, run once; decline
///   or cancel → rejected. A replayed state finds the approval answered; an altered, foreign,
///   expired or re-targeted one does not open — both are refused and run nothing. On earlier
///   revisions a client that declared form elicitation is asked in the same request. A client
///   that can do neither gets an error result naming the approval id; the call waits in the
///   controller's approval store to be answered out of band.
/// - The list-changed notification is sent when the controller's
///   [`generation`](ToolController::generation) moves (checked every 250 ms): after
///   `initialize`, to the session; on 2026-07-28, on `subscriptions/listen` streams that asked.
///
/// # Examples
///
/// ```no_run
/// # async fn run(controller: toolgate::ToolController) -> Result<(), toolgate::mcp::McpError> {
/// use std::sync::Arc;
/// toolgate::mcp::McpServer::new(Arc::new(controller))?.serve_stdio().await
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    pub(super) controller: Arc<ToolController>,
    seal: Arc<StateSeal>,
    /// Name and version; shared, as every request's [`Downstream`](super::Downstream) clones the
    /// server.
    pub(super) implementation: Arc<(String, String)>,
    pub(super) change_poll: Duration,
    caller_of: Option<super::CallerOf>,
    pub(super) approvals_at: Option<Arc<str>>,
    /// The connection [`serve_io`](Self::serve_io) serves: what binds a request state when the
    /// caller names no session.
    connection: Option<Arc<str>>,
    pub(super) call_ids: Arc<CallIds>,
    /// Resources, prompts, completions and logging, when something serves them.
    pub(super) passthrough: Option<Arc<dyn super::Passthrough>>,
    /// The least severe log level each session asked for (`logging/setLevel`), by session.
    pub(super) log_levels: Arc<std::sync::Mutex<std::collections::HashMap<String, u8>>>,
    /// Makes the span each `tools/call` runs in, when tracing is asked for.
    #[cfg(feature = "tracing")]
    pub(super) call_span: Option<super::CallSpan>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("controller", &self.controller)
            .field("implementation", &self.implementation)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server over `controller`, with a fresh key for sealing request states.
    ///
    /// # Errors
    ///
    /// [`McpError::Randomness`] if the OS gives no randomness for the key.
    pub fn new(controller: Arc<ToolController>) -> Result<Self, McpError> {
        Ok(Self {
            controller,
            seal: Arc::new(StateSeal::random().map_err(McpError::Randomness)?),
            implementation: Arc::new(("toolgate".to_owned(), env!("CARGO_PKG_VERSION").to_owned())),
            change_poll: DEFAULT_CHANGE_POLL,
            caller_of: None,
            approvals_at: None,
            connection: None,
            call_ids: Arc::new(CallIds::random().map_err(McpError::Randomness)?),
            passthrough: None,
            log_levels: Arc::default(),
            #[cfg(feature = "tracing")]
            call_span: None,
        })
    }

    /// The same server, reading each request's caller with `caller_of`: every call is made for
    /// its principal (judged by rules that name principals, recorded in every audit event), and
    /// a request state sealed for one principal or session opens for no other.
    #[must_use]
    pub fn with_caller(mut self, caller_of: super::CallerOf) -> Self {
        self.caller_of = Some(caller_of);
        self
    }

    /// The same server, telling people where waiting calls are answered (an approval page's
    /// address, a command): a question that must cut long arguments says to read them whole
    /// there, and a call held for a client that cannot be asked names it.
    #[must_use]
    pub fn with_approvals_at(mut self, place: impl Into<String>) -> Self {
        self.approvals_at = Some(Arc::from(place.into()));
        self
    }

    /// The same server, serving what `passthrough` serves beyond tools (resources, prompts,
    /// completions, logging); reading a resource and getting a prompt are gated as calls of the
    /// registry tools it names (see [`Passthrough`](super::Passthrough)).
    #[must_use]
    pub fn with_passthrough(mut self, passthrough: Arc<dyn super::Passthrough>) -> Self {
        self.passthrough = Some(passthrough);
        self
    }

    /// The caller of a request; a caller that names no session is taken to be in this server's
    /// connection when it serves one.
    pub(super) fn caller(&self, context: &RequestContext<RoleServer>) -> super::Caller {
        let mut caller: super::Caller = self
            .caller_of
            .as_ref()
            .map(|caller_of| caller_of(&context.extensions))
            .unwrap_or_default();
        if caller.session.is_none() {
            caller.session = self
                .connection
                .as_deref()
                .map(|connection| format!("connection {connection}"));
        }
        caller
    }

    /// The same server, sealing request states with `key` instead of its own random one, so that
    /// every server given the same key opens the states the others issued (instances behind one
    /// load balancer, sharing a PostgreSQL approval store). Keep the key as secret as the store.
    ///
    /// # Errors
    ///
    /// [`McpError::StateKey`] if `key` is shorter than 32 bytes.
    pub fn with_state_key(self, key: &[u8]) -> Result<Self, McpError> {
        self.with_state_keys(&[key])
    }

    /// The same server, sealing request states with the first of `keys` and opening states
    /// sealed with any of them: to rotate, put a new key first and keep the old one until the
    /// states it sealed have expired (15 minutes), then drop it. A state sealed with a key no
    /// longer listed opens nothing.
    ///
    /// # Errors
    ///
    /// [`McpError::StateKey`] if `keys` is empty or one is shorter than 32 bytes.
    pub fn with_state_keys<K: AsRef<[u8]>>(mut self, keys: &[K]) -> Result<Self, McpError> {
        self.seal = Arc::new(StateSeal::with_keys(keys).ok_or(McpError::StateKey)?);
        Ok(self)
    }

    /// The same server, naming itself `name` `version` to clients.
    #[must_use]
    pub fn with_implementation(
        mut self,
        name: impl Into<String>,
        version: impl Into<String>,
    ) -> Self {
        self.implementation = Arc::new((name.into(), version.into()));
        self
    }

    /// The controller it serves.
    pub fn controller(&self) -> &Arc<ToolController> {
        &self.controller
    }

    /// Serves one client over this process's stdin and stdout until it disconnects, as
    /// [`serve_io`](Self::serve_io) does. On Unix, a pipe (how an MCP client starts a server) is
    /// read and written by the runtime's event loop and made non-blocking; a terminal or a file is
    /// read through tokio's blocking stdio.
    ///
    /// A process has one standard input, so its one client is the one that started it: a request
    /// state issued here opens on any server over stdio sealing with the same key — the same
    /// server restarted, with a key kept in a file, answers a call held before the restart — and
    /// on no connection [`serve_io`](Self::serve_io) serves.
    ///
    /// # Errors
    ///
    /// [`McpError::Serve`] if the session could not start, [`McpError::Stopped`] if it ended
    /// abnormally.
    pub async fn serve_stdio(mut self) -> Result<(), McpError> {
        let (input, output) = super::stdio::stdio();
        self.connection = Some(Arc::from("stdio"));
        self.serve_connection(input, output).await
    }

    /// Serves one client over a byte stream of newline-delimited JSON-RPC messages (the stdio
    /// transport's framing) until it disconnects. Before the SDK parses a message, a
    /// `tools/call` holding a duplicate key in any object is marked, and answered with an error
    /// result that runs nothing: parsers disagree on which of two values wins, so no value of
    /// such a call is judged. Each call of `serve_io` is its own connection: a request state
    /// issued on one opens on no other.
    ///
    /// This (and [`serve_stdio`](Self::serve_stdio)) is the way to serve a stream. Serving
    /// through `rmcp`'s own `serve` skips both checks — the SDK keeps the last of two keys, and
    /// the server cannot tell its connections apart —, so there it issues no request state to a
    /// caller that names neither principal nor session (the call waits out of band); an HTTP
    /// server must read callers with [`with_caller`](Self::with_caller) and run
    /// [`check_duplicate_keys`](super::check_duplicate_keys) on each body, as the gateway does.
    ///
    /// # Errors
    ///
    /// [`McpError::Serve`] if the session could not start, [`McpError::Stopped`] if it ended
    /// abnormally.
    pub async fn serve_io<R, W>(mut self, input: R, output: W) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let connection = crate::random::bytes16().map_err(McpError::Randomness)?;
        self.connection = Some(
            connection
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect::<String>()
                .into(),
        );
        self.serve_connection(input, output).await
    }

    /// Serves the connection this server was given, with duplicate keys refused.
    async fn serve_connection<R, W>(self, input: R, output: W) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .serve((super::strict_input::strict_input(input), output))
            .await
            .map_err(|error| McpError::Serve(Box::new(error)))?;
        running
            .waiting()
            .await
            .map(drop)
            .map_err(|error| McpError::Stopped(Box::new(error)))
    }

    /// Asks the person in the way the client supports, or leaves the call pending.
    async fn ask(
        &self,
        request: ApprovalRequest,
        context: &RequestContext<RoleServer>,
        caller: &super::Caller,
    ) -> CallToolResponse {
        let approval::Askable { modern, form } = approval::Askable::of(context);
        // A state binds to the caller's principal or session; one that names neither could be
        // replayed by anyone, so the call waits out of band instead.
        let bindable = caller.principal.is_some() || caller.session.is_some();
        if form && modern && bindable {
            return self
                .seal
                .input_required(
                    &request,
                    caller.session.as_deref(),
                    self.approvals_at.as_deref(),
                )
                .into();
        }
        if form && !modern {
            let asked = context
                .peer
                .create_elicitation_with_timeout(
                    approval::question(&request, self.approvals_at.as_deref()),
                    Some(ELICITATION_TIMEOUT),
                )
                .await;
            // No answer (timeout, transport) leaves the request pending, as for a client that
            // cannot be asked.
            if let Ok(answer) = asked {
                return self
                    .settle(request.approval_id, Answer::of(&answer.action), caller)
                    .await
                    .into();
            }
        }
        let id = request.approval_id.to_string();
        let mut at = self
            .approvals_at
            .as_deref()
            .map(|place| format!(" ({place})"))
            .unwrap_or_default();
        if form && modern && !bindable {
            at.push_str(
                " — this server cannot tell its callers apart, so it issues no request state",
            );
        }
        wire::not_run(
            format!(
                "pending approval: {reason}. The call did not run; approval {id} waits for a person to answer it out of band{at}.",
                reason = request.reason,
            ),
            Some(id),
        )
        .into()
    }

    /// `tools/call`: a retry carrying a request state answers its approval; any other call is
    /// handled by the controller, and held for a person when a rule asks.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        caller: super::Caller,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        if arguments
            .get(super::strict_input::DUPLICATE_KEYS_MARKER)
            .is_some()
        {
            return Ok(wire::call_result(ToolResult::error(
                self.call_ids.next(),
                super::strict_input::DUPLICATE_KEYS_REFUSAL,
            ))
            .into());
        }
        if super::passthrough::is_gate(&request.name) {
            return Ok(wire::not_run(
                "refused: this name is not a tool but the gate of resources/read or prompts/get, which a client calls by those methods; nothing ran".to_owned(),
                None,
            )
            .into());
        }
        if let Some(state) = request.request_state.as_deref() {
            let responses = request.input_responses.as_ref();
            return Ok(self
                .retry(state, &request.name, &arguments, responses, &caller)
                .await
                .into());
        }
        // What the person asked counts before the call it came with is decided.
        // The SDK moves a request's `_meta` into its context (a typed client may leave it in
        // the parameters): both are read.
        if let Err(refusal) = super::person::record(
            &self.controller,
            [request.meta.as_ref(), Some(&context.meta)],
            caller.principal.as_deref(),
        ) {
            return Ok(wire::not_run(refusal, None).into());
        }
        // A tool left out of this caller's list answers as a tool that does not exist: neither
        // its denial nor what its schema says of bad arguments tells the caller it is there. It
        // is still decided and audited as any call (the log says what happened).
        let hidden = !self
            .controller
            .listed_specs_for(caller.principal.as_deref())
            .iter()
            .any(|spec| spec.name == request.name);
        let unknown = hidden.then(|| crate::contract::quote_bounded(&request.name));
        // The audit log names each call by an id unique to this server, not the client's.
        let mut call = ToolCall::new(self.call_ids.next(), request.name, arguments);
        call.principal.clone_from(&caller.principal);
        Ok(match self.controller.handle_async(call).await {
            Outcome::Completed(result) => match unknown {
                Some(tool) if result.is_error => wire::call_result(
                    crate::runtime::Rejection::UnknownTool {
                        call_id: result.call_id,
                        tool,
                    }
                    .into_result(),
                )
                .into(),
                _ => wire::call_result(result).into(),
            },
            Outcome::PendingApproval(request) => self.ask(request, context, &caller).await,
        })
    }

    /// A 2026-07-28 retry: opens the state, reads the answer, resolves the approval.
    async fn retry(
        &self,
        state: &str,
        tool: &str,
        arguments: &Value,
        responses: Option<&InputResponses>,
        caller: &super::Caller,
    ) -> CallToolResult {
        let Some(approval_id) = self.seal.open(state, tool, arguments, caller) else {
            return wire::not_run(
                "refused: the request state was not issued by this server for this call (altered, foreign, for another tool, arguments, caller or session, or expired); nothing ran".to_owned(),
                None,
            );
        };
        let Some(answer) = approval::answer_in(responses) else {
            return wire::not_run(
                "refused: the retry carries no answer to the approval question; nothing ran"
                    .to_owned(),
                Some(approval_id.to_string()),
            );
        };
        self.settle(approval_id, answer, caller).await
    }

    /// Answers the approval as the person at this client (the caller's principal, when one was
    /// authenticated, is recorded as the approver).
    pub(super) async fn settle(
        &self,
        approval_id: ApprovalId,
        answer: Answer,
        caller: &super::Caller,
    ) -> CallToolResult {
        match self.resolve(approval_id, answer, caller).await {
            Ok(result) => wire::call_result(result),
            Err(why) => wire::not_run(why, None),
        }
    }

    /// The approval answered as the person at this client: the call's result once re-checked
    /// and run, or why nothing ran.
    pub(super) async fn resolve(
        &self,
        approval_id: ApprovalId,
        answer: Answer,
        caller: &super::Caller,
    ) -> Result<ToolResult, String> {
        let mut response = match answer {
            Answer::Approve => ApprovalResponse::approve(approval_id),
            Answer::Reject => ApprovalResponse::reject(approval_id),
        };
        if let Some(principal) = &caller.principal {
            response = response.by_principal(Principal::clone(principal));
        }
        self.controller
            .resolve_async(response)
            .await
            .map_err(|error| format!("refused: {error}; nothing ran"))
    }

    /// Waits for the next change of the controller's generation after `seen`.
    pub(super) async fn next_change(&self, seen: &mut u64) {
        loop {
            tokio::time::sleep(self.change_poll).await;
            let now = self.controller.generation();
            if now != *seen {
                *seen = now;
                return;
            }
        }
    }
}
