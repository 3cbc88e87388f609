//! A tool call proposed by a language model cannot run in toolgate unless its tool resolved by
//! exact name, its arguments validated against the tool's JSON Schema, and a policy allowed it or a
//! person approved it once — and the compiler, not a convention, enforces that order.
//!
//! toolgate does not sandbox handlers (a handler that touches files must confine itself), does not
//! talk to model providers over the network, and does not protect against a policy that allows
//! everything on purpose or against code in the program that opts out of Rust's safety checks.
//!
//! ```text
//! ToolCall ──ToolRuntime::prepare──▶ PreparedToolCall ──policy: Allow──▶ Authorized<PreparedToolCall> ──ToolRuntime::execute──▶ ToolResult
//!    │  unknown tool / invalid arguments ─▶ Rejection ─▶ ToolResult { is_error: true }
//!    │                          policy: Deny ─▶ ToolResult { is_error: true, content: reason }
//!    │                          policy: Ask  ─▶ ApprovalRequest ─▶ PendingApprovals
//!    │                                             ApprovalResponse(reject)  ─▶ ToolResult { is_error: true }
//!    │                                             ApprovalResponse(approve) ─▶ consume once ─▶ re-prepare (current registry)
//!    │                                                 ─▶ re-decide (current policy; Deny wins) ─▶ ApprovalOutcome ─▶ Authorized ─▶ execute
//! ```
//!
//! Each stage returns a typed outcome — [`Rejection`], [`PolicyOutcome`], [`ApprovalOutcome`] —
//! that the [`ToolController`] records in the audit log as what it is; the text the model reads is
//! made from it at the edge.
//!
//! # Guarantees
//!
//! - **G1** Only [`ToolRuntime::prepare`] builds a [`PreparedToolCall`], after the tool resolved
//!   and the arguments validated.
//! - **G2** Only [`Authorized::by_policy`] (on `Allow`) and [`Authorized::by_approval`] (approval
//!   consumed, call re-prepared, policy re-decided and not `Deny`) build an [`Authorized`]. A
//!   [`Policy`] returns a decision and cannot mint one.
//! - **G3** [`ToolRuntime::execute`] accepts only `Authorized<PreparedToolCall>`, which is not
//!   `Clone`, `Copy`, `Default` or `Deserialize` and is read-only.
//! - **G4** Default deny: [`ToolPolicy`] denies any tool it does not name, with a reason.
//! - **G5** An approval is consumed exactly once, also when answers race.
//! - **G6** After approval the call is re-prepared and re-decided; `Deny` wins.
//! - **G7** Every [`ToolResult`] carries the `call_id` of the call it answers.
//! - **G8** Expected failures are error results; panics reach the caller and poison nothing.
//! - **G9** Schemas compile offline (no network, no filesystem); `pattern`s use a linear-time
//!   regex engine; argument depth is bounded before validation.
//! - **G10** Approval ids hold 128 bits of OS randomness.
//!
//! Each guarantee has a test or a compile-fail case in `ui-tests/` that fails if it is lost.
//!
//! # Where things are
//!
//! This is the one map of the modules (the guide links here). The crate root holds the pipeline
//! and what every user touches: calls, specs, definitions, the registry, the runtime, the proof
//! [`Authorized`] and the typed outcomes each stage returns ([`Rejection`], [`PolicyOutcome`],
//! [`ApprovalOutcome`], [`Staleness`]), policies and decisions, the controller, approval requests
//! and answers. Subsystems are modules, listed from the ground up — each imports only those
//! before it and the root's contract types, never one after it:
//!
//! - [`decision`] — the words every stage speaks: actions, decisions, reasons, approvers, rate
//!   slots and what a counter refuses;
//! - [`definition`] (handlers, their errors and the limits on schemas, arguments and output),
//!   [`registry`] (its errors and the look-alike name screen), [`provenance`] (where a result's
//!   values were seen, as keyed digests);
//! - [`limits`] (rate limits and their counters), [`audit`] (events, sinks, the hash-chained
//!   file, its Merkle tree and verification), [`approvals`] (pending approvals, stores, the
//!   ledger, ids and errors);
//! - [`policy`] (the `Policy` trait's companions: [`Layers`](policy::Layers), a stack where no
//!   lower layer loosens a higher one, [`Shadow`](policy::Shadow), a candidate policy tried beside
//!   the enforced one, async policies), [`rules`] (the argument-aware rule language);
//! - [`providers`] (wire formats), `workspace` (file tools confined to a directory, feature
//!   `cap-std`), `mcp` (feature `mcp`), `approval_page` (feature `approval-page`);
//! - [`clock`] (the time expiry and windows read) and [`guide`] (the user guide).
//!
//! # Crate features
//!
//! The core needs none of them (its dependencies: serde, serde_json, jsonschema without network or
//! file access, thiserror, getrandom, sha2).
//!
//! | feature | what it adds |
//! |---|---|
//! | `cap-std` | `workspace::workspace_tools`: `read_file`, `list_dir`, `write_file` confined to a directory, refusing links and special files (Unix) |
//! | `schemars` | [`ToolDefinition::typed`]: tools over a Rust argument type, the schema generated, arguments normalized so the policy sees what the handler gets |
//! | `sqlite` | [`approvals::SqliteApprovalStore`]: a durable approval ledger in a bundled SQLite; `limits::SqliteRateCounters`: rate limits shared through that file |
//! | `postgres` | `approvals::PostgresApprovalStore`, `audit::PostgresAuditSink` and `limits::PostgresRateCounters`: approvals consumed once, one audit chain and shared rate limits across several servers |
//! | `mcp` | `mcp::McpServer` (a controller served over MCP through `rmcp`), the parts the `toolgate-gateway` crate joins, approvals over the protocol |
//! | `approval-page` | `approval_page::ApprovalPage`: any controller's waiting calls in a browser page and its JSON API (axum), for signed-in approvers |
//! | `checkpoints` | `audit::checkpoint`: the audit log's tree head as a C2SP checkpoint, signed and verified with Ed25519 (signed notes, witness cosignatures) |
//! | `tracing` | spans for `handle` and `resolve` (ids and names, never argument values) and [`audit::TracingAuditSink`] |
//! | `unicode` | text compared as a person reads it: NFKC, invisible characters removed and case folded for text conditions and rate-limit keys ([`rules::TextOptions`]), and UTS #39 look-alike checks that let a registry hold non-ASCII tool names |
//!
//! # Example
//!
//! ```
//! use serde_json::{json, Value};
//! use toolgate::*;
//!
//! let add = |args: &Value| -> Result<String, ToolError> {
//!     let (a, b) = (args["a"].as_i64().unwrap_or(0), args["b"].as_i64().unwrap_or(0));
//!     a.checked_add(b).map(|sum| sum.to_string()).ok_or_else(|| ToolError::new("overflow"))
//! };
//! let calculator = ToolDefinition::new(
//!     ToolSpec::new(
//!         "calculator",
//!         "Add exactly two integers named a and b.",
//!         json!({
//!             "type": "object",
//!             "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
//!             "required": ["a", "b"],
//!             "additionalProperties": false
//!         }),
//!     ),
//!     add,
//! )?;
//! let controller = ToolController::new(
//!     ToolRegistry::new([calculator])?,
//!     ToolPolicy::new(["calculator"], Vec::<String>::new())?,
//! );
//!
//! let outcome = controller.handle(ToolCall::new("call_1", "calculator", json!({"a": 40, "b": 2})));
//! assert_eq!(outcome, Outcome::Completed(ToolResult::ok("call_1", "42")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The workspace's lints (Cargo.toml: forbidden code, docs, Debug) apply; this one is the
// library's alone — its test and bench targets share helpers through `pub`.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

