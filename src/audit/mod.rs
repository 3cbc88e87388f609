//! The audit log: every call received, every decision, every approval answered and every
//! execution outcome — written before the handler runs, so a call that could not be recorded does
//! not run (fail closed).
//!
//! `mod.rs` holds the events and the sink trait; `jsonl` the hash-chained file sink, `verify` the
//! file format and its check.

#[cfg(feature = "checkpoints")]
pub mod checkpoint;
mod commitment;
mod event_json;
mod group_commit;
mod jsonl;
pub mod merkle;
#[cfg(feature = "postgres")]
mod postgres;
mod salts;
mod torn;
pub(crate) mod tree_head;
pub(crate) mod verify;

pub use commitment::{ArgumentSalt, ArgumentSaltSyntax, Disclosure};
pub use jsonl::{AuditOpenError, JsonlAuditSink, RecoveredTail};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresAuditSink, PostgresAuditVerifyError};
pub use salts::{AuditDiscloseError, disclose_audit_arguments, forget_audit_salt};
pub use tree_head::{
    AuditExtendError, Receipt, TreeHead, TreeHeadSyntax, audit_receipt, audit_tree,
    audit_tree_head, verify_audit_extends,
};
pub use verify::{AuditEntryProblem, AuditVerifyError, ChainTip, verify_audit_file};

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::approvals::ApprovalId;
use crate::canonical::ArgumentHash;
use crate::cause::Cause;
use crate::contract::ToolCall;
use crate::decision::{PolicyAction, PolicyDecision};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditKind {
    /// The model proposed a call.
    CallReceived,
    /// The call did not prepare (unknown tool, arguments too deep or invalid), also when an
    /// approved call no longer prepares against the current tools. `reason` says which.
    RejectedAtPreparation,
    /// A policy decided.
    Decision,
    /// The call was held for a person; `reason` says why (the policy's reason).
    ApprovalRequested,
    /// A person approved; the approval was consumed.
    ApprovalApproved,
    /// The person approved edited arguments: this event carries their digest (the
    /// `ApprovalApproved` before it, the proposed arguments' digest).
    ApprovalEdited,
    /// A person rejected.
    ApprovalRejected,
    /// The request was answered after its time to live.
    ApprovalExpired,
    /// The request was withdrawn.
    ApprovalRevoked,
    /// The approval no longer covered its call (altered in the store, or the tool's definition
    /// changed while it waited); the call was denied and did not run. `reason` says which.
    ApprovalStale,
    /// The handler ran; `is_error` says how it ended.
    ExecutionOutcome,
    /// In shadow mode, the candidate policy would have decided this call differently; `action`,
    /// `rule_id` and `layer` are the candidate's, `reason` says both. Nothing changed for the call.
    ShadowDifference,
}

/// One audit record. It names the call and its tool and carries a salted commitment to the
/// arguments — never the argument values, which may be secrets, nor their bare digest, which would
/// confirm a guessed short value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuditEvent {
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// What happened.
    pub kind: AuditKind,
    /// The call's id.
    pub call_id: String,
    /// The tool's name as the model sent it (bounded in length).
    pub tool: String,
    /// `salted-sha256:` and the hex SHA-256 over the bytes `toolgate argument commitment v1`
    /// and a NUL, a fresh random salt's 16 bytes (one salt per event) and the 32-byte SHA-256 of
    /// the canonical arguments ([`ArgumentSalt::opens`] checks it). Empty in the one case no salt could be drawn (the OS
    /// generator failed): the event is still recorded, without a commitment.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub argument_commitment: String,
    /// Only in entries written before commitments (toolgate 0.x up to the hash-chain log):
    /// `sha256:` over the canonical arguments. New events never carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_digest: Option<String>,
    /// The approval involved, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<ApprovalId>,
    /// The decision's action, for `PolicyDecision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<PolicyAction>,
    /// The decision's or rejection's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The rule that decided, when a rule did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<Arc<str>>,
    /// The digest of the policy that decided, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_digest: Option<Arc<str>>,
    /// For `ExecutionOutcome` and `RejectedAtPreparation`: whether the result was an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The layer that decided, in a [`Layers`](crate::policy::Layers) stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<Arc<str>>,
    /// The id of the [`Principal`](crate::Principal) the call was made for, when one was
    /// authenticated (bounded in length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Who answered an approval (on `ApprovalApproved` and `ApprovalRejected`), when the answer
    /// named one ([`ApprovalResponse::by`](crate::approvals::ApprovalResponse::by); bounded in
    /// length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// The note the approver wrote with the answer: whole up to 2,000 characters (control and
    /// invisible characters escaped), past that cut with the whole note's digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The digest of the tool's definition the call was judged against
    /// ([`ToolDefinition::digest`](crate::ToolDefinition::digest)), on every event after the
    /// call resolved: with the policy's digest and layer and the principal, what re-checking the
    /// decision needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_digest: Option<String>,
    /// The salt of `argument_commitment`: never serialized with the event. Sinks that keep salts
    /// store it apart from the log.
    #[serde(skip)]
    pub(crate) salt: HeldSalt,
}

