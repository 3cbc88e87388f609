//! The Model Context Protocol, served and guarded through the official Rust SDK (`rmcp`):
//! a [`ToolController`](crate::ToolController) as an MCP server ([`McpServer`]), and the parts of
//! a gateway in front of another MCP server ([`Upstream`], [`PolicyFile`], [`Caller`],
//! [`check_duplicate_keys`]; the `toolgate-gateway` crate's `toolgate-mcp-gateway` binary builds
//! on them).
//!
//! Every call that reaches a handler — or, through the gateway, the upstream server — went
//! through the controller: resolved by exact name, validated against the tool's schema, allowed
//! by the policy or approved once by a person. Tool annotations sent by an upstream are dropped:
//! they are hints and grant nothing.
//!
//! # Protocol revisions
//!
//! The SDK negotiates the revision; toolgate behaves the same on each except for approvals:
//!
//! | revision | handshake | an `ask` decision |
//! |---|---|---|
//! | 2026-07-28 | stateless, `server/discover` | `input_required` result: an elicitation and a sealed `requestState`; the retry carries the answer |
//! | 2025-11-25 and earlier | `initialize` | an `elicitation/create` request in the same call, if the client declared form elicitation |
//! | any, client without elicitation | | error result naming the approval id; the call waits to be answered out of band |
//!
//! Beyond tools, a server given a [`Passthrough`] (the gateway's upstreams) serves resources,
//! prompts, completions and logging; reading a resource and getting a prompt are gated as calls
//! ([`passthrough`]), and an upstream's sampling and elicitation requests reach a client only as
//! calls of gates the host registers ([`Downstream::create_message`]).
//! Serve a stream with [`McpServer::serve_io`] or [`McpServer::serve_stdio`]: they refuse calls
//! holding duplicate keys and bind each request state to its connection. Another transport of
//! the SDK (`rmcp::ServiceExt::serve`) must do both itself — read callers with
//! [`McpServer::with_caller`] and check each body with [`check_duplicate_keys`], as the gateway
//! does for Streamable HTTP; without a caller, a modern client's held call waits out of band
//! instead of getting a state anyone could replay.

mod approval;
mod call_failure;
mod call_ids;
mod caller;
mod downstream;
pub mod frames;
mod gated;
mod handler;
#[cfg(test)]
mod handler_size_tests;
mod listing;
pub mod passthrough;
mod person;
mod reload;
mod server;
mod stdio;
mod strict_input;
#[cfg(feature = "tracing")]
mod trace_context;
mod upstream;
mod wire;

pub use call_failure::CallFailure;
pub use caller::{Caller, CallerOf};
pub use downstream::Downstream;
pub use listing::{ListError, list_tools};
pub use passthrough::{Passthrough, Watching};
pub use person::{MAX_PERSON_REQUEST_BYTES, PERSON_REQUEST_META};
pub use reload::{PolicyFile, Reload};
pub use server::McpServer;
pub use strict_input::{BodyProblem, check_duplicate_keys, check_request_body};
#[cfg(feature = "tracing")]
pub use trace_context::{CallSpan, TRACE_PARENT_META};
pub use upstream::{SkipReason, Skipped, Upstream, UpstreamLimits};
pub use wire::{APPROVAL_ID_META, RESERVED_META_PREFIX, result_text, tool_output};

/// The SDK this module is built on, at the version toolgate uses.
pub use rmcp;

use crate::registry::RegistryError;

/// Why serving or importing over MCP failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The OS gave no randomness for the request-state key; the server cannot start safely.
    // getrandom's error implements `std::error::Error` only with its `std` feature, which the
    // core does not enable; its text is kept instead.
    #[error("no randomness for the request-state key: {0}")]
    Randomness(getrandom::Error),
    /// No request-state key, or one shorter than 32 bytes.
    #[error("each request-state key must be at least 32 bytes, and there must be one")]
    StateKey,
    /// The MCP session with the client could not start (handshake failed, transport closed).
    #[error("the mcp session could not start")]
    Serve(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The MCP session with the client ended abnormally.
    #[error("the mcp session ended abnormally")]
    Stopped(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The upstream server's process could not be started; check the command.
    #[error("cannot start the upstream server")]
    Spawn(#[source] std::io::Error),
    /// The upstream server did not complete the handshake or a request.
    #[error("the upstream server failed")]
    Upstream(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The upstream's tools do not make a registry (a name listed twice).
    #[error("the upstream's tools do not make a registry")]
    Registry(#[from] RegistryError),
}
