//! One-time approvals: calls held for a person's answer.

mod id;
mod memory;
mod pending;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
#[cfg(test)]
mod tests;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::canonical::{call_digest, call_hash, digest_is};
use crate::cause::Cause;
use crate::contract::{Redacted, ToolCall};
use crate::decision::Reason;

// The vocabulary moved to `crate::decision`; these paths keep naming it until the next release.
#[doc(hidden)]
pub use crate::decision::{ApproverRefusal, Approvers};
pub use id::{ApprovalId, ApprovalIdError};
pub use memory::MemoryApprovalStore;
pub use pending::PendingApprovals;
#[cfg(feature = "postgres")]
pub use postgres::{ApprovalChange, ApprovalChanges, PostgresApprovalStore};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteApprovalStore;
pub use store::{Admit, ApprovalStore, Transition, admit_any};

/// A call held for a person's confirmation. Its handler has not run.
///
/// Holding a request grants nothing: only [`PendingApprovals::answer`] with its id does, once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The id to answer with.
    pub approval_id: ApprovalId,
    /// The exact call that would run.
    pub call: ToolCall,
    /// Why the policy asked.
    pub reason: Reason,
    /// What the approval binds to: `sha256:` over the tool name and the tool definition's digest,
    /// each followed by a NUL byte, and the canonical arguments (sorted keys, no whitespace, one
    /// spelling per number).
    pub digest: String,
    /// The digest of the tool's definition when the call was held
    /// ([`ToolDefinition::digest`](crate::ToolDefinition::digest)); if the tool's definition
    /// differs when the request is answered, the approval is stale and the call is denied.
    pub definition_digest: String,
    /// Who may answer, as the asking rules named them (see [`Approvers`]); every entry must admit
    /// the approver. Empty: anyone who can answer may.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<std::sync::Arc<Approvers>>,
    /// When the call was held, in milliseconds since the Unix epoch (by the approvals' clock).
    #[serde(default)]
    pub requested_at_ms: u64,
    /// When it expires, if it does (by the approvals' clock; a PostgreSQL store judges expiry by
    /// the server's): for showing the time left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
}

impl ApprovalRequest {
    /// Recomputes the digest from the request's own call and recorded definition digest: `false`
    /// means the stored request was altered after it was made.
    pub fn digest_matches(&self) -> bool {
        call_digest(
            &self.call.tool_name,
            &self.definition_digest,
            &self.call.arguments,
        ) == self.digest
    }

    /// [`digest_matches`](Self::digest_matches), given the hasher after this request's tool name
    /// and definition digest (a definition with that name and digest keeps it).
    pub(crate) fn digest_matches_from(&self, prefix: &sha2::Sha256) -> bool {
        digest_is(
            &self.digest,
            &call_hash(prefix.clone(), &self.call.arguments),
        )
    }
}

/// A person's answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Verdict {
    /// Run the call (after it is re-prepared and re-decided).
    Approve,
    /// Do not run the call; the model is told it was rejected.
    Reject,
}

/// A person's answer to one approval request.
///
/// # Examples
///
/// ```
/// use toolgate::ApprovalResponse;
/// use toolgate::approvals::Verdict;
///
/// let id = "0123456789abcdef0123456789abcdef".parse()?;
/// let response = ApprovalResponse::approve(id);
/// assert_eq!(response.verdict, Verdict::Approve);
/// # Ok::<(), toolgate::approvals::ApprovalIdError>(())
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalResponse {
    /// The request answered.
    pub approval_id: ApprovalId,
    /// The answer.
    pub verdict: Verdict,
    /// Arguments the person changed before approving, replacing the proposed ones. The edited
    /// call is a new proposal: validated against the tool's schema and decided by the policy like
    /// any call (a denial wins), and bound to its own digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_arguments: Option<serde_json::Value>,
    /// Who answered: an id the audit log records on the approval's event (a principal's id, an
    /// operator's name). `None`: the audit log names no one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<crate::Principal>,
    /// What the person wrote with the answer; the audit log records it (bounded in length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The digest of the call the person read ([`ApprovalRequest::digest`]): the answer is then
    /// for *that* call. The store checks it in the step that takes the request; a request that
    /// holds another call is not taken ([`ApprovalError::NotTheCallRead`]) and keeps waiting.
    /// `None`: the answer is for whatever the id holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Answered outside the asker's own client (the approval page, a command line): there the
    /// asker may not answer its own call unless every rule that asks allows it. Set with
    /// [`out_of_band`](Self::out_of_band); never unset.
    #[serde(skip)]
    pub(crate) out_of_band: bool,
}

/// Edited arguments are never printed: they may hold secrets.
impl fmt::Debug for ApprovalResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalResponse")
            .field("approval_id", &self.approval_id)
            .field("verdict", &self.verdict)
            .field(
                "edited_arguments",
                &self.edited_arguments.as_ref().map(|_| Redacted),
            )
            .field(
                "approver",
                &self.approver.as_ref().map(|approver| &approver.id),
            )
            .field("note", &self.note.as_ref().map(|_| Redacted))
            .field("digest", &self.digest)
            .finish()
    }
}

