//! The client request a handler runs for, as far as a forwarding handler needs it: where to send
//! progress, and whether the client cancelled. Set by [`McpServer`](super::McpServer) around each
//! `tools/call` (a task-local: the controller runs the handler on the calling task).

use std::future::Future;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext, RoleServer};
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    static CURRENT: Downstream;
}

/// The client's `tools/call` a handler is running for: its progress token, if it asked for
/// progress, its cancellation, and the session to notify.
#[derive(Clone, Debug)]
pub struct Downstream {
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    cancelled: CancellationToken,
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

    /// Resolves when the client cancels its call (`notifications/cancelled`) or its session ends.
    pub async fn cancelled(&self) {
        self.cancelled.cancelled().await;
    }

    /// Whether the client has cancelled its call.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }

    fn of(context: &RequestContext<RoleServer>) -> Self {
        Self {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            cancelled: context.ct.clone(),
        }
    }
}

/// Runs `work` with `context` as the [`Downstream::current`] request.
pub(crate) async fn within<F: Future>(context: &RequestContext<RoleServer>, work: F) -> F::Output {
    CURRENT.scope(Downstream::of(context), work).await
}
