//! The default approval store: in memory.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{
    ApprovalError, ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore, ExecutionOutcome,
    Transition, store::Admit,
};
use crate::names::FastMap;

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
        // Only an answer's `admit` check may panic under this lock, and it runs before anything
        // changes: each operation leaves the maps consistent, so carrying on after a poisoned lock
        // is safe.
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
        admit: Admit<'_>,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError> {
        let mut ledger = self.lock();
        let held = ledger
            .pending
            .get(&approval_id)
            .ok_or(ApprovalError::NotPending { approval_id })?;
        let expired = held.expired(now_ms);
        // Under the lock: no other answer sees the request between the check and the removal.
        let settled = transition.settle(&held.request, expired, admit)?;
        let held = ledger
            .pending
            .remove(&approval_id)
            .ok_or(ApprovalError::NotPending { approval_id })?;
        remember(&mut ledger, approval_id, settled);
        Ok((held.request, expired))
    }

    fn waiting(
        &self,
        approval_id: ApprovalId,
        now_ms: u64,
    ) -> Result<Option<ApprovalRequest>, ApprovalError> {
        let ledger = self.lock();
        Ok(ledger
            .pending
            .get(&approval_id)
            .filter(|held| !held.expired(now_ms))
            .map(|held| held.request.clone()))
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
