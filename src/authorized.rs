//! The proof that a call may run. This file is the only place that builds one: review it.

use std::fmt;
use std::ops::Deref;

use crate::approvals::Approval;
use crate::contract::ToolResult;
use crate::decision::{
    ApproverRefusal, PolicyAction, PolicyDecision, Reason, admitted_by_all, admitted_out_of_band,
};
use crate::policy::Policy;
use crate::runtime::{PreparedToolCall, Rejection, ToolRuntime};

/// Proof that `T` passed a policy's `Allow` or a consumed one-time approval.
///
/// # Guarantees
///
/// - Built only here, by four functions (G2):
///   - [`Authorized::by_policy`], when the policy allows;
///   - [`Authorized::by_approval`], when a consumed approval's call re-prepared, the current
///     policy did not deny it, and whoever answered is admitted by the approvers the request was
///     held for and by those the current policy names (four eyes included) — every check runs
///     before the proof is built;
///   - two crate-internal fast paths of the controller, `if_allowed` and `by_decision`, on
///     `Allow` only, and only with a `GateWitness`: the one type that implements it is the
///     controller's `Judged`, which no code outside the controller module can build
///     (`ui-tests/call_fast_path_if_allowed.rs`, `ui-tests/call_fast_path_by_decision.rs`).
///
///   The field is private; there is no `new`, `From`, `Default` or `Deserialize`
///   (`ui-tests/forge_authorized_literal.rs`, `ui-tests/forge_authorized_constructor.rs`,
///   `ui-tests/default_authorized.rs`, `ui-tests/deserialize_authorized.rs`).
/// - Linear: not `Clone` or `Copy`, and [`ToolRuntime::execute`] takes it by value, so one
///   authorization runs at most once (G3; `ui-tests/clone_authorized.rs`,
///   `ui-tests/execute_authorized_twice.rs`).
/// - Read-only: it derefs to `&T` and never to `&mut T`, so the arguments that run are the ones
///   that were checked (`ui-tests/mutate_authorized_arguments.rs`).
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::*;
/// use toolgate::PolicyOutcome;
///
/// let add = |a: &Value| -> Result<String, ToolError> { Ok((a["a"].as_i64().unwrap_or(0) + 2).to_string()) };
/// let spec = ToolSpec::new("add2", "Add two.", json!({"type": "object"}));
/// let runtime = ToolRuntime::new(ToolRegistry::new([ToolDefinition::new(spec, add)?])?);
/// let policy = ToolPolicy::new(["add2"], Vec::<String>::new())?;
///
/// let prepared = runtime.prepare(ToolCall::new("c1", "add2", json!({"a": 40})))?;
/// match Authorized::by_policy(&policy, prepared) {
///     PolicyOutcome::Allowed { authorized, .. } => assert_eq!(runtime.execute(authorized).content, "42"),
///     other => panic!("expected allow, got {other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "an authorization that is not executed runs nothing"]
pub struct Authorized<T> {
    // Invariant: `inner` was allowed by a policy, or is the re-prepared call of a consumed
    // approval that the current policy did not deny.
    inner: T,
}

impl<T> Authorized<T> {
    pub(crate) fn into_inner(self) -> T {
        self.inner
    }
}

impl<T> Deref for Authorized<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: fmt::Debug> fmt::Debug for Authorized<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Authorized").field(&self.inner).finish()
    }
}

/// The controller's word that an action or decision handed to a fast path is the one the policy
/// in force took for the call (counted against its limits). Implemented once, by the controller's
/// `Judged`, whose field only the controller module can fill; declared here so this file needs
/// nothing from the controller.
pub(crate) trait GateWitness {}

/// What a policy decided for a prepared call.
#[derive(Debug)]
#[must_use]
pub enum PolicyOutcome {
    /// The policy allowed the call; execute it.
    Allowed {
        /// The proof to pass to `execute`.
        authorized: Authorized<PreparedToolCall>,
        /// The decision, with the rule and policy that took it.
        decision: PolicyDecision,
    },
    /// The policy wants a person's confirmation; hold the call as an approval request.
    NeedsApproval {
        /// The call, validated but not authorized.
        prepared: PreparedToolCall,
        /// The decision, whose reason is shown to the person.
        decision: PolicyDecision,
    },
    /// The policy refused the call.
    Denied {
        /// The call, validated but not authorized.
        prepared: PreparedToolCall,
        /// The decision, whose reason is shown to the model.
        decision: PolicyDecision,
    },
}

