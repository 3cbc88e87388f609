//! The pipeline, written once for the sync and async forms: gate → record → run, for proposed
//! calls and for a person's answers. Every stage returns a typed outcome; a `ToolResult` is made
//! only here, at the edge, after the audit log has been told exactly what happened.

use std::sync::Arc;

use super::gate::Gate;
use super::limit::{Counted, Stage};
use super::{Outcome, ToolController};
use crate::approvals::{Answered, ApprovalError, ApprovalId, ApprovalRequest, ApprovalResponse};
use crate::audit::{AuditError, AuditEvent, AuditKind, AuditSubject};
use crate::authorized::{ApprovalOutcome, Authorized, PolicyOutcome};
use crate::contract::{ToolCall, ToolResult};
use crate::decision::{PolicyAction, PolicyDecision};
use crate::definition::block_on;
use crate::policy::{AsyncCheck, DrivenCheck};
use crate::runtime::PreparedToolCall;

/// What is left to do after the gate: run an authorized call with the gate it was authorized
/// under, or nothing.
#[expect(
    clippy::large_enum_variant,
    reason = "built and matched at once on every call; boxing `Run` would allocate on every call that runs"
)]
enum Step<T> {
    Run(
        Arc<Gate>,
        Authorized<PreparedToolCall>,
        Option<AuditSubject>,
    ),
    Done(T),
}

/// The id of an approved request, whose outcome the store records.
/// Who answered and what they wrote, for the answer's audit events and the re-check.
#[derive(Clone, Copy)]
struct Answer<'a> {
    approver: Option<&'a crate::Principal>,
    note: Option<&'a str>,
}

impl Answer<'_> {
    fn stamp(self, event: AuditEvent) -> AuditEvent {
        event.answered_by(
            self.approver.map(|approver| approver.id.as_str()),
            self.note,
        )
    }
}

fn answered_id(answered: &Answered) -> Option<ApprovalId> {
    match answered {
        Answered::Approved(approval) => Some(approval.request().approval_id),
        _ => None,
    }
}