#[cfg(feature = "approval-page")]
pub mod approval_page;
pub mod approvals;
pub mod audit;
mod authorized;
mod canonical;
mod cause;
pub mod clock;
mod contract;
mod controller;
pub mod decision;
pub mod definition;
mod execute;
pub mod files;
mod gate_names;
pub mod guide;
pub mod limits;
#[cfg(feature = "mcp")]
pub mod mcp;
mod names;
pub mod policy;
#[cfg(feature = "postgres")]
mod postgres_error;
#[cfg(feature = "postgres")]
mod postgres_owner;
mod prehashed;
pub mod provenance;
pub mod providers;
mod random;
pub mod registry;
pub mod rules;
mod runtime;
mod schema_cost;
mod spaced_json;
#[cfg(feature = "sqlite")]
mod sqlite_busy;
mod text;
#[cfg(feature = "cap-std")]
pub mod workspace;

pub use approvals::{ApprovalRequest, ApprovalResponse};
pub use authorized::{ApprovalOutcome, Authorized, PolicyOutcome, Staleness};
pub use contract::{Principal, ResultBlocks, ToolCall, ToolResult, ToolSpec};
pub use controller::{Outcome, RecordError, ToolController};
pub use decision::{PolicyAction, PolicyDecision, Reason};
pub use definition::{ToolDefinition, ToolError};
pub use policy::{Policy, ToolPolicy};
pub use registry::ToolRegistry;
pub use rules::RulePolicy;
pub use runtime::{PreparedToolCall, Rejection, ToolRuntime};

/// The README's examples, compiled and run as doc tests so they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