impl PolicyOutcome {
    /// The error result telling the model its call was denied, for [`PolicyOutcome::Denied`].
    pub(crate) fn denial_result(
        prepared: PreparedToolCall,
        decision: &PolicyDecision,
    ) -> ToolResult {
        ToolResult::error(
            prepared.into_call().call_id,
            prefixed("denied: ", decision.reason.as_str()),
        )
    }
}

/// What the approval path decided for an approved call: it mirrors [`PolicyOutcome`], with the
/// two ways an approval can fail before the policy is asked.
#[derive(Debug)]
#[must_use]
#[non_exhaustive]
pub enum ApprovalOutcome {
    /// The call re-prepared and the current policy did not deny it; execute it.
    Allowed {
        /// The proof to pass to `execute`.
        authorized: Authorized<PreparedToolCall>,
        /// The re-decision (`Allow`, or `Ask`, which the person already answered).
        decision: PolicyDecision,
    },
    /// The current policy denies the call: a denial wins over an approval (G6).
    Denied {
        /// The call, re-prepared but not authorized.
        prepared: PreparedToolCall,
        /// The decision, whose reason is shown to the model.
        decision: PolicyDecision,
    },
    /// The approval no longer covers the call: it was altered in the store, or the tool's
    /// definition changed while the approval waited. The model may propose the call again.
    Stale {
        /// The call's id.
        call_id: String,
        /// Why.
        staleness: Staleness,
    },
    /// The call no longer prepares (the tool is gone, or the edited or unchanged arguments do not
    /// validate against the current schema).
    Invalid(Rejection),
    /// Whoever answered is not admitted by the approvers the request was held for, or by those
    /// the current policy names for the call (a reload named approvers or four eyes since the call
    /// was held): nothing runs, and the approval is spent.
    NotAnApprover {
        /// The call, re-prepared but not authorized.
        prepared: PreparedToolCall,
        /// The current policy's decision, naming the approvers it needs.
        decision: PolicyDecision,
        /// Why the answer does not count.
        refusal: ApproverRefusal,
    },
}

/// Why an approval no longer covers its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Staleness {
    /// The stored request does not match the digest it was approved under.
    DigestMismatch,
    /// The tool's definition changed while the approval waited.
    DefinitionChanged,
}

impl Staleness {
    /// What the model is told.
    pub fn message(self) -> &'static str {
        match self {
            Self::DigestMismatch => {
                "denied: the approved call does not match the digest it was approved under"
            }
            Self::DefinitionChanged => {
                "denied: stale approval: the tool's definition changed while the approval waited; propose the call again"
            }
        }
    }
}

impl ApprovalOutcome {
    /// The proof, or the error result the model reads (made here, at the edge).
    ///
    /// # Errors
    ///
    /// An error [`ToolResult`] with the call's id for every outcome but `Allowed`.
    pub fn into_authorized(self) -> Result<Authorized<PreparedToolCall>, ToolResult> {
        match self {
            Self::Allowed { authorized, .. } => Ok(authorized),
            Self::Denied { prepared, decision } => Err(ToolResult::error(
                prepared.into_call().call_id,
                prefixed("denied after approval: ", decision.reason.as_str()),
            )),
            Self::Stale { call_id, staleness } => {
                Err(ToolResult::error(call_id, staleness.message()))
            }
            Self::Invalid(rejection) => Err(rejection.into_result()),
            Self::NotAnApprover {
                prepared, refusal, ..
            } => Err(ToolResult::error(
                prepared.into_call().call_id,
                not_an_approver_message(&refusal),
            )),
        }
    }
}

/// What the model is told when the answer's approver does not satisfy the approvers in force.
pub(crate) fn not_an_approver_message(refusal: &ApproverRefusal) -> String {
    format!("denied: the approvers this call needs did not answer it ({refusal}); it did not run")
}

