//! Answering: a person's answer consumed once, the call re-prepared and decided again, then run.

use std::sync::Arc;

use super::ToolController;
use super::gate::Gate;
use super::limit::Counted;
use super::steps::unrecorded;
use crate::approvals::{Answered, ApprovalError, ApprovalId, ApprovalRequest, ApprovalResponse};
use crate::audit::{AuditEvent, AuditKind, AuditSubject};
use crate::authorized::{ApprovalOutcome, Authorized};
use crate::contract::ToolResult;
use crate::decision::PolicyAction;
use crate::definition::block_on;
use crate::policy::DrivenCheck;
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

impl ToolController {
    /// `resolve`, on this thread: consume the answer, re-check, then run what was authorized.
    pub(super) fn resolve_blocking(
        &self,
        response: ApprovalResponse,
        #[cfg(feature = "tracing")] span: &tracing::Span,
    ) -> Result<ToolResult, ApprovalError> {
        // A person answered: not a hot path, so the one set of steps, driven on this thread (a
        // blocking handler runs within the first poll, as `execute` would run it).
        let steps = self.resolve_steps(
            response,
            false,
            #[cfg(feature = "tracing")]
            span.clone(),
        );
        block_on(steps).map(|(result, _)| result)
    }

    /// `resolve`'s steps, the handler awaited; also the request answered, when `keep_request` asks
    /// for it.
    pub(super) async fn resolve_steps(
        &self,
        response: ApprovalResponse,
        keep_request: bool,
        #[cfg(feature = "tracing")] span: tracing::Span,
    ) -> Result<(ToolResult, Option<(ApprovalRequest, bool)>), ApprovalError> {
        let mut kept = None;
        let (approval_id, step) = self.take_answer(
            response,
            keep_request.then_some(&mut kept),
            #[cfg(feature = "tracing")]
            &span,
        )?;
        let result = match step {
            Step::Run(gate, authorized, subject) => {
                let observing = self.observing(&gate, &authorized);
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
        #[cfg(feature = "tracing")]
        super::observe::record_result(&span, &result);
        Ok((result, kept))
    }

    /// Consumes the answer and does everything `resolve` does before the handler runs; also
    /// returns the id of an approved request, whose outcome the store records, and copies the
    /// request answered into `keep` when given.
    fn take_answer(
        &self,
        response: ApprovalResponse,
        keep: Option<&mut Option<(ApprovalRequest, bool)>>,
        #[cfg(feature = "tracing")] span: &tracing::Span,
    ) -> Result<(Option<ApprovalId>, Step<ToolResult>), ApprovalError> {
        self.admitted_now(&response)?;
        let approver = response.approver.clone();
        let note = response.note.clone();
        let answered = self.pending.answer(response)?;
        if let Some(keep) = keep {
            *keep = Some(match &answered {
                Answered::Approved(approval) => (approval.request().clone(), false),
                Answered::Rejected(request) => (request.clone(), false),
                Answered::Expired(request) => (request.clone(), true),
            });
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

    /// Refuses, before it takes the request, an answer the approvers the policy in force names
    /// would refuse at the re-decision: it is refused and the call keeps waiting for someone
    /// who may answer, as the request's own approvers refuse (an independent attack: after a
    /// reload named others, a former approver's answer took the call and ended it, and the new
    /// approver could no longer answer). The re-decision still checks, after the take.
    fn admitted_now(&self, response: &ApprovalResponse) -> Result<(), ApprovalError> {
        let Some(request) = self.pending.waiting(response.approval_id)? else {
            // The take says what became of it.
            return Ok(());
        };
        let Some(now) = self.approvers_now(&request, response.edited_arguments.as_ref()) else {
            return Ok(());
        };
        let now = now.iter().map(|approvers| &**approvers);
        let approver = response.approver.as_ref();
        let asker = request.call.principal.as_deref();
        let admitted = if response.out_of_band {
            crate::decision::admitted_out_of_band(now, approver, asker)
        } else {
            crate::decision::admitted_by_all(now, approver, asker)
        };
        admitted.map_err(|refusal| ApprovalError::ApproverRefused {
            approval_id: response.approval_id,
            refusal,
        })
    }

    /// The approvers the policy in force names for `request`'s call (with `edited` arguments, if
    /// any) where it still asks about it — its ask rules' and the flow rules' and limits' that
    /// would ask now (an independent attack: a flow rule's approvers, and a reload changing them,
    /// were never checked); `None` where nothing asks now, it denies, or the call no longer
    /// prepares — the re-decision then says what happens. An empty list: asked, naming nobody.
    pub(crate) fn approvers_now(
        &self,
        request: &ApprovalRequest,
        edited: Option<&serde_json::Value>,
    ) -> Option<Vec<Arc<crate::decision::Approvers>>> {
        let gate = self.gate();
        let mut call = request.call.clone();
        if let Some(edited) = edited {
            call.arguments = edited.clone();
        }
        let prepared = gate.runtime.prepare(call).ok()?;
        let decision = gate.policy.decide(&prepared);
        let by_rules = match decision.action {
            // Denied by a rule: the re-decision denies. A policy that leaves the call undecided
            // (its fallback) may let an async check decide: the flow rules' asks still count
            // (an independent attack: their approvers went unchecked then).
            PolicyAction::Deny if !decision.fallback => return None,
            PolicyAction::Ask => Some(decision.approvers),
            PolicyAction::Allow | PolicyAction::Deny => None,
        };
        let mut slots = gate.policy.rate_slots(&prepared).unwrap_or_default();
        slots.retain(|slot| slot.over == PolicyAction::Ask);
        let named = self.named(&slots, &prepared);
        let takes = self.takes(&slots, &named, super::limit::Stage::Proposed);
        match (self.refusing_asks(&slots, &takes), by_rules) {
            (None, by_rules) => by_rules,
            (Some(asking), None) => Some(asking.approvers()),
            (Some(asking), Some(rules)) => {
                // A rule asking naming nobody left the list empty: its vote joins.
                let unnamed = rules.is_empty();
                Some(asking.with(rules, unnamed).approvers())
            }
        }
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
                #[cfg(feature = "tracing")]
                super::observe::record_decision(&decision);
                if let Err(error) = self.record(&subject, |s| s.decision(&decision)) {
                    return Step::Done(unrecorded(authorized.call_id().to_owned(), &error));
                }
                Step::Run(gate, authorized, subject)
            }
            ApprovalOutcome::Denied { prepared, decision } => {
                #[cfg(feature = "tracing")]
                super::observe::record_decision(&decision);
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
