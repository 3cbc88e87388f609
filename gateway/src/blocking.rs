//! The library's PostgreSQL stores use the synchronous `postgres` client, which runs a runtime of
//! its own and so may not be called on a thread driving the gateway's tokio runtime. Each call
//! goes through `block_in_place`: the thread leaves the runtime for the call (its other tasks move
//! to other workers), nothing is held across an await. Dropping such a client shuts its runtime
//! down, which tokio refuses (a panic) on a runtime thread, so the wrapper drops it on a thread of
//! its own.

use toolgate::approvals::{
    Admit, ApprovalError, ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore,
    ExecutionOutcome, Transition,
};
use toolgate::audit::{AuditError, AuditEvent, AuditSink};
use toolgate::limits::{CounterError, RateCounters, Take, Taken};

/// A blocking client, called off the async runtime and dropped off it.
#[derive(Debug)]
pub struct OffRuntime<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> OffRuntime<T> {
    pub fn new(inner: T) -> Self {
        Self(Some(inner))
    }

    fn inner(&self) -> &T {
        self.0.as_ref().expect("taken only by drop")
    }
}

impl<T: Send + 'static> Drop for OffRuntime<T> {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            drop_off_runtime(inner);
        }
    }
}

/// Drops `value` where a blocking client may shut its own runtime down: on this thread outside a
/// tokio runtime, else on a thread of its own (joined, so the connection is closed when this
/// returns). `block_in_place` is not enough: it panics on a current-thread runtime, and a drop
/// may run on any thread.
pub fn drop_off_runtime<T: Send + 'static>(value: T) {
    if tokio::runtime::Handle::try_current().is_err() {
        drop(value);
        return;
    }
    // Shared with the thread, so a thread that cannot start does not drop it here.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(value)));
    let theirs = std::sync::Arc::clone(&slot);
    let dropped = std::thread::Builder::new()
        .name("toolgate-drop".into())
        .spawn(move || drop(theirs.lock().map(|mut value| value.take())));
    match dropped {
        // A panic in the drop is the client's own; it was not raised on a runtime thread.
        Ok(thread) => {
            let _ = thread.join();
        }
        Err(error) => {
            tracing::error!(
                "could not start a thread to close a database connection ({error}); it stays open until the process exits"
            );
            if let Ok(mut value) = slot.lock() {
                std::mem::forget(value.take());
            }
        }
    }
}

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
        off_runtime(|| {
            self.inner()
                .insert(request, expires_ms, max_pending, now_ms)
        })
    }

    fn take(
        &self,
        approval_id: ApprovalId,
        transition: Transition,
        admit: Admit<'_>,
        now_ms: u64,
    ) -> Result<(ApprovalRequest, bool), ApprovalError> {
        off_runtime(|| self.inner().take(approval_id, transition, admit, now_ms))
    }

    fn waiting(
        &self,
        approval_id: ApprovalId,
        now_ms: u64,
    ) -> Result<Option<ApprovalRequest>, ApprovalError> {
        off_runtime(|| self.inner().waiting(approval_id, now_ms))
    }

    fn pending(&self, now_ms: u64) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        off_runtime(|| self.inner().pending(now_ms))
    }

    fn record_outcome(
        &self,
        approval_id: ApprovalId,
        outcome: ExecutionOutcome,
    ) -> Result<(), ApprovalError> {
        off_runtime(|| self.inner().record_outcome(approval_id, outcome))
    }

    fn state(&self, approval_id: ApprovalId) -> Result<Option<ApprovalState>, ApprovalError> {
        off_runtime(|| self.inner().state(approval_id))
    }
}

impl<T: AuditSink> AuditSink for OffRuntime<T> {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        off_runtime(|| self.inner().record(event))
    }

    fn record_deferred(&self, event: &AuditEvent) -> Result<(), AuditError> {
        off_runtime(|| self.inner().record_deferred(event))
    }

    fn sync(&self) -> Result<(), AuditError> {
        off_runtime(|| self.inner().sync())
    }
}

impl<T: RateCounters> RateCounters for OffRuntime<T> {
    fn take(&self, takes: &[Take<'_>], now_ms: u64) -> Result<Taken, CounterError> {
        off_runtime(|| self.inner().take(takes, now_ms))
    }
}

impl<T: toolgate::approval_page::AuditView> toolgate::approval_page::AuditView for OffRuntime<T> {
    fn snapshot(&self, limit: usize) -> Result<toolgate::approval_page::AuditSnapshot, String> {
        off_runtime(|| self.inner().snapshot(limit))
    }
}
