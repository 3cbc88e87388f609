//! Where waiting requests live: the store trait every ledger implements.

use std::fmt;

use super::{ApprovalError, ApprovalId, ApprovalRequest, ApprovalState, ExecutionOutcome};

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

/// Where waiting requests live: in memory ([`MemoryApprovalStore`](super::MemoryApprovalStore), the default) or durably
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

/// A store shared by reference: what one process holds for its controller and, say, a command
/// listing what waits.
impl<S: ApprovalStore + ?Sized> ApprovalStore for std::sync::Arc<S> {
    fn insert(
        &self,
        request: &ApprovalRequest,
        expires_ms: Option<u64>,
        max_pending: usize,
        now_ms: u64,
    ) -> Result<(), ApprovalError> {
        (**self).insert(request, expires_ms, max_pending, now_ms)
    }

    fn take(
        &self,
        approval_id: ApprovalId,
        transition: Transition,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError> {
        (**self).take(approval_id, transition, now_ms)
    }

    fn pending(&self, now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        (**self).pending(now_ms)
    }

    fn record_outcome(
        &self,
        approval_id: ApprovalId,
        outcome: ExecutionOutcome,
    ) -> Result<(), ApprovalError> {
        (**self).record_outcome(approval_id, outcome)
    }

    fn state(&self, approval_id: ApprovalId) -> Result<Option<ApprovalState>, ApprovalError> {
        (**self).state(approval_id)
    }
}
