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
//! The SDK handles each notification on a task of its own, so two may reach the handler out of
//! order, or after the call's result: the transport numbers each in arrival order
//! ([`Ordered`](super::ordered::Ordered)), a call's progress is sent in that order, and the call's
//! result waits (up to [`SETTLE_BOUND`]) until the progress that arrived before it was sent. The
//! protocol requires a call's progress to increase, so one that would not is dropped, never sent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::watch;
use toolgate::mcp::Downstream;

pub use super::recent_callers::LATELY;
use super::recent_callers::{Caller, RecentCallers};

/// The longest a notification waits for those before it, and a result for the progress before it
/// (the SDK runs each handler at once; only a stalled client session takes this long).
pub const SETTLE_BOUND: Duration = Duration::from_secs(1);

/// Where each waiting call's progress goes, for one upstream session.
#[derive(Clone, Debug, Default)]
pub struct ProgressRoutes(
    Arc<Mutex<HashMap<ProgressToken, Destination>>>,
    AnsweredEarly,
    RecentCallers,
    LetGo,
);

/// The last requests let go unanswered, past [`LINGER`] (the last [`EARLY_KEPT`]): one the
/// upstream answers later still counts as a recent call that matches nobody (a third attack: a
/// call given up and answered after 128 s, whose trailing line then reached another principal).
#[derive(Clone, Debug, Default)]
struct LetGo(Arc<Mutex<std::collections::VecDeque<ProgressToken>>>);

/// The last requests answered before any call claimed them: a call's answer can arrive between
/// sending it and claiming its route (the SDK sends from its own task), and the route the call
/// then claims must know it was answered, or it would be taken for a call the upstream still works
/// on. Bounded; a request older than the last [`EARLY_KEPT`] is long claimed or nobody's.
#[derive(Clone, Debug, Default)]
struct AnsweredEarly(Arc<Mutex<std::collections::VecDeque<ProgressToken>>>);

/// How many requests answered before being claimed are remembered.
const EARLY_KEPT: usize = 256;

/// A waiting call's client, the last progress sent to it, and how many of its notifications
/// arrived and were handled.
#[derive(Clone, Debug)]
struct Destination {
    /// `None` until the call that sent the request claims it (the upstream may report progress
    /// before); then `Some(None)` for a call no client request waits for (one a person approved
    /// on the page, say).
    client: watch::Sender<Option<Option<Downstream>>>,
    last_sent: Arc<tokio::sync::Mutex<Option<f64>>>,
    arrived: Arc<AtomicU64>,
    handled: watch::Sender<u64>,
    /// When the request was sent.
    since: Instant,
    /// Whether the upstream answered it.
    answered: Arc<AtomicBool>,
    /// When the call that claimed it stopped waiting unanswered (it timed out or was cancelled):
    /// the upstream may still be working on it, so it counts as waiting — nobody's — a while.
    left: Arc<Mutex<Option<Instant>>>,
}

/// How long a request still counts as waiting, nobody's, once nobody waits for its answer (sent
/// by no call, or its call gone) and the upstream has not answered: what the upstream sends
/// meanwhile goes to nobody rather than to another client's call. Past it the request is let go,
/// so an upstream that never answers a cancelled request does not silence the session for good.
pub const LINGER: Duration = Duration::from_secs(120);

impl Destination {
    fn new(client: Option<Option<Downstream>>) -> Self {
        Self {
            client: watch::Sender::new(client),
            last_sent: Arc::default(),
            arrived: Arc::default(),
            handled: watch::Sender::new(0),
            since: Instant::now(),
            answered: Arc::default(),
            left: Arc::default(),
        }
    }

    /// Whether it has waited nobody's past [`LINGER`].
    fn lapsed(&self) -> bool {
        let unclaimed = self.client.borrow().is_none() && self.since.elapsed() > LINGER;
        let left = self
            .left
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|left| left.elapsed() > LINGER);
        unclaimed || left
    }

    /// The call's client, once the call claimed its route (waiting up to [`SETTLE_BOUND`]).
    async fn client(&self) -> Option<Downstream> {
        let mut client = self.client.subscribe();
        let claimed = tokio::time::timeout(SETTLE_BOUND, client.wait_for(Option::is_some)).await;
        claimed.ok()?.ok()?.clone().flatten()
    }
}

