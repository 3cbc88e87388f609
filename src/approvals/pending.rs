//! The requests waiting for a person, in front of a store.

use std::sync::Arc;

use super::{
    Answered, Approval, ApprovalError, ApprovalId, ApprovalLimits, ApprovalRequest,
    ApprovalResponse, ApprovalState, ApprovalStore, Approvers, ExecutionOutcome,
    MemoryApprovalStore, Transition, Verdict,
};
use crate::canonical::{call_hash, hex_digest};
use crate::clock::{Clock, SystemClock, duration_ms};
use crate::decision::Reason;
use crate::runtime::PreparedToolCall;

/// The requests waiting for a person, each answerable exactly once.
///
/// # Expiry
///
/// A request made at time `t` with a time to live `T` can be answered up to `t + T - 1 ms`; from
/// `t + T` on it is expired: answering it gives [`Answered::Expired`] (a denial), and it is no
/// longer listed or counted against [`ApprovalLimits::max_pending`]. Times are read from a
/// [`Clock`] — the system's wall clock unless [`with_clock`](Self::with_clock) sets another — when
/// a request is made, answered, revoked or listed. A request once answered or revoked (expired or
/// not) is never pending again, even if the clock is later set back; one not yet taken is judged by
/// the clock at each read. `PostgresApprovalStore` (feature `postgres`) is
/// the exception: it judges expiry by the database server's clock, and uses this clock only to
/// compute the time to live.
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::*;
/// use toolgate::approvals::{Answered, PendingApprovals};
///
/// let patch = |_: &Value| -> Result<String, ToolError> { Ok("patched".into()) };
/// let spec = ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"}));
/// let runtime = ToolRuntime::new(ToolRegistry::new([ToolDefinition::new(spec, patch)?])?);
/// let prepared = runtime.prepare(ToolCall::new("c1", "apply_patch", json!({"patch": "..."})))?;
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
    clock: Arc<dyn Clock>,
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
            clock: Arc::new(SystemClock),
        }
    }

    /// The same requests, with expiry judged by `clock` instead of the system's wall clock (a
    /// [`ManualClock`](crate::clock::ManualClock) in tests and simulations). Set it before the
    /// first request: expiry times already stored were read from the previous clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// use serde_json::{json, Value};
    /// use toolgate::*;
    /// use toolgate::approvals::{Answered, ApprovalLimits, PendingApprovals};
    /// use toolgate::clock::ManualClock;
    ///
    /// # let patch = |_: &Value| -> Result<String, ToolError> { Ok("patched".into()) };
    /// # let spec = ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"}));
    /// # let runtime = ToolRuntime::new(ToolRegistry::new([ToolDefinition::new(spec, patch)?])?);
    /// # let prepared = runtime.prepare(ToolCall::new("c1", "apply_patch", json!({})))?;
    /// let clock = ManualClock::new(1_000);
    /// let limits = ApprovalLimits::default().with_time_to_live(Some(Duration::from_secs(60)));
    /// let pending = PendingApprovals::with_limits(limits).with_clock(clock.clone());
    /// let request = pending.request(prepared, Reason::new("writes files")?)?;
    /// clock.advance(Duration::from_secs(60));
    /// assert!(pending.is_empty());
    /// let answer = pending.answer(ApprovalResponse::approve(request.approval_id))?;
    /// assert!(matches!(answer, Answered::Expired(_)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.set_clock(Arc::new(clock));
        self
    }

    /// Shares the controller's clock (`ToolController::with_clock`) rather than wrapping it again.
    pub(crate) fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    /// Keeps the limits and the clock (the controller's `with_approval_store`).
    pub(crate) fn set_store(&mut self, store: impl ApprovalStore + 'static) {
        self.store = Arc::new(store);
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
        self.hold(prepared, reason, Vec::new())
    }

    /// [`request`](Self::request), answerable only by `approvers` (every one must admit the
    /// answer's approver).
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request).
    pub fn request_for(
        &self,
        prepared: PreparedToolCall,
        reason: Reason,
        approvers: Vec<Arc<Approvers>>,
    ) -> Result<ApprovalRequest, ApprovalError> {
        self.hold(prepared, reason, approvers)
    }

    fn hold(
        &self,
        prepared: PreparedToolCall,
        reason: Reason,
        approvers: Vec<Arc<Approvers>>,
    ) -> Result<ApprovalRequest, ApprovalError> {
        let definition = prepared.definition();
        // The definition keeps the hasher after its name and digest: only the arguments are
        // hashed here, once.
        let digest = hex_digest(&call_hash(
            definition.call_prefix().clone(),
            prepared.arguments(),
        ));
        let definition_digest = definition.digest().to_owned();
        let now = self.clock.now_ms();
        let expires = self
            .limits
            .time_to_live
            .map(|time_to_live| now.saturating_add(duration_ms(time_to_live)));
        let request = ApprovalRequest {
            approval_id: ApprovalId::random()?,
            digest,
            definition_digest,
            call: prepared.into_call(),
            reason,
            approvers,
            requested_at_ms: now,
            expires_at_ms: expires,
        };
        self.store
            .insert(&request, expires, self.limits.max_pending, now)?;
        Ok(request)
    }

    /// The request `approval_id` names, if it waits unexpired: read, not taken.
    pub(crate) fn waiting(
        &self,
        approval_id: ApprovalId,
    ) -> Result<Option<ApprovalRequest>, ApprovalError> {
        self.store.waiting(approval_id, self.clock.now_ms())
    }

    /// Takes the request out and records the verdict. Of any number of answers to one id, on any
    /// number of threads (or processes sharing a durable store), exactly one succeeds (G5).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] if no request with that id is waiting;
    /// [`ApprovalError::ApproverRefused`] if its approvers do not admit whoever answered, and
    /// [`ApprovalError::NotTheCallRead`] if the answer names another digest (it keeps waiting
    /// either way); [`ApprovalError::Store`] if the store failed (nothing was approved then).
    pub fn answer(&self, response: ApprovalResponse) -> Result<Answered, ApprovalError> {
        let transition = match response.verdict {
            Verdict::Approve => Transition::Approve,
            Verdict::Reject => Transition::Reject,
        };
        let admit = |request: &ApprovalRequest| admits(&response, request);
        let (request, expired) = self.store.take(
            response.approval_id,
            transition,
            &admit,
            self.clock.now_ms(),
        )?;
        if expired {
            return Ok(Answered::Expired(request));
        }
        // Again, on what was taken: a store that skipped the check spent a request the answer
        // does not fit, and nothing runs for it.
        if let Err(refused) = admits(&response, &request) {
            if transition == Transition::Approve {
                let _ = self
                    .store
                    .record_outcome(response.approval_id, ExecutionOutcome::Error);
            }
            return Err(refused);
        }
        Ok(match response.verdict {
            Verdict::Approve => Answered::Approved(Approval {
                request,
                edited_arguments: response.edited_arguments,
                approver: response.approver,
                out_of_band: response.out_of_band,
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
            .take(
                approval_id,
                Transition::Revoke,
                &super::admit_any,
                self.clock.now_ms(),
            )?
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
        self.store.pending(self.clock.now_ms())
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

/// What an answer requires of the request it takes, checked inside the store's take: the call the
/// person read (when the answer names its digest), and an approver every one of the request's
/// approvers admits (out of band, never the asker unless a rule allows it). A refusal leaves the
/// request waiting for an answer that fits.
fn admits(response: &ApprovalResponse, request: &ApprovalRequest) -> Result<(), ApprovalError> {
    let approval_id = response.approval_id;
    // Who answers first: to someone who may not answer, a digest check would say whether a
    // guess at the arguments was right.
    let approvers = request.approvers.iter().map(|approvers| &**approvers);
    let asker = request.call.principal.as_deref();
    let admitted = if response.out_of_band {
        crate::decision::admitted_out_of_band(approvers, response.approver.as_ref(), asker)
    } else {
        crate::decision::admitted_by_all(approvers, response.approver.as_ref(), asker)
    };
    admitted.map_err(|refusal| ApprovalError::ApproverRefused {
        approval_id,
        refusal,
    })?;
    if response
        .digest
        .as_ref()
        .is_some_and(|digest| *digest != request.digest)
    {
        return Err(ApprovalError::NotTheCallRead { approval_id });
    }
    Ok(())
}