impl Authorized<PreparedToolCall> {
    /// The policy path: asks `policy` about `prepared` and authorizes it only on `Allow`.
    ///
    /// Rate limits are part of what this path enforces: counting them needs the counter store
    /// and the clock a [`ToolController`](crate::ToolController) holds, so a call for which
    /// `policy` names [rate slots](Policy::rate_slots) (a [`RulePolicy`](crate::RulePolicy)
    /// whose limits cover the tool) is **denied** here, fail closed, with a reason naming the
    /// limit: run such policies through the controller, which counts each call once. A policy
    /// that cannot say which slots a call takes denies it the same way.
    ///
    /// # Examples
    ///
    /// See [`Authorized`].
    pub fn by_policy<P: Policy + ?Sized>(policy: &P, prepared: PreparedToolCall) -> PolicyOutcome {
        let decision = policy.decide(&prepared);
        let decision = uncounted(policy, &prepared, decision);
        Self::outcome_of(decision, prepared)
    }

    /// The controller's fast path: the proof for `prepared` when the action the controller
    /// decided for it is `Allow`, else `prepared` back for [`by_decision`](Self::by_decision).
    /// Only the controller can call it: its [`GateWitness`] is its word that `action` is what the policy in
    /// force decided (its table's answer, or the counted decision of the policy or its async
    /// check).
    // Fast path: reads the action only (a decision moved through a `PolicyOutcome` cost ~30 instr.).
    #[inline(always)]
    pub(crate) fn if_allowed(
        action: PolicyAction,
        prepared: PreparedToolCall,
        _judged: impl GateWitness,
    ) -> Result<Self, PreparedToolCall> {
        match action {
            PolicyAction::Allow => Ok(Self { inner: prepared }),
            PolicyAction::Ask | PolicyAction::Deny => Err(prepared),
        }
    }

    /// The policy path for a decision the controller already took for `prepared` (by its policy,
    /// or by its async check where the policy left the call undecided, and counted). Only the
    /// controller can call it ([`GateWitness`]); outside the controller a decision reaches
    /// `Authorized` only through [`by_policy`](Self::by_policy).
    pub(crate) fn by_decision(
        decision: PolicyDecision,
        prepared: PreparedToolCall,
        _judged: impl GateWitness,
    ) -> PolicyOutcome {
        Self::outcome_of(decision, prepared)
    }

    fn outcome_of(decision: PolicyDecision, prepared: PreparedToolCall) -> PolicyOutcome {
        match decision.action {
            PolicyAction::Allow => PolicyOutcome::Allowed {
                authorized: Self { inner: prepared },
                decision,
            },
            PolicyAction::Ask => PolicyOutcome::NeedsApproval { prepared, decision },
            PolicyAction::Deny => PolicyOutcome::Denied { prepared, decision },
        }
    }

