//! Streamable HTTP sessions (the 2025-11-25 revision) bound to the principal that opened them,
//! capped per principal and in all, and closed when idle.
//!
//! The SDK's session manager knows sessions by id only; this layer sits between authentication
//! and the SDK and knows who opened each one. A request naming a session opened by another
//! principal, or one this layer never saw opened, gets the same `404` as an unknown session (a
//! session id is not a credential, and whether it exists is not told). A session past a cap is
//! closed as soon as the SDK opened it and the client gets `429`. A reaper closes sessions that no
//! request has named for the idle timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode, header};
use rmcp::transport::streamable_http_server::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use toolgate::Principal;

use crate::config::SessionLimits;
use crate::metrics::Metrics;

const SESSION_HEADER: &str = "mcp-session-id";

/// Who opened a session, and when a request last named it.
struct Opened {
    principal: Arc<str>,
    last_used: Instant,
}

#[derive(Default)]
struct Book {
    sessions: HashMap<Arc<str>, Opened>,
    per_principal: HashMap<Arc<str>, usize>,
}

impl Book {
    fn remove(&mut self, id: &str) -> bool {
        let Some(opened) = self.sessions.remove(id) else {
            return false;
        };
        if let Some(count) = self.per_principal.get_mut(&opened.principal) {
            *count -= 1;
            if *count == 0 {
                self.per_principal.remove(&opened.principal);
            }
        }
        true
    }
}

/// The sessions open on one listener, and the SDK's manager that holds them.
pub struct Sessions {
    manager: Arc<LocalSessionManager>,
    limits: SessionLimits,
    book: Mutex<Book>,
    metrics: Option<Arc<Metrics>>,
    /// What this endpoint last added to the open-sessions gauge (each endpoint, `/mcp` and each
    /// tool set's, adds its own count).
    published: std::sync::atomic::AtomicI64,
}

impl Sessions {
    /// The bookkeeping for `manager`'s sessions under `limits`.
    pub fn new(
        manager: Arc<LocalSessionManager>,
        limits: SessionLimits,
        metrics: Option<Arc<Metrics>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            manager,
            limits,
            book: Mutex::new(Book::default()),
            metrics,
            published: std::sync::atomic::AtomicI64::new(0),
        })
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, open: usize) {
        if let Some(metrics) = &self.metrics {
            let open = i64::try_from(open).unwrap_or(i64::MAX);
            let before = self
                .published
                .swap(open, std::sync::atomic::Ordering::SeqCst);
            metrics.sessions_open_changed(open - before);
        }
    }

    /// Closes every session idle for longer than the timeout; returns how many.
    pub async fn reap(&self) -> usize {
        let now = Instant::now();
        let idle: Vec<Arc<str>> = {
            let mut book = self.book();
            let idle: Vec<Arc<str>> = book
                .sessions
                .iter()
                .filter(|(_, opened)| {
                    now.duration_since(opened.last_used) >= self.limits.idle_timeout
                })
                .map(|(id, _)| Arc::clone(id))
                .collect();
            for id in &idle {
                book.remove(id);
            }
            self.publish(book.sessions.len());
            idle
        };
        for id in &idle {
            // The lock is not held here: closing waits on the session's worker.
            let _ = self.manager.close_session(id).await;
        }
        if !idle.is_empty() {
            tracing::info!(closed = idle.len(), "idle MCP sessions closed");
        }
        idle.len()
    }

    /// Runs [`reap`](Self::reap) every quarter of the idle timeout (1 s to 60 s) until dropped.
    pub fn spawn_reaper(self: &Arc<Self>) {
        let every =
            (self.limits.idle_timeout / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let sessions = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(sessions) = sessions.upgrade() else {
                    return;
                };
                sessions.reap().await;
            }
        });
    }
}

/// The answer to a request naming a session that is not the caller's: the SDK's own answer to an
/// unknown session, so the two cannot be told apart.
fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        "404: no such session: open a new one with `initialize`\n",
    )
        .into_response()
}

fn too_many(why: String) -> Response {
    let refusal = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32000, "message": why},
    });
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::CONTENT_TYPE, "application/json")],
        refusal.to_string(),
    )
        .into_response()
}

/// Binds, caps and touches sessions; runs after authentication (the principal is in the
/// request's extensions).
pub async fn bind(State(sessions): State<Arc<Sessions>>, request: Request, next: Next) -> Response {
    let Some(principal) = request.extensions().get::<Arc<Principal>>().cloned() else {
        // Authentication runs first and always sets one; without it, nothing is served.
        return (StatusCode::UNAUTHORIZED, "401\n").into_response();
    };
    let named = request
        .headers()
        .get(SESSION_HEADER)
        .map(|value| value.to_str().map(str::to_owned));
    let is_delete = request.method() == Method::DELETE;
    match named {
        Some(Err(_)) => not_found(),
        Some(Ok(id)) => {
            {
                let mut book = sessions.book();
                match book.sessions.get_mut(id.as_str()) {
                    Some(opened) if *opened.principal == *principal.id => {
                        opened.last_used = Instant::now();
                    }
                    Some(_) => {
                        drop(book);
                        if let Some(metrics) = &sessions.metrics {
                            metrics.session_refused("foreign");
                        }
                        tracing::warn!(
                            principal = %principal.id,
                            "a request named a session another principal opened; refused as unknown"
                        );
                        return not_found();
                    }
                    None => return not_found(),
                }
            }
            let mut response = next.run(request).await;
            if is_delete && response.status().is_success() {
                let mut book = sessions.book();
                book.remove(&id);
                sessions.publish(book.sessions.len());
                // The SDK answers 202; a session ended is 200 to every client SDK.
                *response.status_mut() = StatusCode::OK;
                *response.body_mut() = Body::empty();
            }
            response
        }
        None => {
            let response = next.run(request).await;
            let Some(opened) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|value| value.to_str().ok())
                .map(Arc::<str>::from)
            else {
                return response;
            };
            let refused = {
                let mut book = sessions.book();
                let mine = book.per_principal.get(&*principal.id).copied().unwrap_or(0);
                let refused = if book.sessions.len() >= sessions.limits.max_total {
                    Some(format!(
                        "refused: the gateway holds {} sessions, its limit (listen.max_sessions); close one (DELETE /mcp) or wait for idle ones to expire",
                        sessions.limits.max_total
                    ))
                } else if mine >= sessions.limits.max_per_principal {
                    Some(format!(
                        "refused: {:?} holds {mine} sessions, the limit for one principal (listen.max_sessions_per_principal); close one (DELETE /mcp) or wait for idle ones to expire",
                        principal.id
                    ))
                } else {
                    let owner: Arc<str> = Arc::from(principal.id.as_str());
                    *book.per_principal.entry(Arc::clone(&owner)).or_insert(0) += 1;
                    book.sessions.insert(
                        Arc::clone(&opened),
                        Opened {
                            principal: owner,
                            last_used: Instant::now(),
                        },
                    );
                    None
                };
                sessions.publish(book.sessions.len());
                refused
            };
            match refused {
                None => response,
                Some(why) => {
                    // On a task of its own: a client that hangs up now drops this request's
                    // future, and the session the SDK opened must close all the same.
                    let manager = Arc::clone(&sessions.manager);
                    tokio::spawn(async move {
                        let _ = manager.close_session(&opened).await;
                    });
                    if let Some(metrics) = &sessions.metrics {
                        metrics.session_refused("cap");
                    }
                    tracing::warn!(principal = %principal.id, "{why}");
                    too_many(why)
                }
            }
        }
    }
}
