//! One-time approvals: calls held for a person's answer.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::canonical::call_digest;
use crate::contract::{Redacted, ToolCall};
use crate::names::FastMap;
use crate::policy::Reason;
use crate::runtime::PreparedToolCall;

/// An approval's id: 128 bits from the operating system's randomness, shown as 32 hex digits.
///
/// # Guarantees
///
/// Ids are drawn from the OS generator, never from a counter or the clock, so an id cannot be
/// guessed or forged from the outside (G10).
///
/// # Examples
///
/// ```
/// use toolgate::ApprovalId;
///
/// let id: ApprovalId = "0123456789abcdef0123456789abcdef".parse()?;
/// assert_eq!(id.to_string(), "0123456789abcdef0123456789abcdef");
/// assert!("not-an-id".parse::<ApprovalId>().is_err());
/// # Ok::<(), toolgate::ApprovalIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApprovalId([u8; 16]);

impl ApprovalId {
    /// A fresh id from the OS's randomness.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::RandomnessUnavailable`] if the OS generator fails; no id is made up then.
    pub fn random() -> Result<Self, ApprovalError> {
        // One `getrandom` call per id cost about 570 ns here, a quarter of an ask → approve round
        // trip, so the bytes are fetched from the OS a batch at a time. Every byte still comes
        // from the OS generator and is handed out once. (A process that forks without exec
        // copies the unused batch into the child: use approvals in only one of them.)
        const IDS_PER_BATCH: usize = 32;
        thread_local! {
            static BATCH: std::cell::RefCell<([u8; 16 * IDS_PER_BATCH], usize)> =
                const { std::cell::RefCell::new(([0; 16 * IDS_PER_BATCH], IDS_PER_BATCH)) };
        }
        let from_batch = BATCH.try_with(|batch| {
            let (bytes, next) = &mut *batch.borrow_mut();
            if *next == IDS_PER_BATCH {
                getrandom::fill(bytes).map_err(|_| ApprovalError::RandomnessUnavailable)?;
                *next = 0;
            }
            let mut id = [0_u8; 16];
            id.copy_from_slice(&bytes[*next * 16..(*next + 1) * 16]);
            // Wipe what was handed out, so the buffer never holds an id in use.
            bytes[*next * 16..(*next + 1) * 16].fill(0);
            *next += 1;
            Ok(Self(id))
        });
        match from_batch {
            Ok(id) => id,
            // The thread is being torn down: ask the OS directly.
            Err(_) => {
                let mut bytes = [0_u8; 16];
                getrandom::fill(&mut bytes).map_err(|_| ApprovalError::RandomnessUnavailable)?;
                Ok(Self(bytes))
            }
        }
    }
}

impl fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApprovalId({self})")
    }
}

/// Text that is not an approval id (32 lowercase or uppercase hex digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an approval id is 32 hex digits")]
pub struct ApprovalIdError;

impl FromStr for ApprovalId {
    type Err = ApprovalIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let digits = text.as_bytes();
        if digits.len() != 32 {
            return Err(ApprovalIdError);
        }
        let mut bytes = [0_u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| ApprovalIdError)?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| ApprovalIdError)?;
        }
        Ok(Self(bytes))
    }
}

