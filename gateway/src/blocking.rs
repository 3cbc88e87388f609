//! The library's PostgreSQL stores use the synchronous `postgres` client, which runs a runtime of
//! its own and so may not be called on a thread driving the gateway's tokio runtime. Each call
//! goes through `block_in_place`: the thread leaves the runtime for the call (its other tasks move
//! to other workers), nothing is held across an await.

use toolgate::approvals::ApprovalError;
use toolgate::approvals::ApprovalId;
use toolgate::approvals::{
    ApprovalRequest, ApprovalState, ApprovalStore, ExecutionOutcome, Transition,
};
use toolgate::audit::{AuditError, AuditEvent, AuditSink};
use toolgate::limits::{CounterError, RateCounters, Take, Taken};

/// `inner`, called off the async runtime.
#[derive(Debug)]
pub struct OffRuntime<T>(pub T);

/// Runs `work` with the current thread out of the tokio runtime.
pub fn off_runtime<R>(work: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => tokio::task::block_in_place(work),
        Err(_) => work(),
    }
}

impl<T: ApprovalStore> ApprovalStore for OffRuntime<T> {
    fn insert(
        &self,
        request: &ApprovalRequest,
        expires_ms: Option<u64>,
        max_pending: usize,
        now_ms: u64,
    ) -> Result<(), ApprovalError> {
        off_runtime(|| self.0.insert(request, expires_ms, max_pending, now_ms))
    }

    fn take(
        &self,
        approval_id: ApprovalId,
        transition: Transition,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError> {
        off_runtime(|| self.0.take(approval_id, transition, now_ms))
    }

    fn pending(&self, now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        off_runtime(|| self.0.pending(now_ms))
    }

    fn record_outcome(
        &self,
        approval_id: ApprovalId,
        outcome: ExecutionOutcome,
    ) -> Result<(), ApprovalError> {
        off_runtime(|| self.0.record_outcome(approval_id, outcome))
    }

    fn state(&self, approval_id: ApprovalId) -> Result<Option<ApprovalState>, ApprovalError> {
        off_runtime(|| self.0.state(approval_id))
    }
}

impl<T: AuditSink> AuditSink for OffRuntime<T> {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        off_runtime(|| self.0.record(event))
    }

    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        off_runtime(|| self.0.record_deferred(event))
    }

    fn sync(&self) -> Result<(), AuditError> {
        off_runtime(|| self.0.sync())
    }
}

impl<T: RateCounters> RateCounters for OffRuntime<T> {
    fn take(&self, takes: &[Take<'_>], now_ms: u64) -> Result<Taken, CounterError> {
        off_runtime(|| self.0.take(takes, now_ms))
    }
}