impl AuditEvent {
    /// The salt of this event's [`argument_commitment`](Self::argument_commitment), as the
    /// controller made it (`None` for an event read back from a log: the log never holds it).
    /// A sink that keeps salts stores it apart from the event.
    pub fn salt(&self) -> Option<&ArgumentSalt> {
        self.salt.0.as_ref()
    }

    /// The same event, naming who answered the approval and their note.
    pub(crate) fn answered_by(mut self, approver: Option<&str>, note: Option<&str>) -> Self {
        self.approver = approver.map(crate::contract::quote_bounded);
        self.note = note.map(bounded_note);
        self
    }

    /// The same event, of another kind.
    pub(crate) fn with_kind(mut self, kind: AuditKind) -> Self {
        self.kind = kind;
        self
    }
}

/// The longest note kept whole in an audit event (the approval page takes no longer one).
const NOTE_MAX_CHARS: usize = 2_000;

/// A person's note as the audit log keeps it: control and invisible characters escaped (so a note
/// cannot hide text or rewrite a terminal), and past `NOTE_MAX_CHARS` characters cut, saying so
/// with the digest of the whole note.
fn bounded_note(note: &str) -> String {
    use sha2::Digest as _;
    let mut kept = String::with_capacity(note.len().min(4 * NOTE_MAX_CHARS));
    for ch in note.chars().take(NOTE_MAX_CHARS) {
        if ch.is_control() || crate::text::is_invisible(ch) {
            kept.extend(ch.escape_unicode());
        } else {
            kept.push(ch);
        }
    }
    let total = note.chars().count();
    if total > NOTE_MAX_CHARS {
        let digest: String = sha2::Sha256::digest(note.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        kept.push_str(&format!(
            " [cut: {} of {total} characters not kept; sha256:{digest}]",
            total - NOTE_MAX_CHARS
        ));
    }
    kept
}

/// An event's salt while it is in memory. Not part of the event's equality: the log never holds
/// it, and an event read back from a log is the event that was recorded.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HeldSalt(Option<ArgumentSalt>);

impl PartialEq for HeldSalt {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// What the controller knows about a call, to stamp on each of its events.
#[derive(Debug, Clone)]
pub(crate) struct AuditSubject {
    call_id: String,
    tool: String,
    /// `None` for a sink that does not keep arguments ([`AuditSink::keeps_arguments`]).
    arguments: Option<ArgumentHash>,
    approval_id: Option<ApprovalId>,
    principal: Option<String>,
    definition_digest: Option<String>,
}

impl AuditSubject {
    /// The same subject, of a call resolved against the definition with `digest`.
    pub(crate) fn with_definition(mut self, digest: &str) -> Self {
        self.definition_digest = Some(digest.to_owned());
        self
    }

    pub(crate) fn of(call: &ToolCall) -> Self {
        Self::for_arguments(&call.call_id, &call.tool_name, &call.arguments)
            .for_principal(call.principal.as_deref())
    }

    /// The subject of `call` for `sink`: without its arguments' hash when the sink keeps no
    /// arguments.
    pub(crate) fn for_sink(call: &ToolCall, sink: &dyn AuditSink) -> Self {
        if sink.keeps_arguments() {
            return Self::of(call);
        }
        Self {
            call_id: crate::contract::quote_bounded(&call.call_id),
            tool: crate::contract::quote_bounded(&call.tool_name),
            arguments: None,
            approval_id: None,
            principal: call
                .principal
                .as_deref()
                .map(|principal| crate::contract::quote_bounded(&principal.id)),
            definition_digest: None,
        }
    }

    /// The same subject, made for `principal`.
    pub(crate) fn for_principal(mut self, principal: Option<&crate::Principal>) -> Self {
        self.principal = principal.map(|principal| crate::contract::quote_bounded(&principal.id));
        self
    }

    /// The subject of a call with other arguments (an edited approval), without building the call.
    pub(crate) fn for_arguments(call_id: &str, tool: &str, arguments: &serde_json::Value) -> Self {
        Self {
            call_id: crate::contract::quote_bounded(call_id),
            tool: crate::contract::quote_bounded(tool),
            arguments: Some(ArgumentHash::of(arguments)),
            approval_id: None,
            principal: None,
            definition_digest: None,
        }
    }

    pub(crate) fn with_approval(mut self, approval_id: ApprovalId) -> Self {
        self.approval_id = Some(approval_id);
        self
    }

    pub(crate) fn event(&self, kind: AuditKind) -> AuditEvent {
        // Each event its own salt: two events of one call do not share one either.
        let salt = self.arguments.as_ref().and_then(|_| ArgumentSalt::random());
        AuditEvent {
            time_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| {
                    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
                }),
            kind,
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            argument_commitment: salt
                .zip(self.arguments.as_ref())
                .map(|(salt, arguments)| salt.commit(arguments))
                .unwrap_or_default(),
            argument_digest: None,
            salt: HeldSalt(salt),
            approval_id: self.approval_id,
            action: None,
            reason: None,
            rule_id: None,
            policy_digest: None,
            layer: None,
            is_error: None,
            principal: self.principal.clone(),
            approver: None,
            note: None,
            definition_digest: self.definition_digest.clone(),
        }
    }

    pub(crate) fn decision(&self, decision: &PolicyDecision) -> AuditEvent {
        AuditEvent {
            action: Some(decision.action),
            reason: Some(decision.reason.to_string()),
            rule_id: decision.rule_id.clone(),
            policy_digest: decision.policy_digest.clone(),
            layer: decision.layer.clone(),
            ..self.event(AuditKind::Decision)
        }
    }
}

/// An audit record could not be written. The call it was about did not run. The error that caused
/// it (I/O, say) is its [`source`](std::error::Error::source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditError {
    /// What went wrong (an I/O error, a full disk, a sink's own reason).
    pub message: String,
    // Not compared: two audit errors are equal when they say the same.
    cause: Cause,
}