impl ProgressRoutes {
    /// The next number of a progress notification for `token`, counted as arrived; `None` when
    /// no call waits on it.
    pub fn number(&self, token: &ProgressToken) -> Option<u64> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .map(|to| to.arrived.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// The call a log message arriving now belongs to — the one waiting, when exactly one waits
    /// — and the message's number among that call's notifications.
    pub fn number_sole(&self) -> Option<(ProgressToken, u64)> {
        let mut routes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        self.drop_lapsed(&mut routes);
        let mut waiting = routes.iter();
        match (waiting.next(), waiting.next()) {
            (Some((token, only)), None) => Some((
                token.clone(),
                only.arrived.fetch_add(1, Ordering::SeqCst) + 1,
            )),
            _ => None,
        }
    }

    /// Sends the progress for `token` to the call waiting on it, if one is (a token no call
    /// waits on, or one whose client asked for no progress, is dropped) — after the notifications
    /// numbered before `sequence`.
    pub async fn forward(&self, params: ProgressNotificationParam, sequence: Option<u64>) {
        let Some(to) = self.destination(&params.progress_token) else {
            return;
        };
        in_turn(&to, sequence, async {
            if let Some(client) = to.client().await.filter(Downstream::wants_progress) {
                let mut last_sent = to.last_sent.lock().await;
                if last_sent.is_none_or(|last| params.progress > last)
                    && params.progress.is_finite()
                {
                    *last_sent = Some(params.progress);
                    client
                        .progress(params.progress, params.total, params.message)
                        .await;
                }
            }
        })
        .await;
    }

    /// Sends a log message to the client of the call `owner` names (numbered on arrival by
    /// [`number_sole`](Self::number_sole)), in turn; one that arrived while none or several
    /// calls waited goes to nobody.
    #[expect(
        deprecated,
        reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
    )]
    pub async fn log(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        owner: Option<(ProgressToken, u64)>,
    ) {
        let Some((token, sequence)) = owner else {
            return;
        };
        let Some(to) = self.destination(&token) else {
            return;
        };
        in_turn(&to, Some(sequence), async {
            match to.client().await {
                Some(client) if self.alone_with(&client) => client.log(params).await,
                Some(_) => tracing::debug!(
                    "dropped an upstream log message: another principal's call waited on the session lately"
                ),
                None => {}
            }
        })
        .await;
    }

    /// Drops the routes waited on past [`LINGER`], remembering those the upstream never
    /// answered ([`LetGo`]).
    fn drop_lapsed(&self, routes: &mut HashMap<ProgressToken, Destination>) {
        routes.retain(|token, to| {
            if !to.lapsed() {
                return true;
            }
            if !to.answered.load(Ordering::SeqCst) {
                let mut let_go = self.3.0.lock().unwrap_or_else(PoisonError::into_inner);
                if let_go.len() >= EARLY_KEPT {
                    let_go.pop_front();
                }
                let_go.push_back(token.clone());
            }
            false
        });
    }

    /// Whether `client`'s call may be given what names no call: every call that stopped waiting
    /// on this session within [`LATELY`] was its principal's. A log message or a request about
    /// another principal's call, sent after that call was answered, would otherwise reach it.
    pub fn alone_with(&self, client: &Downstream) -> bool {
        self.2.alone(&Caller::of(Some(client)))
    }

    fn destination(&self, token: &ProgressToken) -> Option<Destination> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .cloned()
    }

    /// The token of the one request waiting on this session now, if exactly one waits (what the
    /// upstream sends that names no request is its).
    pub fn sole_token(&self) -> Option<ProgressToken> {
        let mut routes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        self.drop_lapsed(&mut routes);
        let mut waiting = routes.keys();
        match (waiting.next(), waiting.next()) {
            (Some(only), None) => Some(only.clone()),
            _ => None,
        }
    }

    /// The client request of the call waiting under `token`, once claimed; `None` when the
    /// request is nobody's (or no longer waits).
    pub async fn client_of(&self, token: &ProgressToken) -> Option<Downstream> {
        self.destination(token)?.client().await
    }

    /// A request is being sent under `token`: from now on its progress is numbered, and it
    /// counts as waiting, until the call that sent it claims the route and lets it go, or,
    /// unclaimed, until it is [`answered`](Self::answered).
    pub fn expect(&self, token: ProgressToken) {
        let mut routes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        self.drop_lapsed(&mut routes);
        routes
            .entry(token)
            .or_insert_with(|| Destination::new(None));
    }

    /// Whether a request sent under `token` still waits.
    pub fn has(&self, token: &ProgressToken) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(token)
    }

    /// The request sent under `token` was answered: unclaimed (nobody's call waits on it — a
    /// listing, a completion, or a call its caller gave up on before claiming), it waits no more.
    pub fn answered(&self, token: &ProgressToken) {
        let mut routes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(to) = routes.get(token) else {
            // Let go past LINGER and answered only now: it may be spoken of next, as nobody's.
            let mut let_go = self.3.0.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(at) = let_go.iter().position(|known| known == token) {
                let_go.remove(at);
                drop(let_go);
                self.2.push(Caller::Unknown);
            }
            return;
        };
        let unclaimed = to.client.borrow().is_none();
        let left = to
            .left
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if unclaimed || left {
            routes.remove(token);
            if left {
                // Its caller gave up; the upstream finished it only now, and may speak of it
                // next: whose it was is no longer known here, so it is nobody's.
                self.2.push(Caller::Unknown);
            }
            if unclaimed {
                let mut early = self.1.0.lock().unwrap_or_else(PoisonError::into_inner);
                if early.len() == EARLY_KEPT {
                    early.pop_front();
                }
                early.push_back(token.clone());
            }
        } else {
            // Its call still waits: the route goes when the call lets it go.
            to.answered.store(true, Ordering::SeqCst);
        }
    }

    /// Routes `token`'s progress to `to` (if it asked for progress) and counts the call as
    /// waiting — claiming the route [`expect`](Self::expect) made when the call was sent —,
    /// until the returned guard is dropped.
    pub fn route(&self, token: ProgressToken, to: Option<Downstream>) -> Route {
        let answered = {
            let mut early = self.1.0.lock().unwrap_or_else(PoisonError::into_inner);
            let at = early.iter().position(|known| *known == token);
            at.and_then(|at| early.remove(at)).is_some()
        };
        let mut routes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match routes.get(&token) {
            Some(expected) => {
                expected.client.send_replace(Some(to));
            }
            None => {
                let claimed = Destination::new(Some(to));
                claimed.answered.store(answered, Ordering::SeqCst);
                routes.insert(token.clone(), claimed);
            }
        }
        drop(routes);
        Route {
            routes: self.clone(),
            token,
        }
    }
}