    /// The approval path: the approved call is prepared again against `runtime`'s *current*
    /// registry and decided again by the *current* `policy`. `Allow` or `Ask` authorize it (the
    /// person already answered the ask); `Deny` wins over the approval (G6). The approval covers
    /// exactly what was approved: if the stored call no longer matches its digest, or the tool's
    /// definition changed while the approval waited (its digest differs), the outcome is
    /// [`ApprovalOutcome::Stale`] and the model may propose the call again.
    ///
    /// The approval was consumed when it was answered, so whatever happens here it cannot be used
    /// again.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::*;
    /// use toolgate::ApprovalOutcome;
    /// use toolgate::approvals::{Answered, PendingApprovals};
    ///
    /// let patch = |_: &Value| -> Result<String, ToolError> { Ok("patched".into()) };
    /// let spec = ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"}));
    /// let runtime = ToolRuntime::new(ToolRegistry::new([ToolDefinition::new(spec, patch)?])?);
    /// let policy = ToolPolicy::new(Vec::<String>::new(), ["apply_patch"])?;
    /// let pending = PendingApprovals::new();
    ///
    /// let prepared = runtime.prepare(ToolCall::new("c1", "apply_patch", json!({})))?;
    /// let request = pending.request(prepared, Reason::new("writes files")?)?;
    /// let Answered::Approved(approval) = pending.answer(ApprovalResponse::approve(request.approval_id))? else {
    ///     unreachable!("approved above")
    /// };
    /// let ApprovalOutcome::Allowed { authorized, .. } = Authorized::by_approval(&runtime, &policy, approval) else {
    ///     unreachable!("the policy asks, and the person approved")
    /// };
    /// assert_eq!(runtime.execute(authorized).content, "patched");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn by_approval<P: Policy + ?Sized>(
        runtime: &ToolRuntime,
        policy: &P,
        approval: Approval,
    ) -> ApprovalOutcome {
        let (request, edited_arguments, approver, out_of_band) = approval.into_parts();
        let current = runtime.registry().resolve(&request.call.tool_name);
        // The digest is recomputed from the stored request either way; a current definition with
        // the recorded name and digest holds the hasher state after them, which is the state
        // `digest_matches` would compute from the request's own strings.
        let matches = match current.filter(|d| d.digest() == request.definition_digest) {
            Some(definition) => request.digest_matches_from(definition.call_prefix()),
            None => request.digest_matches(),
        };
        if !matches {
            return ApprovalOutcome::Stale {
                call_id: request.call.call_id,
                staleness: Staleness::DigestMismatch,
            };
        }
        if current.is_some_and(|definition| definition.digest() != request.definition_digest) {
            return ApprovalOutcome::Stale {
                call_id: request.call.call_id,
                staleness: Staleness::DefinitionChanged,
            };
        }
        let mut call = request.call;
        if let Some(arguments) = edited_arguments {
            // A new proposal: validated and decided below like any call.
            call.arguments = arguments;
        }
        let prepared = match runtime.prepare(call) {
            Ok(prepared) => prepared,
            Err(rejection) => return ApprovalOutcome::Invalid(rejection),
        };
        let decision = policy.decide(&prepared);
        let decision = uncounted(policy, &prepared, decision);
        if decision.action == PolicyAction::Deny {
            return ApprovalOutcome::Denied { prepared, decision };
        }
        // The last check before the proof: whoever answered must be admitted by the approvers the
        // request was held for and by those the policy in force names now (a reload may have
        // named approvers, or four eyes, since the call was held). Out of band, an asker answering
        // her own call needs `allow_self` from both: the request's (checked by the store too) and,
        // when the policy in force still asks, its own — a reload withdrawing it must hold (an
        // independent attack: the page let her approve after the reload).
        let asker = prepared.call().principal.as_deref();
        let held_for = || request.approvers.iter().map(|a| &**a);
        let now_named = || decision.approvers.iter().map(|a| &**a);
        let admitted = admitted_by_all(held_for().chain(now_named()), approver.as_ref(), asker)
            .and_then(|()| match out_of_band {
                false => Ok(()),
                true => admitted_out_of_band(held_for(), approver.as_ref(), asker).and_then(|()| {
                    match decision.action {
                        PolicyAction::Ask => {
                            admitted_out_of_band(now_named(), approver.as_ref(), asker)
                        }
                        _ => Ok(()),
                    }
                }),
            });
        match admitted {
            Ok(()) => ApprovalOutcome::Allowed {
                authorized: Self { inner: prepared },
                decision,
            },
            Err(refusal) => ApprovalOutcome::NotAnApprover {
                prepared,
                decision,
                refusal,
            },
        }
    }
}

/// `decision`, unless `policy` names rate slots for the call, which this path cannot count:
/// then a denial naming the first limit (or the policy's own denial when the call cannot be
/// counted). A decision that denies already is kept. The controller passes policies that count
/// as they decide and name no slots here.
fn uncounted<P: Policy + ?Sized>(
    policy: &P,
    prepared: &PreparedToolCall,
    decision: PolicyDecision,
) -> PolicyDecision {
    if decision.action == PolicyAction::Deny {
        return decision;
    }
    match policy.rate_slots(prepared) {
        Ok(slots) if slots.is_empty() => decision,
        Ok(slots) => {
            let limit = &slots[0].limit_id;
            let text = match slots[0].kind {
                crate::decision::SlotKind::Flow => format!(
                    "a flow rule looks at this call ({limit:?}) and only a ToolController keeps the session's history: authorize through the controller (fail closed)"
                ),
                _ => format!(
                    "rate limit {limit:?} covers this call and only a ToolController counts it: authorize through the controller (fail closed)"
                ),
            };
            let reason = Reason::new(text)
                .unwrap_or_else(|_| Reason::from_static("a rate limit covers this call"));
            let mut denial =
                PolicyDecision::deny(reason).with_rule_id(std::sync::Arc::clone(limit));
            denial.layer.clone_from(&slots[0].layer);
            denial
        }
        Err(denial) => denial,
    }
}

/// `prefix` followed by `text`, allocated once at its final size.
// Fast path: one allocation (`format!` grew it in steps, dearer than the policy decision).
fn prefixed(prefix: &str, text: &str) -> String {
    let mut joined = String::with_capacity(prefix.len() + text.len());
    joined.push_str(prefix);
    joined.push_str(text);
    joined
}
