//! The pipeline, written once for the sync and async forms: gate → record → run, for proposed
//! calls and for a person's answers. Every stage returns a typed outcome; a `ToolResult` is made
//! only here, at the edge, after the audit log has been told exactly what happened.

use std::sync::Arc;

use super::gate::Gate;
use super::limit::Stage;
use super::{Outcome, ToolController};
use crate::audit::{AuditError, AuditEvent, AuditKind, AuditSubject};
use crate::authorized::{Authorized, PolicyOutcome};
use crate::contract::{ToolCall, ToolResult};
use crate::decision::{PolicyAction, PolicyDecision};
use crate::definition::block_on;
use crate::policy::AsyncCheck;
use crate::runtime::PreparedToolCall;

/// The error result for a call that did not run because its audit record could not be written.
pub(super) fn unrecorded(call_id: String, error: &AuditError) -> ToolResult {
    ToolResult::error(call_id, format!("not run: {error}"))
}

impl ToolController {
    /// `handle`, on this thread: gate, then run what was authorized. A blocking handler is called
    /// directly, and an async one is driven to completion here ([`ToolRuntime::execute`]).
    // Fast path: no future for a blocking handler (building and polling one cost ~400 instr.).
    ///
    /// [`ToolRuntime::execute`]: crate::ToolRuntime::execute
    pub(super) fn handle_blocking(&self, call: ToolCall) -> Outcome {
        // Fast path: gate and subject lent to each step (returning them cost ~100 instr.).
        let mut subject = self
            .audit
            .as_ref()
            .map(|sink| AuditSubject::for_sink(&call, sink.as_ref()));
        let (gate, prepared) = match self.prepare_call(call, &mut subject) {
            Err(result) => return Outcome::Completed(result),
            Ok(parts) => parts,
        };
        let authorized = match self.allowed_by_name(&gate, prepared) {
            Ok(authorized) => authorized,
            Err(prepared) => {
                // Changed in place, not moved through a `match`: a decision is 80 bytes.
                let (mut decision, limited) = gate.decide(&prepared);
                if let Some(check) = self.check_needed(&decision) {
                    decision = block_on(check.decide(&prepared));
                }
                match self.gate_call(&gate, prepared, &subject, decision, limited) {
                    Ok(authorized) => authorized,
                    Err(outcome) => return outcome,
                }
            }
        };
        let observing = self.observing(&gate, &authorized);
        let result = gate.runtime.execute(authorized);
        let result = self.observed(observing, result);
        self.finished(&subject, None, result.is_error);
        Outcome::Completed(result)
    }

    /// `handle_async`: the same steps as [`handle_blocking`](Self::handle_blocking), with the
    /// handler awaited.
    pub(super) async fn handle_steps(&self, call: ToolCall) -> Outcome {
        let mut subject = self
            .audit
            .as_ref()
            .map(|sink| AuditSubject::for_sink(&call, sink.as_ref()));
        let (gate, prepared) = match self.prepare_call(call, &mut subject) {
            Err(result) => return Outcome::Completed(result),
            Ok(parts) => parts,
        };
        let authorized = match self.allowed_by_name(&gate, prepared) {
            Ok(authorized) => authorized,
            Err(prepared) => {
                // Changed in place, not moved through a `match`: a decision is 80 bytes.
                let (mut decision, limited) = gate.decide(&prepared);
                if let Some(check) = self.check_needed(&decision) {
                    decision = check.decide(&prepared).await;
                }
                match self.gate_call(&gate, prepared, &subject, decision, limited) {
                    Ok(authorized) => authorized,
                    Err(outcome) => return outcome,
                }
            }
        };
        let observing = self.observing(&gate, &authorized);
        let result = gate.runtime.execute_async(authorized).await;
        let result = self.observed(observing, result);
        self.finished(&subject, None, result.is_error);
        Outcome::Completed(result)
    }

    /// The proof for a call a `ToolPolicy` allows by name, when no sink is set; else the call
    /// back, for the general steps. Those steps would come to the same: the decision is `Allow`
    /// (from the gate's table, the policy's own answer), nothing is recorded without a sink, the
    /// async check is not asked about a decided call, and nothing is counted (a `ToolPolicy`
    /// names no rate limits).
    // Fast path: no decision built, moved or dropped (~50 instr. a call).
    #[inline(always)]
    fn allowed_by_name(
        &self,
        gate: &Gate,
        prepared: PreparedToolCall,
    ) -> Result<Authorized<PreparedToolCall>, PreparedToolCall> {
        if self.audit.is_none() && gate.allows_by_name(&prepared) {
            #[cfg(feature = "tracing")]
            super::observe::record_allowed_by_name();
            return Authorized::if_allowed(PolicyAction::Allow, prepared, super::Judged(()));
        }
        Err(prepared)
    }

    /// The async check, when one is set and the policy's `decision` leaves the call undecided.
    fn check_needed(&self, decision: &PolicyDecision) -> Option<&AsyncCheck> {
        self.async_check.as_ref().filter(|_| decision.fallback)
    }

