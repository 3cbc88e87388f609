//! One authorized call sent to its upstream: the progress the upstream reports goes to the
//! client whose call it is, a client's cancellation reaches the upstream, and each failure says
//! whether the call can have run.

use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use toolgate::ToolError;
use toolgate::mcp::{CallFailure, Downstream, TRACE_PARENT_META};

use crate::upstream::Link;

/// Sends one authorized call upstream and waits for its result, within `timeout`.
pub async fn forward(
    link: &Link,
    name: String,
    arguments: Value,
    timeout: Duration,
) -> Result<CallToolResult, ToolError> {
    let upstream = link.name();
    if link.is_withheld(&name) {
        return Err(ToolError::new(format!(
            "upstream `{upstream}` changed this tool's definition (or stopped listing it) since it was pinned, and the policy in force names it: it is held back until the upstream lists it as pinned, the change is accepted with `toolgate-mcp-gateway pin`, or a policy that fits is loaded; the call was not sent, nothing ran"
        )));
    }
    let session = link.session().map_err(|why| {
        ToolError::new(format!(
            "upstream `{upstream}` is unavailable ({why}); the call was not sent, nothing ran"
        ))
    })?;
    if !link.is_verified() {
        return Err(ToolError::new(format!(
            "upstream `{upstream}` is unavailable (it was started again and its tools are being checked against their pins); the call was not sent, nothing ran"
        )));
    }
    let Value::Object(arguments) = arguments else {
        return Err(ToolError::new(
            "arguments must be a JSON object; the call was not sent, nothing ran",
        ));
    };
    let span = crate::traces::upstream_span(upstream, &name);
    let mut params = CallToolRequestParams::new(name).with_arguments(arguments);
    // The upstream continues the trace where the gateway is tracing (see `traces`).
    if let Some(traceparent) = crate::traces::traceparent_of(&span) {
        let mut meta = RequestMetaObject::default();
        meta.0
            .0
            .insert(TRACE_PARENT_META.to_owned(), Value::String(traceparent));
        params.meta = Some(meta);
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let exchanged =
        tracing::Instrument::instrument(exchange(&session, upstream, request, timeout), span);
    match exchanged.await? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(failed(upstream, CallFailure::Unreadable)),
    }
}

/// Sends `request` on `session` (of upstream `upstream`) for the client request this task runs
/// for, and waits for the answer within `timeout`. While it waits, the call counts as waiting on
/// the session (what the upstream sends that names no call — a log message, a sampling
/// request — can be its), its progress goes to the client, and a request given up on (the
/// client cancelled, the bound passed, the gateway dropped it) is cancelled upstream; the answer
/// is given after the progress that came before it.
pub async fn exchange(
    session: &crate::upstream::Session,
    upstream: &str,
    request: ClientRequest,
    timeout: Duration,
) -> Result<ServerResult, ToolError> {
    let handle = match session
        .peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(error) => return Err(failed(upstream, CallFailure::of(error))),
    };
    let route = session.route_progress(handle.progress_token.clone());
    let mut waiting = CancelOnDrop {
        peer: session.peer.clone(),
        id: Some(handle.id.clone()),
    };
    let client = Downstream::current();
    let client_cancelled = async {
        match &client {
            Some(client) => client.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let response = tokio::select! {
        response = tokio::time::timeout(timeout, handle.await_response()) => response,
        () = client_cancelled => {
            return Err(ToolError::new(format!(
                "the client cancelled the call; upstream `{upstream}` was told to stop, and whether the call took effect is unknown"
            )));
        }
    };
    // Past the bound the guard stays armed: the upstream is told to stop.
    let Ok(answer) = response else {
        return Err(ToolError::new(format!(
            "upstream `{upstream}` did not answer within {} ms (limits.call_timeout_ms); whether the call took effect is unknown",
            timeout.as_millis()
        )));
    };
    waiting.id = None;
    // The progress that arrived before the answer goes before it.
    route.settled().await;
    answer.map_err(|error| failed(upstream, CallFailure::of(error)))
}

/// The message for a call that got no result.
pub(crate) fn failed(upstream: &str, failure: CallFailure) -> ToolError {
    ToolError::new(match failure {
        CallFailure::Oversized { detail } => format!(
            "upstream `{upstream}` ran the call, but {} (limits.max_message_bytes)",
            detail.replacen("the upstream's ", "its ", 1)
        ),
        CallFailure::Refused { code, message } => format!(
            "upstream `{upstream}` refused the call (code {code}): {}",
            bounded(&message)
        ),
        CallFailure::Malformed { detail } => format!(
            "upstream `{upstream}` answered the call, but {}; the call may have taken effect",
            detail.replacen("the upstream's ", "its ", 1)
        ),
        CallFailure::Unreadable => format!(
            "upstream `{upstream}` answered the call with a result the gateway cannot read (a content type or field its MCP SDK does not know); the call may have taken effect, and nothing of the answer was passed on"
        ),
        CallFailure::NotSent => format!(
            "upstream `{upstream}` could not be sent the call (its session closed); nothing ran"
        ),
        // A failure the SDK adds later is read as the unknown case, never as "nothing ran".
        _ => format!(
            "upstream `{upstream}` stopped before answering; whether the call took effect is unknown"
        ),
    })
}

/// An upstream's message, cut to 1,000 characters.
fn bounded(message: &str) -> String {
    let mut cut: String = message.chars().take(1000).collect();
    if cut.len() < message.len() {
        cut.push('…');
    }
    cut
}

/// A call the upstream has and nobody waits for any more: told `notifications/cancelled` when
/// dropped with an id (the SDK's own guard does the same for the calls it waits on).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = "the gateway's client cancelled the call, or it waited past its bound";
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(
                    Some(id),
                    Some(reason.to_owned()),
                ))
                .await;
        });
    }
}