impl Serialize for ApprovalId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ApprovalId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

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
    /// What the approval binds to: `sha256:` over the tool name, the tool definition's digest and
    /// the canonical arguments (sorted keys, one spelling per number).
    pub digest: String,
    /// The digest of the tool's definition when the call was held
    /// ([`ToolDefinition::digest`](crate::ToolDefinition::digest)); if the tool's definition
    /// differs when the request is answered, the approval is stale and the call is denied.
    pub definition_digest: String,
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
/// use toolgate::{ApprovalResponse, Verdict};
///
/// let id = "0123456789abcdef0123456789abcdef".parse()?;
/// let response = ApprovalResponse::approve(id);
/// assert_eq!(response.verdict, Verdict::Approve);
/// # Ok::<(), toolgate::ApprovalIdError>(())
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
        }
    }

    /// Approve the request with this id, with `arguments` in place of the proposed ones.
    pub fn approve_edited(approval_id: ApprovalId, arguments: serde_json::Value) -> Self {
        Self {
            approval_id,
            verdict: Verdict::Approve,
            edited_arguments: Some(arguments),
        }
    }

    /// Reject the request with this id.
    pub fn reject(approval_id: ApprovalId) -> Self {
        Self {
            approval_id,
            verdict: Verdict::Reject,
            edited_arguments: None,
        }
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
    #[error("approval store: {message}")]
    Store {
        /// What the store reported.
        message: String,
    },
    /// As many requests as [`ApprovalLimits::max_pending`] already wait; the call was not held.
    /// Answer or revoke some, or raise the limit.
    #[error("too many calls are waiting for approval (limit {limit})")]
    TooManyPending {
        /// The limit in force.
        limit: usize,
    },
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

    pub(crate) fn into_parts(self) -> (ApprovalRequest, Option<serde_json::Value>) {
        (self.request, self.edited_arguments)
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

/// What answering does to a pending request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transition {
    /// Approve and consume it.
    Approve,
    /// Reject it.
    Reject,
    /// Withdraw it.
    Revoke,
}

impl Transition {
    /// The state a pending request settles in: expired wins over any answer.
    pub(crate) fn settled(self, expired: bool) -> ApprovalState {
        match (expired, self) {
            (true, _) => ApprovalState::Expired,
            (false, Transition::Approve) => ApprovalState::Approved { outcome: None },
            (false, Transition::Reject) => ApprovalState::Rejected,
            (false, Transition::Revoke) => ApprovalState::Revoked,
        }
    }
}

/// Where waiting requests live: in memory ([`MemoryApprovalStore`], the default) or durably
/// (`SqliteApprovalStore`, feature `sqlite`).
///
/// # Guarantees an implementation must keep
///
/// `take` moves a request out of `Pending` atomically: of any number of concurrent `take`s for
/// one id — from threads or processes — exactly one succeeds. A request taken for approval is
/// stored as approved before `take` returns, so a crash afterwards never makes it pending again.
pub trait ApprovalStore: Send + Sync + fmt::Debug {
    /// Stores a new pending request.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::TooManyPending`] when `max_pending` unexpired requests already wait;
    /// [`ApprovalError::Store`] when storage fails.
    fn insert(
        &self,
        request: &ApprovalRequest,
        expires_ms: Option<u64>,
        max_pending: usize,
        now_ms: u64,
    ) -> Result<(), ApprovalError>;

    /// Moves a pending request out of `Pending`, returning it and whether it had expired (an
    /// expired request is stored as expired whatever the transition).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] if it is not pending; [`ApprovalError::Store`] on failure.
    fn take(
        &self,
        approval_id: ApprovalId,
        transition: Transition,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError>;

    /// The unexpired pending requests, oldest first.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] when storage fails.
    fn pending(&self, now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError>;

    /// Records how an approved call's handler ended.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] when storage fails.
    fn record_outcome(
        &self,
        approval_id: ApprovalId,
        outcome: ExecutionOutcome,
    ) -> Result<(), ApprovalError>;

    /// Where a request stands, if the store knows it.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] when storage fails.
    fn state(&self, approval_id: ApprovalId) -> Result<Option<ApprovalState>, ApprovalError>;
}

/// Milliseconds since the Unix epoch: expiry survives restarts, so it is wall-clock time.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// How many answered requests the memory store remembers, to say where they stand.
const REMEMBERED_ANSWERS: usize = 4096;

#[derive(Debug)]
struct Held {
    request: ApprovalRequest,
    expires_ms: Option<u64>,
}

impl Held {
    fn expired(&self, now_ms: u64) -> bool {
        self.expires_ms.is_some_and(|expires| now_ms >= expires)
    }
}

#[derive(Debug, Default)]
struct Ledger {
    pending: FastMap<ApprovalId, Held>,
    answered: FastMap<ApprovalId, ApprovalState>,
    answered_order: std::collections::VecDeque<ApprovalId>,
}

/// The default store: in memory, lost on restart (requests are then never run, either).
#[derive(Debug, Default)]
pub struct MemoryApprovalStore {
    // The lock is held only to insert, remove or copy entries, never while a handler runs.
    ledger: Mutex<Ledger>,
}

impl MemoryApprovalStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Ledger> {
        // No code that can panic runs under this lock; were it ever poisoned, each operation
        // leaves the maps consistent, so carrying on is safe.
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ApprovalStore for MemoryApprovalStore {
    fn insert(
        &self,
        request: &ApprovalRequest,
        expires_ms: Option<u64>,
        max_pending: usize,
        now_ms: u64,
    ) -> Result<(), ApprovalError> {
        let mut ledger = self.lock();
        if ledger.pending.len() >= max_pending {
            let expired: Vec<ApprovalId> = ledger
                .pending
                .iter()
                .filter(|(_, held)| held.expired(now_ms))
                .map(|(id, _)| *id)
                .collect();
            for id in expired {
                ledger.pending.remove(&id);
                remember(&mut ledger, id, ApprovalState::Expired);
            }
            if ledger.pending.len() >= max_pending {
                return Err(ApprovalError::TooManyPending { limit: max_pending });
            }
        }
        ledger.pending.insert(
            request.approval_id,
            Held {
                request: request.clone(),
                expires_ms,
            },
        );
        Ok(())
    }

    fn take(
        &self,
        approval_id: ApprovalId,
        transition: Transition,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError> {
        let mut ledger = self.lock();
        let held = ledger
            .pending
            .remove(&approval_id)
            .ok_or(ApprovalError::NotPending { approval_id })?;
        let expired = held.expired(now_ms);
        remember(&mut ledger, approval_id, transition.settled(expired));
        Ok((held.request, expired))
    }

    fn pending(&self, now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        let ledger = self.lock();
        let mut held: Vec<&Held> = ledger
            .pending
            .values()
            .filter(|held| !held.expired(now_ms))
            .collect();
        held.sort_by_key(|held| held.expires_ms);
        Ok(held.into_iter().map(|held| held.request.clone()).collect())
    }

    fn record_outcome(
        &self,
        approval_id: ApprovalId,
        outcome: ExecutionOutcome,
    ) -> Result<(), ApprovalError> {
        if let Some(ApprovalState::Approved { outcome: recorded }) =
            self.lock().answered.get_mut(&approval_id)
        {
            *recorded = Some(outcome);
        }
        Ok(())
    }

    fn state(&self, approval_id: ApprovalId) -> Result<Option<ApprovalState>, ApprovalError> {
        let ledger = self.lock();
        if ledger.pending.contains_key(&approval_id) {
            return Ok(Some(ApprovalState::Pending));
        }
        Ok(ledger.answered.get(&approval_id).copied())
    }
}

fn remember(ledger: &mut Ledger, approval_id: ApprovalId, state: ApprovalState) {
    if ledger.answered_order.len() >= REMEMBERED_ANSWERS
        && let Some(oldest) = ledger.answered_order.pop_front()
    {
        ledger.answered.remove(&oldest);
    }
    ledger.answered.insert(approval_id, state);
    ledger.answered_order.push_back(approval_id);
}

/// The requests waiting for a person, each answerable exactly once.
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::*;
///
/// let patch = |_: &Value| -> Result<String, ToolError> { Ok("patched".into()) };
/// let spec = ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"}));
/// let runtime = ToolRuntime::new(ToolRegistry::new([ToolDefinition::new(spec, patch)?])?);
/// let prepared = runtime
///     .prepare(ToolCall::new("c1", "apply_patch", json!({"patch": "..."})))
///     .map_err(|result| result.content)?;
///
/// let pending = PendingApprovals::new();
/// let request = pending.request(prepared, Reason::new("writes files")?)?;
/// assert!(request.digest.starts_with("sha256:"));
/// assert!(matches!(pending.answer(ApprovalResponse::approve(request.approval_id))?, Answered::Approved(_)));
/// assert!(pending.answer(ApprovalResponse::approve(request.approval_id)).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct PendingApprovals {
    store: Arc<dyn ApprovalStore>,
    limits: ApprovalLimits,
}

impl Default for PendingApprovals {
    fn default() -> Self {
        Self::with_store(MemoryApprovalStore::new(), ApprovalLimits::default())
    }
}

impl PendingApprovals {
    /// An empty in-memory set with the default [`ApprovalLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty in-memory set with the given limits.
    pub fn with_limits(limits: ApprovalLimits) -> Self {
        Self::with_store(MemoryApprovalStore::new(), limits)
    }

    /// Requests kept in `store` (a durable one survives restarts), with the given limits.
    pub fn with_store(store: impl ApprovalStore + 'static, limits: ApprovalLimits) -> Self {
        Self {
            store: Arc::new(store),
            limits,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> ApprovalLimits {
        self.limits
    }

    pub(crate) fn set_limits(&mut self, limits: ApprovalLimits) {
        self.limits = limits;
    }

    /// Holds a prepared call for a person under a fresh random id and returns the request to show
    /// them, bound to the call's digest and its tool definition's digest.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::RandomnessUnavailable`] if no id could be drawn,
    /// [`ApprovalError::TooManyPending`] at the cap (expired requests do not count), or
    /// [`ApprovalError::Store`]; nothing is held then.
    pub fn request(
        &self,
        prepared: PreparedToolCall,
        reason: Reason,
    ) -> Result<ApprovalRequest, ApprovalError> {
        let definition_digest = prepared.definition().digest().to_owned();
        let call = prepared.into_call();
        let request = ApprovalRequest {
            approval_id: ApprovalId::random()?,
            digest: call_digest(&call.tool_name, &definition_digest, &call.arguments),
            definition_digest,
            call,
            reason,
        };
        let now = now_ms();
        let expires = self.limits.time_to_live.map(|time_to_live| {
            now.saturating_add(u64::try_from(time_to_live.as_millis()).unwrap_or(u64::MAX))
        });
        self.store
            .insert(&request, expires, self.limits.max_pending, now)?;
        Ok(request)
    }

    /// Takes the request out and records the verdict. Of any number of answers to one id, on any
    /// number of threads (or processes sharing a durable store), exactly one succeeds (G5).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] if no request with that id is waiting;
    /// [`ApprovalError::Store`] if the store failed (nothing was approved then).
    pub fn answer(&self, response: ApprovalResponse) -> Result<Answered, ApprovalError> {
        let transition = match response.verdict {
            Verdict::Approve => Transition::Approve,
            Verdict::Reject => Transition::Reject,
        };
        let (request, expired) = self
            .store
            .take(response.approval_id, transition, now_ms())?;
        if expired {
            return Ok(Answered::Expired(request));
        }
        Ok(match response.verdict {
            Verdict::Approve => Answered::Approved(Approval {
                request,
                edited_arguments: response.edited_arguments,
            }),
            Verdict::Reject => Answered::Rejected(request),
        })
    }

    /// Withdraws a waiting request (from a UI, or because its context is gone): it can no longer
    /// be answered, and nothing ran.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] if no request with that id is waiting.
    pub fn revoke(&self, approval_id: ApprovalId) -> Result<ApprovalRequest, ApprovalError> {
        Ok(self
            .store
            .take(approval_id, Transition::Revoke, now_ms())?
            .0)
    }

    /// The requests that can still be answered — call, reason and digest — for a UI to show,
    /// oldest first. An unreadable store lists nothing; [`try_list`](Self::try_list) says why.
    pub fn list(&self) -> Vec<ApprovalRequest> {
        self.try_list().unwrap_or_default()
    }

    /// As [`list`](Self::list), with the store's error.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the store cannot be read.
    pub fn try_list(&self) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        self.store.pending(now_ms())
    }

    /// Records how an approved call's handler ended.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the store failed.
    pub fn record_outcome(
        &self,
        approval_id: ApprovalId,
        outcome: ExecutionOutcome,
    ) -> Result<(), ApprovalError> {
        self.store.record_outcome(approval_id, outcome)
    }

    /// Where a request stands, if the store knows it.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the store cannot be read.
    pub fn state(&self, approval_id: ApprovalId) -> Result<Option<ApprovalState>, ApprovalError> {
        self.store.state(approval_id)
    }

    /// How many requests can still be answered.
    pub fn len(&self) -> usize {
        self.list().len()
    }

    /// Whether no request can be answered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call() -> PreparedToolCall {
        use crate::{ToolDefinition, ToolError, ToolRegistry, ToolRuntime, ToolSpec};
        let noop = |_: &serde_json::Value| -> Result<String, ToolError> { Ok(String::new()) };
        let spec = ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"}));
        let definition = ToolDefinition::new(spec, noop).unwrap();
        let runtime = ToolRuntime::new(ToolRegistry::new([definition]).unwrap());
        runtime
            .prepare(ToolCall::new("c1", "apply_patch", json!({})))
            .unwrap()
    }

    fn reason() -> Reason {
        Reason::from_static("needs a person")
    }

    #[test]
    fn ids_are_distinct_and_round_trip() {
        let ids: std::collections::HashSet<ApprovalId> =
            (0..1000).map(|_| ApprovalId::random().unwrap()).collect();
        assert_eq!(ids.len(), 1000);
        let id = *ids.iter().next().unwrap();
        assert_eq!(id.to_string().len(), 32);
        assert_eq!(id.to_string().parse::<ApprovalId>().unwrap(), id);
        let wire = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<ApprovalId>(&wire).unwrap(), id);
    }

    #[test]
    fn ids_are_distinct_across_threads_and_batches() {
        // Each thread draws several batches' worth; no id repeats within or across threads.
        let per_thread: Vec<Vec<ApprovalId>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| (0..500).map(|_| ApprovalId::random().unwrap()).collect()))
                .collect();
            workers
                .into_iter()
                .map(|worker| worker.join().unwrap())
                .collect()
        });
        let all: std::collections::HashSet<ApprovalId> =
            per_thread.iter().flatten().copied().collect();
        assert_eq!(all.len(), 2000);
        assert!(
            !all.contains(&ApprovalId([0; 16])),
            "a wiped slot was handed out"
        );
    }

    #[test]
    fn ids_use_all_128_bits() {
        // A counter or clock would leave most bits constant across draws; OS randomness flips
        // each bit in about half of them.
        let draws: Vec<[u8; 16]> = (0..256).map(|_| ApprovalId::random().unwrap().0).collect();
        for bit in 0..128 {
            let ones = draws
                .iter()
                .filter(|bytes| bytes[bit / 8] >> (bit % 8) & 1 == 1)
                .count();
            assert!((64..=192).contains(&ones), "bit {bit} set {ones}/256 times");
        }
    }

    #[test]
    fn malformed_ids_are_refused() {
        for text in [
            "",
            "abc",
            &"g".repeat(32),
            &"0".repeat(33),
            "é".repeat(16).as_str(),
        ] {
            assert!(text.parse::<ApprovalId>().is_err(), "{text:?}");
        }
        assert!(serde_json::from_str::<ApprovalId>("\"xyz\"").is_err());
    }

    #[test]
    fn answer_consumes_exactly_once() {
        let pending = PendingApprovals::new();
        let request = pending.request(call(), reason()).unwrap();
        assert_eq!(pending.len(), 1);
        assert!(matches!(
            pending.answer(ApprovalResponse::reject(request.approval_id)),
            Ok(Answered::Rejected(_))
        ));
        assert_eq!(
            pending
                .answer(ApprovalResponse::approve(request.approval_id))
                .unwrap_err(),
            ApprovalError::NotPending {
                approval_id: request.approval_id
            }
        );
        assert!(pending.is_empty());
    }

    #[test]
    fn unknown_id_is_an_error() {
        let pending = PendingApprovals::new();
        let id = ApprovalId::random().unwrap();
        assert!(matches!(
            pending.answer(ApprovalResponse::approve(id)),
            Err(ApprovalError::NotPending { .. })
        ));
    }

    #[test]
    fn list_shows_waiting_requests_with_their_calls() {
        let pending = PendingApprovals::new();
        let first = pending.request(call(), reason()).unwrap();
        let second = pending.request(call(), reason()).unwrap();
        let listed = pending.list();
        assert_eq!(listed.len(), 2);
        assert!(listed.contains(&first) && listed.contains(&second));
    }
}
