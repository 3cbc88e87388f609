//! The upstream's transport as the SDK reads it, numbering each progress notification for a
//! waiting call, and each log message that arrives while exactly one call waits, in the order
//! they arrived — before the SDK reads what follows them. The SDK hands
//! each notification to the client handler on a task of its own and each response straight to
//! its caller, so without the numbers a call's progress could be sent out of order or overtaken
//! by its result; with them, [`ProgressRoutes`] sends a call's
//! progress in arrival order, and the call's result waits until the progress that came before it
//! has been sent.

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;

use rmcp::RoleClient;
use rmcp::model::{
    GetExtensions as _, GetMeta as _, JsonRpcError, JsonRpcMessage, JsonRpcResponse, ProgressToken,
    RequestId, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::progress::ProgressRoutes;

/// How many unanswered requests are remembered before those nobody waits on are forgotten.
const FORGET_AFTER: usize = 4096;

/// A progress notification's place among those of its call, from 1 (in the notification's
/// extensions, where the client handler reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressSequence(pub u64);

/// The request an upstream's own request came during: the one waiting when it arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskedDuring(pub rmcp::model::ProgressToken);

/// The call a log message belongs to (the one waiting when it arrived), and its number among
/// that call's notifications.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogOwner(pub rmcp::model::ProgressToken, pub u64);

/// `inner`, numbering the progress of waiting calls in `routes`.
pub struct Ordered<T> {
    inner: T,
    routes: ProgressRoutes,
    /// The progress token of each request sent and not yet answered.
    sent: HashMap<RequestId, ProgressToken>,
}

impl<T> Ordered<T> {
    pub fn new(inner: T, routes: ProgressRoutes) -> Self {
        Self {
            inner,
            routes,
            sent: HashMap::new(),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Ordered<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Before the upstream can answer or report on a request, the request waits: what names
        // no request (a log message, a sampling request) may then be its.
        if let JsonRpcMessage::Request(request) = &item
            && let Some(token) = request.request.get_meta().get_progress_token()
        {
            self.routes.expect(token.clone());
            self.sent.insert(request.id.clone(), token);
            // A request the upstream never answers (cancelled, say) is forgotten once its call
            // has let its route go.
            if self.sent.len() > FORGET_AFTER {
                let routes = &self.routes;
                self.sent.retain(|_, token| routes.has(token));
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut message = self.inner.receive().await?;
        // An answered request no call claimed (a listing, a completion) waits no more.
        let answered = match &message {
            JsonRpcMessage::Response(JsonRpcResponse { id, .. }) => Some(id),
            JsonRpcMessage::Error(JsonRpcError { id, .. }) => id.as_ref(),
            _ => None,
        };
        if let Some(token) = answered.and_then(|id| self.sent.remove(id)) {
            self.routes.answered(&token);
        }
        // A request the upstream sends (sampling, elicitation) is the one waiting request's,
        // decided now, as it arrives: by the time it is handled that request may have ended.
        if let JsonRpcMessage::Request(request) = &mut message
            && let Some(token) = self.routes.sole_token()
        {
            request.request.extensions_mut().insert(AskedDuring(token));
        }
        if let JsonRpcMessage::Notification(notification) = &mut message {
            match &mut notification.notification {
                ServerNotification::ProgressNotification(progress) => {
                    if let Some(sequence) = self.routes.number(&progress.params.progress_token) {
                        progress.extensions.insert(ProgressSequence(sequence));
                    }
                }
                ServerNotification::LoggingMessageNotification(log) => {
                    if let Some(owner) = self.routes.number_sole() {
                        log.extensions.insert(LogOwner(owner.0, owner.1));
                    }
                }
                _ => {}
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
