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

/// What an answer requires of the request it takes — the call the person read (its digest), and
/// an approver its approvers admit — checked by the store inside `take`, in the same atomic step
/// that moves the request out of `Pending`. A refusal leaves the request pending.
pub type Admit<'a> = &'a (dyn Fn(&ApprovalRequest) -> Result<(), ApprovalError> + Sync);

/// Admits every request: withdrawing one asks nothing of it.
pub fn admit_any(_: &ApprovalRequest) -> Result<(), ApprovalError> {
    Ok(())
}

impl Transition {
    /// The state a request taken for this transition settles in, decided the same way by every
    /// store (a store of your own calls it inside `take`, before it writes anything): an expired request settles as expired whatever the answer, unchecked; an unexpired
    /// one only if `admit` accepts it — else `admit`'s error, and the store leaves it pending.
    pub fn settle(
        self,
        request: &ApprovalRequest,
        expired: bool,
        admit: Admit<'_>,
    ) -> Result<ApprovalState, ApprovalError> {
        if !expired {
            admit(request)?;
        }
        Ok(self.settled(expired))
    }

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
/// `take` shows an unexpired request to its `admit` check in that same step and leaves it pending
/// when the check refuses ([`Transition::settle`] does both). (Were a store to skip the check,
/// [`PendingApprovals`](super::PendingApprovals) checks the request it took again, and an answer
/// that does not fit it runs nothing: the request is spent.)
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
    /// expired request is stored as expired whatever the transition). An unexpired request is
    /// first shown to `admit` in the same atomic step: if it refuses, the request stays pending
    /// and its error is returned. Decide through [`Transition`]'s own check (the stores in this
    /// crate do) so every store settles a request the same way.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] if it is not pending; `admit`'s error; [`ApprovalError::Store`]
    /// on failure.
    fn take(
        &self,
        approval_id: ApprovalId,
        transition: Transition,
        admit: Admit<'_>,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError>;

    /// The request `approval_id` names if it waits unexpired — read alone. The default finds it
    /// among [`pending`](Self::pending); the stores of this crate read the one request.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] when storage fails.
    fn waiting(
        &self,
        approval_id: ApprovalId,
        now_ms: u64,
    ) -> Result<Option<ApprovalRequest>, ApprovalError> {
        Ok(self
            .pending(now_ms)?
            .into_iter()
            .find(|request| request.approval_id == approval_id))
    }

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
        admit: Admit<'_>,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError> {
        (**self).take(approval_id, transition, admit, now_ms)
    }

    fn pending(&self, now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        (**self).pending(now_ms)
    }

    fn waiting(
        &self,
        approval_id: ApprovalId,
        now_ms: u64,
    ) -> Result<Option<ApprovalRequest>, ApprovalError> {
        (**self).waiting(approval_id, now_ms)
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

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl ApprovalState {
    /// The state's name in a durable store's `state` column.
    pub(crate) fn column(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved { .. } => "approved",
            ApprovalState::Rejected => "rejected",
            ApprovalState::Expired => "expired",
            ApprovalState::Revoked => "revoked",
        }
    }

    /// A state read back from a durable store's `state` and `outcome` columns; `None` for a name
    /// no version of toolgate writes.
    pub(crate) fn from_columns(state: &str, outcome: Option<&str>) -> Option<Self> {
        let outcome = match outcome {
            None => None,
            Some("ok") => Some(ExecutionOutcome::Ok),
            Some(_) => Some(ExecutionOutcome::Error),
        };
        Some(match state {
            "pending" => ApprovalState::Pending,
            "approved" => ApprovalState::Approved { outcome },
            "rejected" => ApprovalState::Rejected,
            "expired" => ApprovalState::Expired,
            "revoked" => ApprovalState::Revoked,
            _ => return None,
        })
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl ExecutionOutcome {
    /// The outcome's name in a durable store's `outcome` column.
    pub(crate) fn column(self) -> &'static str {
        match self {
            ExecutionOutcome::Ok => "ok",
            ExecutionOutcome::Error => "error",
        }
    }
}