impl ApprovalResponse {
    /// Approve the request with this id.
    pub fn approve(approval_id: ApprovalId) -> Self {
        Self {
            approval_id,
            verdict: Verdict::Approve,
            edited_arguments: None,
            approver: None,
            note: None,
            digest: None,
            out_of_band: false,
        }
    }

    /// Approve the request with this id, with `arguments` in place of the proposed ones.
    pub fn approve_edited(approval_id: ApprovalId, arguments: serde_json::Value) -> Self {
        Self {
            approval_id,
            verdict: Verdict::Approve,
            edited_arguments: Some(arguments),
            approver: None,
            note: None,
            digest: None,
            out_of_band: false,
        }
    }

    /// Reject the request with this id.
    pub fn reject(approval_id: ApprovalId) -> Self {
        Self {
            approval_id,
            verdict: Verdict::Reject,
            edited_arguments: None,
            approver: None,
            note: None,
            digest: None,
            out_of_band: false,
        }
    }

    /// The same answer, given by the principal with id `approver`, in no group (recorded in the
    /// audit log). A rule naming approvers by group admits an approver only through
    /// [`by_principal`](Self::by_principal).
    #[must_use]
    pub fn by(self, approver: impl Into<String>) -> Self {
        self.by_principal(crate::Principal::new(approver, Vec::<String>::new()))
    }

    /// The same answer, for the call with this digest only — the one the person read (see
    /// [`digest`](Self::digest)).
    #[must_use]
    pub fn for_digest(mut self, digest: impl Into<String>) -> Self {
        self.digest = Some(digest.into());
        self
    }

    /// The same answer, given outside the asker's client — on a page, at a command line, in a
    /// chat: then the call's asker may not answer it unless every rule that asks allows it
    /// ([`Approvers::allow_self`](crate::decision::Approvers::allow_self)), as on
    /// [the approval page](crate::approval_page). Only ever stricter: an answer not so marked is
    /// taken as the asker's own client confirming its call.
    #[must_use]
    pub fn out_of_band(mut self) -> Self {
        self.out_of_band = true;
        self
    }

    /// The same answer, given by `approver`, as authenticated with its groups: what a rule's
    /// [`Approvers`] judge.
    #[must_use]
    pub fn by_principal(mut self, approver: crate::Principal) -> Self {
        self.approver = Some(approver);
        self
    }

    /// The same answer, with the person's note (recorded in the audit log).
    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// Why an approval could not be requested or answered. Not a tool result: the person or the
/// program answering is at fault, not the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No request with this id is waiting: it never existed or was already answered. Nothing ran.
    #[error("no pending approval with id {approval_id}: unknown or already answered")]
    NotPending {
        /// The id that was answered.
        approval_id: ApprovalId,
    },
    /// The OS random generator failed, so no unguessable id could be made; the call was not held.
    #[error("the operating system's random generator is unavailable")]
    RandomnessUnavailable,
    /// The approval store failed (I/O, a corrupt or newer-version ledger). Nothing was approved
    /// or held; fix the store.
    #[error("approval store: {0}")]
    Store(#[source] StoreError),
    /// The answer came from someone the asking rule does not let answer; the request still
    /// waits for someone who may, and nothing ran.
    #[error("approval {approval_id} was not answered: {refusal}")]
    ApproverRefused {
        /// The request, still waiting.
        approval_id: ApprovalId,
        /// Why this approver may not answer it.
        refusal: ApproverRefusal,
    },
    /// The answer was given for another call than the one the id holds now (its
    /// [`digest`](ApprovalResponse::digest) differs): the request still waits, unanswered, and
    /// nothing ran. Read the call again and answer what it is.
    #[error(
        "approval {approval_id} was not answered: it holds another call than the one that was read (its digest differs)"
    )]
    NotTheCallRead {
        /// The request, still waiting.
        approval_id: ApprovalId,
    },
    /// As many requests as [`ApprovalLimits::max_pending`] already wait; the call was not held.
    /// Answer or revoke some, or raise the limit.
    #[error("too many calls are waiting for approval (limit {limit})")]
    TooManyPending {
        /// The limit in force.
        limit: usize,
    },
}

/// What went wrong in an approval store, keeping the error that caused it (SQLite, I/O, JSON) as
/// its [`source`](std::error::Error::source).
///
/// # Examples
///
/// ```
/// use std::error::Error;
/// use toolgate::approvals::StoreError;
///
/// let io = std::io::Error::other("disk full");
/// let error = StoreError::caused_by("cannot write the ledger", io);
/// assert_eq!(error.to_string(), "cannot write the ledger");
/// assert!(error.source().is_some_and(|cause| cause.is::<std::io::Error>()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    message: String,
    // Not compared: two store errors are equal when they say the same.
    cause: Cause,
}