/// Runs `send` after the notifications of `to` numbered before `sequence` (waiting up to
/// [`SETTLE_BOUND`]), then counts it handled.
async fn in_turn(
    to: &Destination,
    sequence: Option<u64>,
    send: impl std::future::Future<Output = ()>,
) {
    if let Some(sequence) = sequence {
        let mut handled = to.handled.subscribe();
        let _ = tokio::time::timeout(
            SETTLE_BOUND,
            handled.wait_for(|handled| *handled + 1 >= sequence),
        )
        .await;
    }
    send.await;
    if let Some(sequence) = sequence {
        to.handled
            .send_modify(|handled| *handled = (*handled).max(sequence));
    }
}

/// A call's route; removed when the call stops waiting.
pub struct Route {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Route {
    /// Waits (up to [`SETTLE_BOUND`]) until every progress notification that arrived for this
    /// call so far was sent on: called when its result arrives, so no progress comes after it.
    pub async fn settled(&self) {
        let to = self
            .routes
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&self.token)
            .cloned();
        let Some(to) = to else { return };
        let arrived = to.arrived.load(Ordering::SeqCst);
        let mut handled = to.handled.subscribe();
        let _ = tokio::time::timeout(
            SETTLE_BOUND,
            handled.wait_for(|handled| *handled >= arrived),
        )
        .await;
    }
}

impl Drop for Route {
    /// Answered, the route goes; unanswered (the call timed out or was cancelled), the request
    /// stays, nobody's, until the upstream answers or [`LINGER`] passes.
    fn drop(&mut self) {
        let mut routes = self.routes.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(to) = routes.get(&self.token) else {
            return;
        };
        self.routes
            .2
            .push(Caller::of(to.client.borrow().clone().flatten().as_ref()));
        if to.answered.load(Ordering::SeqCst) {
            routes.remove(&self.token);
        } else {
            to.client.send_replace(Some(None));
            *to.left.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use rmcp::model::{NumberOrString, ProgressToken};

    use super::super::recent_callers::Caller;
    use super::{Destination, LINGER, ProgressRoutes};

    fn known(id: &str) -> Caller {
        Caller::Known(Some(id.to_owned()))
    }

    #[test]
    fn a_request_let_go_past_the_linger_and_answered_later_is_a_recent_call_of_nobody() {
        // A third attack: alice's call given up, its request answered after 128 s, and the
        // upstream's trailing line about it reached bob's call.
        let routes = ProgressRoutes::default();
        let token = ProgressToken(NumberOrString::Number(7));
        let mut old = Destination::new(None);
        old.since = Instant::now()
            .checked_sub(LINGER + Duration::from_secs(1))
            .expect("the clock has run that long");
        routes.0.lock().unwrap().insert(token.clone(), old);
        // A look at the routes lets it go; nobody's call ended yet.
        assert!(routes.sole_token().is_none());
        assert!(routes.2.alone(&known("bob")));
        routes.answered(&token);
        assert!(!routes.2.alone(&known("bob")));
        // A request answered that nobody let go is no call of anybody's.
        let fresh = ProgressRoutes::default();
        fresh.answered(&ProgressToken(NumberOrString::Number(8)));
        assert!(fresh.2.alone(&known("bob")));
    }
}
