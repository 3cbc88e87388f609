//! What the controller tells the audit log and the approval store about a call: each event
//! durably or deferred, as the step after it needs, and how an execution ended.

use crate::approvals::{ApprovalId, ExecutionOutcome};
use crate::audit::{AuditError, AuditEvent, AuditKind, AuditSubject};

use super::ToolController;

impl ToolController {
    /// Records an event durably when a sink is set (`make` builds it only then): for the events a
    /// handler's run depends on — an allowed decision before the handler runs, a hold before it is
    /// handed out (it can be answered and run on another node, or after a restart). Durable with
    /// it are the events recorded before it.
    #[inline(always)]
    pub(super) fn record(
        &self,
        subject: &Option<AuditSubject>,
        make: impl FnOnce(&AuditSubject) -> AuditEvent,
    ) -> Result<(), AuditError> {
        match (&self.audit, subject) {
            (Some(sink), Some(subject)) => {
                let event = make(subject);
                #[cfg(feature = "tracing")]
                let _audit = super::observe::audit_span(event.kind).entered();
                sink.record(&event)
            }
            _ => Ok(()),
        }
    }

    /// Records an event in order without waiting for it to be durable
    /// ([`AuditSink::record_deferred`]): for every event no handler's run waits on — a call
    /// received (the decision or hold after it is recorded durably), a denial, an answer (the
    /// decision that lets the call run follows), an outcome.
    #[inline(always)]
    pub(super) fn record_deferred(
        &self,
        subject: &Option<AuditSubject>,
        make: impl FnOnce(&AuditSubject) -> AuditEvent,
    ) -> Result<(), AuditError> {
        match (&self.audit, subject) {
            (Some(sink), Some(subject)) => {
                let event = make(subject);
                #[cfg(feature = "tracing")]
                let _audit = super::observe::audit_span(event.kind).entered();
                sink.record_deferred(&event)
            }
            _ => Ok(()),
        }
    }

    /// Records in the approval store how an approved call ended (a call denied at the re-check
    /// counts as an error). Rejections and expiries have their own states; nothing to add.
    pub(super) fn settle(&self, approval_id: Option<ApprovalId>, is_error: bool) {
        if let Some(approval_id) = approval_id {
            let outcome = if is_error {
                ExecutionOutcome::Error
            } else {
                ExecutionOutcome::Ok
            };
            // The handler already ran; a store failure here leaves the outcome unknown, which is
            // what a crash would leave too.
            let _ = self.pending.record_outcome(approval_id, outcome);
        }
    }

    /// Records how an execution ended, in the audit log and (for an approved call) in the approval
    /// store. The handler already ran: a failure to record is left to the sink and store to
    /// report, not turned into a different result.
    // It takes the flag, not the result, so the result is built where it is returned.
    // Fast path: inlined, a no-op without sink or approval (the call cost ~25 instr.).
    #[inline(always)]
    pub(super) fn finished(
        &self,
        subject: &Option<AuditSubject>,
        approval_id: Option<ApprovalId>,
        is_error: bool,
    ) {
        let _ = self.record_deferred(subject, |s| AuditEvent {
            is_error: Some(is_error),
            ..s.event(AuditKind::ExecutionOutcome)
        });
        self.settle(approval_id, is_error);
    }
}