    /// The first steps of `handle`: record the call, prepare it against the gate in force.
    // Fast path: inlined, the subject lent (a `Result` and a returned subject cost ~120 instr.).
    #[inline(always)]
    fn prepare_call(
        &self,
        call: ToolCall,
        subject: &mut Option<AuditSubject>,
    ) -> Result<(Arc<Gate>, PreparedToolCall), ToolResult> {
        if let Err(error) = self.record_deferred(subject, |s| s.event(AuditKind::CallReceived)) {
            return Err(unrecorded(call.call_id, &error));
        }
        let gate = self.gate();
        match gate.runtime.prepare(call) {
            Ok(prepared) => {
                // Every later event names the definition the call is judged against.
                if let Some(judged) = subject.take() {
                    *subject = Some(judged.with_definition(prepared.definition().digest()));
                }
                Ok((gate, prepared))
            }
            Err(rejection) => {
                // Nothing runs either way; a failed record changes nothing here.
                let _ = self.record_deferred(subject, |s| AuditEvent {
                    reason: Some(rejection.to_string()),
                    is_error: Some(true),
                    ..s.event(AuditKind::RejectedAtPreparation)
                });
                Err(rejection.into_result())
            }
        }
    }

    /// Everything else `handle` does before the handler runs, on the call's one decision (the
    /// policy's, or the async check's where the policy left the call undecided): the proof to
    /// run, or the outcome without running.
    #[inline(always)]
    #[expect(
        clippy::result_large_err,
        reason = "inlined into its one caller and matched at once; boxing would allocate on every held call"
    )]
    fn gate_call(
        &self,
        gate: &Gate,
        prepared: PreparedToolCall,
        subject: &Option<AuditSubject>,
        mut decision: PolicyDecision,
        limited: bool,
    ) -> Result<Authorized<PreparedToolCall>, Outcome> {
        // Counted once, on the call's one decision (the policy's or the async check's); a policy
        // decided from its table names no limits (`limited` is false).
        if limited {
            self.count(
                gate.policy.as_ref(),
                &prepared,
                &mut decision,
                Stage::Proposed,
            );
        }
        #[cfg(feature = "tracing")]
        super::observe::record_decision(&decision);
        // The allow path without a sink: the decision is only read. Everything else (a sink to
        // tell, a call to hold or deny) takes the general path below.
        if self.audit.is_none() {
            match Authorized::if_allowed(decision.action, prepared, super::Judged(())) {
                Ok(authorized) => return Ok(authorized),
                Err(prepared) => return self.gate_decided(prepared, subject, decision),
            }
        }
        self.gate_decided(prepared, subject, decision)
    }

    /// [`gate_call`](Self::gate_call) for every decision, recording it when a sink is set.
    #[inline(never)]
    #[expect(
        clippy::result_large_err,
        reason = "matched at once by its one caller; boxing would allocate on every held call"
    )]
    fn gate_decided(
        &self,
        prepared: PreparedToolCall,
        subject: &Option<AuditSubject>,
        decision: PolicyDecision,
    ) -> Result<Authorized<PreparedToolCall>, Outcome> {
        let decided = Authorized::by_decision(decision, prepared, super::Judged(()));
        Err(match decided {
            PolicyOutcome::Allowed {
                authorized,
                decision,
            } => {
                if let Err(error) = self.record(subject, |s| s.decision(&decision)) {
                    let call_id = authorized.call_id().to_owned();
                    return Err(Outcome::Completed(unrecorded(call_id, &error)));
                }
                return Ok(authorized);
            }
            PolicyOutcome::Denied { prepared, decision } => {
                let _ = self.record_deferred(subject, |s| s.decision(&decision));
                Outcome::Completed(PolicyOutcome::denial_result(prepared, &decision))
            }
            PolicyOutcome::NeedsApproval { prepared, decision } => {
                let call_id = prepared.call_id().to_owned();
                // Durable with the hold's own event below, before the hold is handed out: an
                // approval can be answered on another node, or after a restart, and run there.
                let recorded = self.record_deferred(subject, |s| s.decision(&decision));
                let held = |()| {
                    self.pending
                        .request_for(prepared, decision.reason, decision.approvers)
                };
                match recorded.map(held) {
                    Err(error) => Outcome::Completed(unrecorded(call_id, &error)),
                    Ok(Ok(request)) => {
                        let id = request.approval_id;
                        let asked = self.record(subject, |s| {
                            let mut event = s
                                .clone()
                                .with_approval(id)
                                .event(AuditKind::ApprovalRequested);
                            // Why it waits, for whoever is told of it (a notifier reading events).
                            event.reason = Some(request.reason.to_string());
                            event
                        });
                        match asked {
                            Ok(()) => Outcome::PendingApproval(request),
                            // An approval nobody can trace is not handed out.
                            Err(error) => {
                                let _ = self.pending.revoke(id);
                                Outcome::Completed(unrecorded(call_id, &error))
                            }
                        }
                    }
                    // Fail closed: without an unguessable id the call is not held, and not run.
                    Ok(Err(error)) => Outcome::Completed(ToolResult::error(
                        call_id,
                        format!("could not hold the call for approval: {error}"),
                    )),
                }
            }
        })
    }
}