impl AuditError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cause: Cause::default(),
        }
    }

    /// An error caused by `cause`, described by `message`; `cause` stays reachable as the source.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::error::Error;
    /// use toolgate::audit::AuditError;
    ///
    /// let error = AuditError::caused_by("audit.jsonl", std::io::Error::other("disk full"));
    /// assert_eq!(error.to_string(), "audit log unavailable: audit.jsonl");
    /// assert!(error.source().is_some_and(|cause| cause.is::<std::io::Error>()));
    /// ```
    pub fn caused_by(
        message: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            message: message.into(),
            cause: Cause::of(cause),
        }
    }
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "audit log unavailable: {}", self.message)
    }
}

impl std::error::Error for AuditError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.source()
    }
}

/// Where audit events go. `record` must return only once the event is stored: a handler runs
/// only after the events leading to it were recorded.
///
/// The controller records with [`record`](Self::record) the events a handler's run depends on
/// (an allowed decision, also after an approval; a held approval's request, before the hold is
/// handed out) and with [`record_deferred`](Self::record_deferred) the rest (a call received, a
/// denial, an answer, an outcome): a sink that batches its commits then makes one durable commit
/// per call that runs, not three, and none for a call that is denied.
pub trait AuditSink: Send + Sync {
    /// Stores one event durably: when it returns `Ok`, this event and every event recorded before
    /// it (by either method) are stored.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if it could not be stored; the controller then does not run the call.
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError>;

    /// Stores one event in order, possibly without waiting for it to be durable: it is durable at
    /// the latest when a later [`record`](Self::record) or [`sync`](Self::sync) returns `Ok`
    /// (each sink says what bound it keeps besides). The default records it at once.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if it could not be stored even for later.
    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        self.record(event)
    }

    /// Whether this sink keeps what an event says of the call's arguments (its
    /// [`argument_commitment`](AuditEvent::argument_commitment) and salt). A sink that only counts
    /// events — metrics — returns `false`: the events of a call it gets are made without
    /// commitment or salt, and the arguments are not canonicalized and hashed for it. The default
    /// is `true`; a sink that stores events must not say otherwise.
    fn keeps_arguments(&self) -> bool {
        true
    }

    /// Makes every event recorded so far durable. The default has nothing to do.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if they could not be made durable.
    fn sync(&self) -> Result<(), AuditError> {
        Ok(())
    }
}

/// Keeps events in memory, for tests and for programs that ship them elsewhere.
#[derive(Debug, Default)]
pub struct MemoryAuditSink {
    events: Mutex<Vec<AuditEvent>>,
}

impl MemoryAuditSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The events so far, in order.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl AuditSink for MemoryAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
        Ok(())
    }
}

impl<S: AuditSink + ?Sized> AuditSink for Arc<S> {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        (**self).record(event)
    }

    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        (**self).record_deferred(event)
    }

    fn sync(&self) -> Result<(), AuditError> {
        (**self).sync()
    }

    fn keeps_arguments(&self) -> bool {
        (**self).keeps_arguments()
    }
}

/// Sends events to `tracing` (feature `tracing`) as `info` events with target `toolgate::audit`.
#[cfg(feature = "tracing")]
#[derive(Debug, Default, Clone, Copy)]
pub struct TracingAuditSink;

#[cfg(feature = "tracing")]
impl AuditSink for TracingAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        tracing::info!(
            target: "toolgate::audit",
            kind = ?event.kind,
            call_id = %event.call_id,
            tool = %event.tool,
            argument_commitment = %event.argument_commitment,
            approval_id = ?event.approval_id,
            action = ?event.action,
            rule_id = ?event.rule_id,
            policy_digest = ?event.policy_digest,
            layer = ?event.layer,
            is_error = ?event.is_error,
        );
        Ok(())
    }
}
