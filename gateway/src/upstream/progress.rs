//! Progress an upstream reports for a forwarded call, routed back to the client that made it; and
//! which calls wait on the session, for what the upstream sends that names no call (a log
//! message, a sampling or elicitation request): it belongs to a call only when one call waits.
//!
//! The SDK gives every request the gateway sends upstream a progress token unique to that
//! upstream session; a forwarded call registers its token with the client's request
//! ([`toolgate::mcp::Downstream`]) for as long as it waits, and the session's client handler
//! sends each `notifications/progress` on under the client's own token. One table per session: a
//! restarted upstream's tokens start again and must never reach an earlier session's caller.
//!
//! The SDK handles each notification on a task of its own, so two may arrive out of order; the
//! protocol requires a call's progress to increase, so one that would not is dropped, never sent
//! (one at a time per call, each checked against the last sent).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use toolgate::mcp::Downstream;

/// Where each waiting call's progress goes, for one upstream session.
#[derive(Clone, Debug, Default)]
pub struct ProgressRoutes(Arc<Mutex<HashMap<ProgressToken, Destination>>>);

/// A waiting call's client, and the last progress sent to it.
#[derive(Clone, Debug)]
struct Destination {
    /// `None`: a call no client request waits for (one a person approved on the page, say).
    client: Option<Downstream>,
    last_sent: Arc<tokio::sync::Mutex<Option<f64>>>,
}

impl ProgressRoutes {
    /// Sends the progress for `token` to the call waiting on it, if one is (a token no call
    /// waits on, or one whose client asked for no progress, is dropped).
    pub async fn forward(&self, params: ProgressNotificationParam) {
        let to = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned();
        let Some((to, client)) = to.and_then(|to| {
            let client = to.client.clone().filter(Downstream::wants_progress)?;
            Some((to, client))
        }) else {
            return;
        };
        let mut last_sent = to.last_sent.lock().await;
        if last_sent.is_some_and(|last| params.progress <= last) || !params.progress.is_finite() {
            return;
        }
        *last_sent = Some(params.progress);
        client
            .progress(params.progress, params.total, params.message)
            .await;
    }

    /// The client request of the one call waiting on this session; `None` when none or several
    /// wait (what names no call cannot then be told apart, and goes to nobody).
    pub fn sole_waiting(&self) -> Option<Downstream> {
        let routes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut waiting = routes.values();
        match (waiting.next(), waiting.next()) {
            (Some(only), None) => only.client.clone(),
            _ => None,
        }
    }

    /// Routes `token`'s progress to `to` (if it asked for progress) and counts the call as
    /// waiting, until the returned guard is dropped.
    pub fn route(&self, token: ProgressToken, to: Option<Downstream>) -> Route {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                token.clone(),
                Destination {
                    client: to,
                    last_sent: Arc::default(),
                },
            );
        Route {
            routes: self.clone(),
            token,
        }
    }
}

/// A call's route; removed when the call stops waiting.
pub struct Route {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
    }
}