impl StoreError {
    /// A failure the store found itself (a newer ledger version, a failed integrity check).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cause: Cause::default(),
        }
    }

    /// A failure caused by `cause`, described by `message`.
    pub fn caused_by(
        message: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            message: message.into(),
            cause: Cause::of(cause),
        }
    }

    /// What the store reported.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.source()
    }
}

/// Bounds on waiting requests, so memory stays bounded and old asks do not linger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalLimits {
    /// How long a request may wait; answering it later denies the call as expired. `None`: no
    /// expiry. Default: one hour.
    pub time_to_live: Option<Duration>,
    /// How many requests may wait at once; past it a new ask is denied. Default: 1,024.
    pub max_pending: usize,
}

impl Default for ApprovalLimits {
    fn default() -> Self {
        Self {
            time_to_live: Some(Duration::from_secs(3600)),
            max_pending: 1024,
        }
    }
}

impl ApprovalLimits {
    /// The default limits with another time to live.
    pub fn with_time_to_live(mut self, time_to_live: Option<Duration>) -> Self {
        self.time_to_live = time_to_live;
        self
    }

    /// The default limits with another cap on waiting requests.
    pub fn with_max_pending(mut self, max_pending: usize) -> Self {
        self.max_pending = max_pending;
        self
    }
}

/// A consumed approval: proof that a person approved this request and that the request was
/// taken out of [`PendingApprovals`], so no other answer can use it (G5).
///
/// Not `Clone`: it is spent by [`Authorized::by_approval`](crate::Authorized::by_approval).
#[must_use = "an approval that is not passed to `Authorized::by_approval` runs nothing"]
pub struct Approval {
    request: ApprovalRequest,
    edited_arguments: Option<serde_json::Value>,
    // Who answered: `by_approval` checks them against the approvers the policy in force names.
    approver: Option<crate::Principal>,
    // Whether the answer came out of band (the approval page): `by_approval` then holds the
    // asker to the `allow_self` of the policy in force too, as the store held it to the request's.
    pub(crate) out_of_band: bool,
}

/// The request prints as its own `Debug` does (arguments redacted); edited arguments never print.
impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Approval")
            .field("request", &self.request)
            .field(
                "edited_arguments",
                &self.edited_arguments.as_ref().map(|_| Redacted),
            )
            .field(
                "approver",
                &self.approver.as_ref().map(|approver| approver.id.as_str()),
            )
            .field("out_of_band", &self.out_of_band)
            .finish()
    }
}

impl Approval {
    /// The request that was approved.
    pub fn request(&self) -> &ApprovalRequest {
        &self.request
    }

    /// The arguments the person substituted, if they edited the call.
    pub fn edited_arguments(&self) -> Option<&serde_json::Value> {
        self.edited_arguments.as_ref()
    }

    /// Who answered, as the answer named them.
    pub fn approver(&self) -> Option<&crate::Principal> {
        self.approver.as_ref()
    }

    pub(crate) fn into_parts(
        self,
    ) -> (
        ApprovalRequest,
        Option<serde_json::Value>,
        Option<crate::Principal>,
        bool,
    ) {
        (
            self.request,
            self.edited_arguments,
            self.approver,
            self.out_of_band,
        )
    }
}

/// The outcome of answering a pending request.
#[derive(Debug)]
#[must_use]
#[non_exhaustive]
pub enum Answered {
    /// Approved and consumed; pass it to [`Authorized::by_approval`](crate::Authorized::by_approval).
    Approved(Approval),
    /// Rejected; the request is gone and nothing ran.
    Rejected(ApprovalRequest),
    /// The request outlived its time to live; expiry counts as a denial, whatever the answer.
    Expired(ApprovalRequest),
}

/// What [`ToolController::resolve_request_async`](crate::ToolController::resolve_request_async)
/// did with an answer: the result the model reads, the request it answered, and whether that
/// request had expired first (then the answer changed nothing and nothing ran).
#[derive(Debug)]
#[non_exhaustive]
pub struct Resolved {
    /// The call's result, or the error result telling why it did not run.
    pub result: crate::contract::ToolResult,
    /// The request answered.
    pub request: ApprovalRequest,
    /// It had expired before the answer: the answer counted as no answer.
    pub expired: bool,
}

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalState {
    /// Waiting for a person.
    Pending,
    /// Approved and consumed — before its handler ran. `outcome` is `None` until the handler
    /// ends: after a crash it stays `None` (unknown), and the call is never run again.
    Approved {
        /// How the handler ended, once it has.
        outcome: Option<ExecutionOutcome>,
    },
    /// Rejected by a person.
    Rejected,
    /// Answered after its time to live; counted as a denial.
    Expired,
    /// Withdrawn.
    Revoked,
}

/// How an approved call's handler ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionOutcome {
    /// The handler returned a result.
    Ok,
    /// The handler reported a failure, or the call was denied at the re-check.
    Error,
}
