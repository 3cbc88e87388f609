//! The approvals webhook: a POST to a configured URL for every call held for a person, so
//! someone is told it waits. The body names the approval, the tool, why and who asked, the
//! approval page and how to answer it from a shell — and the arguments only when
//! `approvals.webhook_arguments` asks for them.
//!
//! Sending never delays or fails a call: events are queued (at most [`QUEUE`]) and posted by one
//! task, each within [`TIMEOUT`]; a full queue, an unreachable URL or an error status is logged
//! and dropped (the approval still waits in the store and `approvals list` shows it).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate::approvals::ApprovalId;
use toolgate::approvals::ApprovalStore;
use toolgate::audit::{AuditError, AuditEvent, AuditKind, AuditSink};
use toolgate::clock::{Clock as _, SystemClock};

/// Notices waiting to be posted; more are dropped, with a warning.
const QUEUE: usize = 1024;
/// How long one POST may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// An audit sink that passes every event on to `inner` and posts held calls to the webhook.
pub struct NotifyingSink {
    inner: Option<Box<dyn AuditSink>>,
    queue: tokio::sync::mpsc::Sender<serde_json::Value>,
    config_file: String,
    /// The approval page's address, when the gateway serves one.
    page: Option<String>,
}

impl std::fmt::Debug for NotifyingSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyingSink").finish_non_exhaustive()
    }
}

impl NotifyingSink {
    /// Starts the posting task on the current runtime. `token`: sent as `Authorization: Bearer`.
    pub fn start(
        url: String,
        token: Option<String>,
        config_file: String,
        page: Option<String>,
        arguments_from: Option<Arc<dyn ApprovalStore>>,
        inner: Option<Box<dyn AuditSink>>,
    ) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .build()
            .map_err(|error| {
                format!("approvals.webhook_url: cannot build its HTTP client: {error}")
            })?;
        let (queue, mut queued) = tokio::sync::mpsc::channel::<serde_json::Value>(QUEUE);
        tokio::spawn(async move {
            while let Some(mut notice) = queued.recv().await {
                if let Some(store) = &arguments_from {
                    notice["arguments"] = arguments_of(store, &notice).await;
                }
                let mut request = client.post(&url).json(&notice);
                if let Some(token) = &token {
                    request = request.bearer_auth(token);
                }
                match request.send().await {
                    Ok(response) if response.status().is_success() => {}
                    Ok(response) => {
                        tracing::warn!(status = %response.status(), "approvals webhook refused a notice; the approval still waits")
                    }
                    Err(error) => {
                        tracing::warn!(%error, "approvals webhook not reached; the approval still waits")
                    }
                }
            }
        });
        Ok(Self {
            inner,
            queue,
            config_file,
            page,
        })
    }

    fn notice(&self, event: &AuditEvent) -> Option<serde_json::Value> {
        let id = event.approval_id?.to_string();
        Some(json!({
            "event": "approval_waiting",
            "approval_id": id,
            "tool": event.tool,
            "reason": event.reason,
            "principal": event.principal,
            "page": self.page,
            "answer": format!(
                "toolgate-mcp-gateway approvals show {id} --config {}",
                self.config_file
            ),
        }))
    }
}

impl AuditSink for NotifyingSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        if let Some(inner) = &self.inner {
            inner.record(event)?;
        }
        // Only once the event is durable: a call whose hold was not recorded is not held.
        if event.kind == AuditKind::ApprovalRequested
            && let Some(notice) = self.notice(event)
            && self.queue.try_send(notice).is_err()
        {
            tracing::warn!(tool = %event.tool, "approvals webhook queue full; a notice was dropped, the approval still waits");
        }
        Ok(())
    }

    // The controller records approval requests with `record` (a hold depends on them); one that
    // arrives here all the same is made durable before anyone is told of it.
    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        match &self.inner {
            Some(inner) if event.kind != AuditKind::ApprovalRequested => {
                inner.record_deferred(event)
            }
            _ => self.record(event),
        }
    }

    fn sync(&self) -> Result<(), AuditError> {
        self.inner.as_ref().map_or(Ok(()), |inner| inner.sync())
    }
}

/// The held call's arguments, read from the store (off the event loop); `null` if it no longer
/// waits.
async fn arguments_of(
    store: &Arc<dyn ApprovalStore>,
    notice: &serde_json::Value,
) -> serde_json::Value {
    let Some(id) = notice["approval_id"]
        .as_str()
        .and_then(|id| id.parse::<ApprovalId>().ok())
    else {
        return serde_json::Value::Null;
    };
    let store = Arc::clone(store);
    let found = tokio::task::spawn_blocking(move || {
        store
            .pending(SystemClock.now_ms())
            .ok()?
            .into_iter()
            .find(|request| request.approval_id == id)
    })
    .await
    .ok()
    .flatten();
    found.map_or(serde_json::Value::Null, |request| request.call.arguments)
}