/// The error result for a call that did not run because its audit record could not be written.
fn unrecorded(call_id: String, error: &AuditError) -> ToolResult {
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
        let observing = self.observing(&gate.policy, &authorized);
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
        let observing = self.observing(&gate.policy, &authorized);
        let result = gate.runtime.execute_async(authorized).await;
        let result = self.observed(observing, result);
        self.finished(&subject, None, result.is_error);
        Outcome::Completed(result)
    }

    /// `resolve`, on this thread: consume the answer, re-check, then run what was authorized.
    pub(super) fn resolve_blocking(
        &self,
        response: ApprovalResponse,
        #[cfg(feature = "tracing")] span: &tracing::Span,
    ) -> Result<ToolResult, ApprovalError> {
        let (approval_id, step) = self.take_answer(
            response,
            None,
            #[cfg(feature = "tracing")]
            span,
        )?;
        Ok(match step {
            Step::Run(gate, authorized, subject) => {
                let observing = self.observing(&gate.policy, &authorized);
                let result = gate.runtime.execute(authorized);
                let result = self.observed(observing, result);
                self.finished(&subject, approval_id, result.is_error);
                result
            }
            Step::Done(result) => {
                self.settle(approval_id, result.is_error);
                result
            }
        })
    }

    /// `resolve_async`: the same steps as [`resolve_blocking`](Self::resolve_blocking), with the
    /// handler awaited; also the request answered, when `keep_request` asks for it.
    pub(super) async fn resolve_steps(
        &self,
        response: ApprovalResponse,
        keep_request: bool,
        #[cfg(feature = "tracing")] span: tracing::Span,
    ) -> Result<(ToolResult, Option<ApprovalRequest>), ApprovalError> {
        let mut kept = None;
        let (approval_id, step) = self.take_answer(
            response,
            keep_request.then_some(&mut kept),
            #[cfg(feature = "tracing")]
            &span,
        )?;
        let result = match step {
            Step::Run(gate, authorized, subject) => {
                let observing = self.observing(&gate.policy, &authorized);
                let result = gate.runtime.execute_async(authorized).await;
                let result = self.observed(observing, result);
                self.finished(&subject, approval_id, result.is_error);
                result
            }
            Step::Done(result) => {
                self.settle(approval_id, result.is_error);
                result
            }
        };
        Ok((result, kept))
    }

    /// Consumes the answer and does everything `resolve` does before the handler runs; also
    /// returns the id of an approved request, whose outcome the store records, and copies the
    /// request answered into `keep` when given.
    fn take_answer(
        &self,
        response: ApprovalResponse,
        keep: Option<&mut Option<ApprovalRequest>>,
        #[cfg(feature = "tracing")] span: &tracing::Span,
    ) -> Result<(Option<ApprovalId>, Step<ToolResult>), ApprovalError> {
        let approver = response.approver.clone();
        let note = response.note.clone();
        let answered = self.pending.answer(response)?;
        if let Some(keep) = keep {
            *keep = Some(
                match &answered {
                    Answered::Approved(approval) => approval.request(),
                    Answered::Rejected(request) | Answered::Expired(request) => request,
                }
                .clone(),
            );
        }
        #[cfg(feature = "tracing")]
        super::observe::record_answered(span, &answered);
        let approval_id = answered_id(&answered);
        let answer = Answer {
            approver: approver.as_ref(),
            note: note.as_deref(),
        };
        Ok((approval_id, self.answer(answered, answer)))
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

    /// Everything `resolve` does before the handler runs.
    fn answer(&self, answered: Answered, answer: Answer<'_>) -> Step<ToolResult> {
        let request = match &answered {
            Answered::Approved(approval) => approval.request(),
            Answered::Rejected(request) | Answered::Expired(request) => request,
        };
        let subject = self.audit.as_ref().map(|_| {
            AuditSubject::of(&request.call)
                .with_approval(request.approval_id)
                .with_definition(&request.definition_digest)
        });
        let approval = match answered {
            Answered::Rejected(request) => {
                let _ = self.record_deferred(&subject, |s| {
                    answer.stamp(s.event(AuditKind::ApprovalRejected))
                });
                return Step::Done(ToolResult::error(
                    request.call.call_id,
                    "rejected: the person reviewing this call did not approve it; it did not run",
                ));
            }
            Answered::Expired(request) => {
                let _ = self.record_deferred(&subject, |s| s.event(AuditKind::ApprovalExpired));
                return Step::Done(ToolResult::error(
                    request.call.call_id,
                    "denied: the approval request expired before it was answered; propose the call again",
                ));
            }
            Answered::Approved(approval) => approval,
        };
        // Durable with the decision that lets the call run (nothing runs without it).
        let mut recorded = self.record_deferred(&subject, |s| {
            answer.stamp(s.event(AuditKind::ApprovalApproved))
        });
        let mut subject = subject;
        if let (Ok(()), Some(edited), Some(_)) = (&recorded, approval.edited_arguments(), &subject)
        {
            // From here on the events are about the edited call, bound to its own digest.
            let request = approval.request();
            let edited = Some(
                AuditSubject::for_arguments(&request.call.call_id, &request.call.tool_name, edited)
                    .for_principal(request.call.principal.as_deref())
                    .with_approval(request.approval_id),
            );
            recorded = self.record_deferred(&edited, |s| s.event(AuditKind::ApprovalEdited));
            subject = edited;
        }
        if let Err(error) = recorded {
            let call_id = approval.request().call.call_id.clone();
            return Step::Done(unrecorded(call_id, &error));
        }
        let gate = self.gate();
        // The async check is asked again about the call as it will run (edited or not), where the
        // policy leaves it undecided; driven on this thread, within the one re-decision.
        // The approved call is counted against its rate limits within the same one decision.
        let driven;
        let policy: &dyn crate::policy::Policy = match &self.async_check {
            None => gate.policy.as_ref(),
            Some(check) => {
                driven = DrivenCheck {
                    policy: gate.policy.as_ref(),
                    check,
                };
                &driven
            }
        };
        let counted = Counted {
            controller: self,
            policy,
        };
        let outcome = Authorized::by_approval(&gate.runtime, &counted, approval);
        match outcome {
            ApprovalOutcome::Allowed {
                authorized,
                decision,
            } => {
                if let Err(error) = self.record(&subject, |s| s.decision(&decision)) {
                    return Step::Done(unrecorded(authorized.call_id().to_owned(), &error));
                }
                Step::Run(gate, authorized, subject)
            }
            ApprovalOutcome::Denied { prepared, decision } => {
                let _ = self.record_deferred(&subject, |s| s.decision(&decision));
                Step::Done(denied_after_approval(prepared, decision))
            }
            ApprovalOutcome::NotAnApprover {
                prepared,
                decision,
                refusal,
            } => {
                let message = crate::authorized::not_an_approver_message(&refusal);
                let _ = self.record_deferred(&subject, |s| AuditEvent {
                    action: Some(PolicyAction::Deny),
                    reason: Some(message.clone()),
                    rule_id: decision.rule_id.clone(),
                    policy_digest: decision.policy_digest.clone(),
                    layer: decision.layer.clone(),
                    ..s.event(AuditKind::Decision)
                });
                Step::Done(ToolResult::error(prepared.into_call().call_id, message))
            }
            ApprovalOutcome::Stale { call_id, staleness } => {
                let _ = self.record_deferred(&subject, |s| AuditEvent {
                    reason: Some(staleness.message().to_owned()),
                    is_error: Some(true),
                    ..s.event(AuditKind::ApprovalStale)
                });
                Step::Done(ToolResult::error(call_id, staleness.message()))
            }
            ApprovalOutcome::Invalid(rejection) => {
                let _ = self.record_deferred(&subject, |s| AuditEvent {
                    reason: Some(rejection.to_string()),
                    is_error: Some(true),
                    ..s.event(AuditKind::RejectedAtPreparation)
                });
                Step::Done(rejection.into_result())
            }
        }
    }
}

/// The error result for a call the current policy denies after a person approved it.
fn denied_after_approval(
    prepared: PreparedToolCall,
    decision: crate::decision::PolicyDecision,
) -> ToolResult {
    match (ApprovalOutcome::Denied { prepared, decision }).into_authorized() {
        Err(result) => result,
        Ok(_) => unreachable!("a denial never authorizes"),
    }
}
