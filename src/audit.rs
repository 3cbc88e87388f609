//! The audit log: every call received, every decision, every approval answered and every
//! execution outcome — written before the handler runs, so a call that could not be recorded does
//! not run (fail closed).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::approvals::ApprovalId;
use crate::canonical;
use crate::contract::ToolCall;
use crate::policy::{PolicyAction, PolicyDecision};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditKind {
    /// The model proposed a call.
    CallReceived,
    /// The call did not prepare: unknown tool or invalid arguments.
    RejectedAtPreparation,
    /// A policy decided.
    Decision,
    /// The call was held for a person.
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
    /// The handler ran; `is_error` says how it ended.
    ExecutionOutcome,
}

/// One audit record. It names the call and its tool and carries a digest of the arguments —
/// never the argument values, which may be secrets.
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
    /// `sha256:` over the canonical arguments.
    pub argument_digest: String,
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
}

/// What the controller knows about a call, to stamp on each of its events.
#[derive(Debug, Clone)]
pub(crate) struct AuditSubject {
    call_id: String,
    tool: String,
    argument_digest: String,
    approval_id: Option<ApprovalId>,
}

impl AuditSubject {
    pub(crate) fn of(call: &ToolCall) -> Self {
        Self {
            call_id: crate::contract::quote_bounded(&call.call_id),
            tool: crate::contract::quote_bounded(&call.tool_name),
            argument_digest: canonical::digest(&call.arguments),
            approval_id: None,
        }
    }

    pub(crate) fn with_approval(mut self, approval_id: ApprovalId) -> Self {
        self.approval_id = Some(approval_id);
        self
    }

    pub(crate) fn event(&self, kind: AuditKind) -> AuditEvent {
        AuditEvent {
            time_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| {
                    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
                }),
            kind,
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            argument_digest: self.argument_digest.clone(),
            approval_id: self.approval_id,
            action: None,
            reason: None,
            rule_id: None,
            policy_digest: None,
            is_error: None,
        }
    }

    pub(crate) fn decision(&self, decision: &PolicyDecision) -> AuditEvent {
        AuditEvent {
            action: Some(decision.action),
            reason: Some(decision.reason.to_string()),
            rule_id: decision.rule_id.clone(),
            policy_digest: decision.policy_digest.clone(),
            ..self.event(AuditKind::Decision)
        }
    }
}

/// An audit record could not be written. The call it was about did not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit log unavailable: {message}")]
pub struct AuditError {
    /// What went wrong (an I/O error, a full disk, a sink's own reason).
    pub message: String,
}

impl AuditError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Where audit events go. `record` must return only once the event is stored: a handler runs
/// only after the events leading to it were recorded.
pub trait AuditSink: Send + Sync {
    /// Stores one event.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if it could not be stored; the controller then does not run the call.
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError>;
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
}

/// The hash every chain starts from.
const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// One line of a JSON Lines audit file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChainedLine {
    seq: u64,
    prev: String,
    event: Value,
    hash: String,
}

fn line_hash(seq: u64, prev: &str, event: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(seq.to_string().as_bytes());
    hasher.update([0]);
    hasher.update(prev.as_bytes());
    hasher.update([0]);
    hasher.update(canonical::canonical_json(event).as_bytes());
    canonical::hex_digest(&hasher.finalize())
}

/// A JSON Lines audit file where each entry carries its sequence number, the previous entry's
/// hash and its own: editing, deleting or reordering an entry breaks the chain at that entry, and
/// [`verify_audit_file`] reports the first one. (Cutting entries off the end leaves a valid, shorter
/// chain: compare the last `seq` and hash with a copy kept elsewhere to detect that.)
#[derive(Debug)]
pub struct JsonlAuditSink {
    path: PathBuf,
    state: Mutex<(File, u64, String)>,
}

impl JsonlAuditSink {
    /// Opens (or creates) the file and continues its chain. An existing file is verified first.
    ///
    /// # Errors
    ///
    /// [`AuditError`] if the file cannot be opened or its chain is broken — a tampered log is not
    /// appended to.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, AuditError> {
        let path = path.as_ref().to_owned();
        let (next_seq, last_hash) = if path.exists() {
            let tip =
                verify_audit_file(&path).map_err(|error| AuditError::new(error.to_string()))?;
            (tip.entries, tip.last_hash)
        } else {
            (0, GENESIS.to_owned())
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|error| AuditError::new(format!("{}: {error}", path.display())))?;
        Ok(Self {
            path,
            state: Mutex::new((file, next_seq, last_hash)),
        })
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AuditSink for JsonlAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        let event =
            serde_json::to_value(event).map_err(|error| AuditError::new(error.to_string()))?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (file, seq, prev) = &mut *state;
        let hash = line_hash(*seq, prev, &event);
        let line = ChainedLine {
            seq: *seq,
            prev: prev.clone(),
            event,
            hash: hash.clone(),
        };
        let mut text =
            serde_json::to_string(&line).map_err(|error| AuditError::new(error.to_string()))?;
        text.push('\n');
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|error| AuditError::new(format!("{}: {error}", self.path.display())))?;
        *seq += 1;
        *prev = hash;
        Ok(())
    }
}

/// The end of a verified chain.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainTip {
    /// How many entries the file holds.
    pub entries: u64,
    /// The last entry's hash (the genesis hash for an empty file).
    pub last_hash: String,
}

/// Where an audit file's chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit file broken at line {line}: {problem}")]
pub struct AuditVerifyError {
    /// 1-based line number of the first bad entry.
    pub line: u64,
    /// What is wrong with it.
    pub problem: String,
}

/// Checks a JSON Lines audit file entry by entry and reports the first edited, deleted or
/// reordered entry.
///
/// # Errors
///
/// [`AuditVerifyError`] naming the line where the chain breaks (or the file cannot be read).
pub fn verify_audit_file(path: impl AsRef<Path>) -> Result<ChainTip, AuditVerifyError> {
    let file = File::open(path.as_ref()).map_err(|error| AuditVerifyError {
        line: 0,
        problem: format!("cannot read {}: {error}", path.as_ref().display()),
    })?;
    let mut prev = GENESIS.to_owned();
    let mut entries = 0_u64;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let number = index as u64 + 1;
        let broken = |problem: String| AuditVerifyError {
            line: number,
            problem,
        };
        let line = line.map_err(|error| broken(error.to_string()))?;
        let entry: ChainedLine = serde_json::from_str(&line)
            .map_err(|_| broken("not an audit entry (edited or truncated)".to_owned()))?;
        if entry.seq != entries {
            return Err(broken(format!(
                "sequence {} where {entries} was expected (an entry was deleted or moved)",
                entry.seq
            )));
        }
        if entry.prev != prev {
            return Err(broken(
                "does not follow the previous entry (an entry was deleted or moved)".to_owned(),
            ));
        }
        if line_hash(entry.seq, &entry.prev, &entry.event) != entry.hash {
            return Err(broken(
                "content does not match its hash (edited)".to_owned(),
            ));
        }
        prev = entry.hash;
        entries += 1;
    }
    Ok(ChainTip {
        entries,
        last_hash: prev,
    })
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
            argument_digest = %event.argument_digest,
            approval_id = ?event.approval_id,
            action = ?event.action,
            rule_id = ?event.rule_id,
            policy_digest = ?event.policy_digest,
            is_error = ?event.is_error,
        );
        Ok(())
    }
}
