//! The gateway's upstreams: started under a deadline, listed within bounds, restarted with
//! backoff when they stop, and reachable through a [`Link`] that says at once when one is down.

mod child;
mod client;
mod ordered;
mod progress;
mod readable_replies;
mod recent_callers;
mod remote;
mod started;
mod subscriptions;
mod traced_client;

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient};
use tokio::sync::watch;

pub use child::StderrTail;
pub use client::Signals;
pub use progress::Route;
pub use started::StartError;

use crate::config::{Limits, UpstreamConfig};

/// Every tool upstream `peer` lists, within `limits.max_list_pages` and `limits.list_timeout_ms`
/// (the library's bounded listing); the error names the bound an operator would change.
///
/// # Errors
///
/// One line saying why, for the log and `/healthz`.
pub async fn list_tools(
    peer: &Peer<RoleClient>,
    limits: &Limits,
) -> Result<Vec<rmcp::model::Tool>, String> {
    use toolgate::mcp::ListError;
    toolgate::mcp::list_tools(peer, limits.max_list_pages, limits.list_timeout)
        .await
        .map_err(|error| {
            let bound = match &error {
                ListError::TooManyPages { .. } => " (limits.max_list_pages)",
                ListError::TooSlow { .. } => " (limits.list_timeout_ms)",
                _ => "",
            };
            format!("{error}{bound}; none of its tools are served")
        })
}

/// The first wait before restarting a stopped upstream; doubled after each failed start.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// An upstream that stayed up this long is restarted at once the next time it stops.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// The way to one upstream: its session while it runs, why it is down otherwise. Handlers take
/// the peer out (a clone) and never hold the lock while they wait.
#[derive(Debug)]
pub struct Link {
    name: String,
    state: RwLock<Result<Session, String>>,
    list_changed: watch::Receiver<u64>,
    /// Counts its `notifications/resources/list_changed` and `notifications/prompts/list_changed`.
    listings_changed: watch::Receiver<u64>,
    // Upstream tool names whose new definition the policy does not fit yet: not sent.
    withheld: RwLock<std::collections::HashSet<String>>,
    // Counts its (re)starts; `verified` is the start whose list was last judged against the
    // pins and the policy. Until they are equal what it serves may not be what was pinned, so no
    // call is sent (a start judged late never verifies a later one).
    started: std::sync::atomic::AtomicU64,
    verified: std::sync::atomic::AtomicU64,
}

impl Link {
    /// The upstream's name in the config.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The session, or why there is none (the call must not be sent).
    pub fn peer(&self) -> Result<Peer<RoleClient>, String> {
        self.session().map(|session| session.peer)
    }

    /// The session and where its progress goes, or why there is none.
    pub fn session(&self) -> Result<Session, String> {
        let state = self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*state {
            Ok(session) if session.peer.is_transport_closed() => {
                Err("its session has closed".to_owned())
            }
            other => other.clone(),
        }
    }

    /// Whether the upstream is up now, its tools judged since it (re)started.
    pub fn is_up(&self) -> bool {
        self.peer().is_ok() && self.is_verified()
    }

    /// Whether its tools were listed and judged since it last (re)started.
    pub fn is_verified(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.verified.load(SeqCst) == self.started.load(SeqCst)
    }

    /// Which start of it is running: read before listing it, given to [`set_verified`](Self::set_verified).
    pub fn start_count(&self) -> u64 {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The tools of start `start` ([`start_count`](Self::start_count) read before listing) were judged against the
    /// pins and the policy; calls are sent again if no later start happened since.
    pub fn set_verified(&self, start: u64) {
        self.verified
            .fetch_max(start, std::sync::atomic::Ordering::SeqCst);
    }

    /// Counts `notifications/tools/list_changed` from the upstream.
    pub fn list_changes(&self) -> watch::Receiver<u64> {
        self.list_changed.clone()
    }

    /// How many times its resource or prompt list changed (a restart counts).
    pub fn listing_changes(&self) -> u64 {
        *self.listings_changed.borrow()
    }

    /// Whether calls to upstream tool `tool` are held back (its definition changed and the
    /// policy in force does not fit the new one).
    pub fn is_withheld(&self, tool: &str) -> bool {
        self.withheld
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(tool)
    }

    /// The upstream tools whose calls are held back, sorted.
    pub fn withheld(&self) -> Vec<String> {
        let mut tools: Vec<String> = self
            .withheld
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        tools.sort();
        tools
    }

    /// Holds back calls to exactly these upstream tools.
    pub fn withhold(&self, tools: std::collections::HashSet<String>) {
        *self
            .withheld
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tools;
    }

    fn set(&self, state: Result<Session, String>) {
        *self
            .state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = state;
    }
}

/// One session with an upstream: where calls are sent, and where the progress it reports goes.
#[derive(Clone, Debug)]
pub struct Session {
    pub peer: Peer<RoleClient>,
    progress: progress::ProgressRoutes,
    /// The clients subscribed to its resources.
    pub subscribers: subscriptions::Subscribers,
}

impl Session {
    fn of(started: &started::Started) -> Self {
        Self {
            peer: started.service.peer().clone(),
            progress: started.service.service().progress.clone(),
            subscribers: started.service.service().subscribers.clone(),
        }
    }

