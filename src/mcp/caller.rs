//! Who is calling: what the transport authenticated, handed to [`McpServer`](super::McpServer) by
//! the code that serves it.

use std::sync::Arc;

use rmcp::model::Extensions;

use crate::contract::Principal;

/// The caller of one request: the principal the transport authenticated, and the session it
/// came in (an HTTP session id), when there are such things.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller {
    /// The authenticated principal; `None` over stdio or an unauthenticated transport.
    pub principal: Option<Arc<Principal>>,
    /// The session the request belongs to, if the transport has sessions.
    pub session: Option<String>,
    /// The W3C `traceparent` the transport carried (an HTTP header), if any: the trace the
    /// request continues (see [`McpServer::with_call_span`](super::McpServer::with_call_span)).
    pub trace_parent: Option<String>,
}

impl Caller {
    /// A caller `principal` in `session`.
    pub fn new(principal: Option<Arc<Principal>>, session: Option<String>) -> Self {
        Self {
            principal,
            session,
            trace_parent: None,
        }
    }

    /// The same caller, continuing the trace `traceparent` names.
    #[must_use]
    pub fn with_trace_parent(mut self, traceparent: Option<String>) -> Self {
        self.trace_parent = traceparent;
        self
    }
}

/// Reads the [`Caller`] from a request's extensions (where a transport puts what it knows, e.g.
/// the SDK's HTTP server puts the request's `http::request::Parts`).
pub type CallerOf = Arc<dyn Fn(&Extensions) -> Caller + Send + Sync>;