    /// Routes the progress the upstream reports under `token` to the client request this task
    /// runs for (if it asked for progress), and counts the call as waiting, until the guard is
    /// dropped.
    pub fn route_progress(&self, token: rmcp::model::ProgressToken) -> Route {
        self.progress
            .route(token, toolgate::mcp::Downstream::current())
    }
}

/// A started upstream, before its supervisor takes over.
pub struct Upstream {
    config: UpstreamConfig,
    /// `None`: it did not start (or list); the supervisor starts it.
    started: Option<started::Started>,
    tail: StderrTail,
    signals: Signals,
    link: Arc<Link>,
}

impl Upstream {
    /// Starts the upstream and completes the handshake within `limits.startup_timeout`.
    ///
    /// # Errors
    ///
    /// The process could not start, exited, or did not answer in time: the error names the
    /// command, the exit status and the last stderr lines.
    pub async fn start(config: UpstreamConfig, limits: &Limits) -> Result<Self, StartError> {
        let tail = StderrTail::default();
        let (signals, changes, listings_changed) = Signals::new();
        let started = start_any(&config, limits, &tail, signals.clone()).await?;
        let link = Arc::new(Link {
            name: config.name.clone(),
            state: RwLock::new(Ok(Session::of(&started))),
            list_changed: changes,
            listings_changed,
            withheld: RwLock::default(),
            // Listed and judged at start, before anything is served.
            started: std::sync::atomic::AtomicU64::new(0),
            verified: std::sync::atomic::AtomicU64::new(0),
        });
        Ok(Self {
            config,
            started: Some(started),
            tail,
            signals,
            link,
        })
    }

    /// An upstream that did not start or list, `why`: its link is down until the supervisor
    /// starts it and it lists its tools.
    pub fn down(config: UpstreamConfig, why: String) -> Self {
        let (signals, changes, listings_changed) = Signals::new();
        let link = Arc::new(Link {
            name: config.name.clone(),
            state: RwLock::new(Err(format!("{why}; the gateway keeps trying to start it"))),
            list_changed: changes,
            listings_changed,
            withheld: RwLock::default(),
            started: std::sync::atomic::AtomicU64::new(1),
            verified: std::sync::atomic::AtomicU64::new(0),
        });
        Self {
            config,
            started: None,
            tail: StderrTail::default(),
            signals,
            link,
        }
    }

    /// The link handlers reach it through.
    pub fn link(&self) -> &Arc<Link> {
        &self.link
    }

    /// The session, to list its tools before serving.
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.started
            .as_ref()
            .expect("a started upstream")
            .service
            .peer()
    }

    /// Keeps the upstream running: when it stops, its link goes down at once (calls answer
    /// "unavailable, nothing ran"), and it is started again with backoff until it answers and
    /// lists its tools within the config's bounds. An upstream that did not start is started
    /// the same way.
    pub fn supervise(self, limits: Limits) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let Self {
                config,
                started,
                tail,
                signals,
                link,
            } = self;
            let mut backoff = FIRST_BACKOFF;
            let mut running = started;
            loop {
                if let Some(mut started) = running.take() {
                    let up_since = Instant::now();
                    let why = stopped(&mut started).await;
                    link.set(Err(format!("it {why}; the gateway is restarting it")));
                    tracing::warn!(upstream = %config.name, "upstream stopped: it {why}; its tools answer \"unavailable, nothing ran\" until it is back");
                    drop(started);
                    if up_since.elapsed() >= STABLE_AFTER {
                        backoff = FIRST_BACKOFF;
                    }
                }
                let started = loop {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    let listed = match start_any(&config, &limits, &tail, signals.clone()).await {
                        Ok(started) => list_tools(started.service.peer(), &limits)
                            .await
                            .map(|_| started)
                            .map_err(|why| format!("its tools could not be listed: {why}")),
                        Err(error) => Err(error.what),
                    };
                    match listed {
                        Ok(started) => break started,
                        Err(why) => {
                            link.set(Err(format!("it could not be restarted: {why}")));
                            tracing::warn!(upstream = %config.name, "restart failed: {why}; next try in {} ms", backoff.as_millis());
                        }
                    }
                };
                // Its tools may have changed while it was down: no call is sent until the
                // refresher has listed them again and judged them (as if it had said so).
                link.started
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                link.set(Ok(Session::of(&started)));
                signals.restarted();
                tracing::info!(upstream = %config.name, "upstream started");
                running = Some(started);
            }
        })
    }
}

/// Starts `config` however it is reached.
async fn start_any(
    config: &UpstreamConfig,
    limits: &Limits,
    tail: &StderrTail,
    signals: Signals,
) -> Result<started::Started, StartError> {
    match &config.transport {
        crate::config::UpstreamTransport::Stdio { .. } => {
            child::start(config, limits, tail, signals).await
        }
        crate::config::UpstreamTransport::Http {
            url,
            headers,
            bearer_token_env,
        } => {
            remote::start(
                config,
                url,
                headers,
                bearer_token_env.as_deref(),
                limits,
                signals,
            )
            .await
        }
    }
}

/// Waits until the upstream's process exits or its session closes; says which.
async fn stopped(started: &mut started::Started) -> String {
    let peer = started.service.peer().clone();
    let closed = async {
        while !peer.is_transport_closed() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let Some(process) = started.child.as_mut() else {
        closed.await;
        return "closed its session (the connection failed or the server ended it)".to_owned();
    };
    tokio::select! {
        status = process.wait() => match status {
            Ok(status) => format!("exited with {}", child::describe(status)),
            Err(error) => format!("could not be waited for: {error}"),
        },
        () = closed => {
            let _ = process.start_kill();
            "closed its session".to_owned()
        }
    }
}
