//! Rate limits, counted where a call is authorized: once per call, after every policy, layer and
//! async check has decided (a policy only names the counters; see [`crate::limits`]).

use std::sync::Arc;

use super::ToolController;
use crate::decision::Refuses;
use crate::decision::{PolicyAction, PolicyDecision, RateSlot, Reason, SlotKind};
use crate::limits::Taken;
use crate::policy::Policy;
use crate::runtime::PreparedToolCall;

/// Where in the pipeline a call is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Proposed by the model: every cap is enforced; a call to be asked about is not counted yet.
    Proposed,
    /// Approved by a person: `ask` caps were the person's to waive, `deny` caps still hold.
    Approved,
}

impl ToolController {
    /// Leaves `decision` as it is unless the call is past a rate limit: then it becomes the
    /// limit's `over` action with a reason naming it. A call about to run takes its slots here,
    /// all or none.
    // Fast path: inlined, the decision changed in place (moving it cost ~60 instr. a call).
    #[inline(always)]
    pub(super) fn count(
        &self,
        policy: &dyn Policy,
        call: &PreparedToolCall,
        decision: &mut PolicyDecision,
        stage: Stage,
    ) {
        let runs = match decision.action {
            PolicyAction::Allow => true,
            // Held for a person: counted when the approval is answered (if it runs).
            PolicyAction::Ask => stage == Stage::Approved,
            PolicyAction::Deny => false,
        };
        if runs && let Some(replacement) = self.past_a_limit(policy, call, decision, stage) {
            *decision = replacement;
        }
    }

    /// The decision replacing `decision` when the call is past a limit or cannot be counted.
    fn past_a_limit(
        &self,
        policy: &dyn Policy,
        call: &PreparedToolCall,
        decision: &PolicyDecision,
        stage: Stage,
    ) -> Option<PolicyDecision> {
        let mut slots = match policy.rate_slots(call) {
            Ok(slots) if slots.is_empty() => return None,
            Ok(slots) => slots,
            Err(denial) => return Some(denial),
        };
        // `deny` caps first, so that when several caps are full the stricter one is named.
        slots.sort_by_key(|slot| slot.over != PolicyAction::Deny);
        let named = self.named(&slots, call);
        let takes = self.takes(&slots, &named, stage);
        match self.counters.take(&takes, self.clock.now_ms()) {
            Ok(Taken::All) => None,
            Ok(Taken::Full(index)) => {
                let mut replacement = past_the_cap(&slots[index], decision);
                if let (Some(look), Some(scope)) = (&slots[index].look, &named.scope) {
                    replacement.reason = self.where_seen(&replacement.reason, look, scope);
                }
                // An `ask`: every flow rule or limit that asks names who answers, not only the
                // first (an independent attack: the second's approvers were never asked for).
                if replacement.action == PolicyAction::Ask
                    && let Some(asking) = self.refusing_asks(&slots, &takes)
                {
                    replacement.approvers = asking.approvers();
                }
                Some(replacement)
            }
            Err(error) => Some(PolicyDecision::deny(
                Reason::new(format!(
                    "denied: the call could not be counted against its rate limits ({error})"
                ))
                .unwrap_or(Reason::from_static(
                    "denied: rate limits could not be counted",
                )),
            )),
        }
    }
}

impl ToolController {
    /// `reason`, naming the call whose result last carried the value `look` reads (its tool and
    /// call id, never the value), or saying no result returned here carried it.
    fn where_seen(
        &self,
        reason: &Reason,
        look: &crate::provenance::ValueLook,
        scope: &crate::provenance::Scope,
    ) -> Reason {
        let Some(digest) = look.digest(&self.recorder.key) else {
            return Reason::new(format!(
                "{} (this session holds more values than it can record, so every value counts as seen in a result)",
                reason.as_str()
            ))
            .unwrap_or_else(|_| reason.clone());
        };
        let seen = match self.seen_at.get(scope, &digest) {
            Some((tool, call_id)) => {
                // A call id comes from the model's provider or an MCP client: bounded, and every
                // character that could hide or reorder the reason a person reads spelled out.
                format!(
                    "the value was last seen in the result of call {} of tool {}",
                    crate::text::quoted_for_person(&call_id, 64),
                    crate::text::quoted_for_person(&tool, 128)
                )
            }
            None => "no result returned here carried the value".to_owned(),
        };
        Reason::new(format!("{} ({seen})", reason.as_str())).unwrap_or_else(|_| reason.clone())
    }
}

/// The decision for a call past `slot`'s cap: its `over` action, naming the limit, its layer and
/// the policy that decided.
fn past_the_cap(slot: &RateSlot, decided: &PolicyDecision) -> PolicyDecision {
    let window = match slot.window_ms {
        None => "session".to_owned(),
        Some(60_000) => "minute".to_owned(),
        Some(3_600_000) => "hour".to_owned(),
        Some(86_400_000) => "day".to_owned(),
        Some(ms) => format!("{ms} ms"),
    };
    let text = match (slot.kind, slot.refuses) {
        (SlotKind::Provenance, _) => format!(
            "flow rule {:?}, on where a value of this call was seen before: {}",
            &*slot.limit_id,
            slot.reason.as_str()
        ),
        (SlotKind::Flow, _) => format!(
            "flow rule {:?}, on what this session did before: {}",
            &*slot.limit_id,
            slot.reason.as_str()
        ),
        (SlotKind::Sum, Refuses::Above(max)) => format!(
            "limit {:?} reached (a total of {max} per {window}): {}",
            &*slot.limit_id,
            slot.reason.as_str()
        ),
        _ => format!(
            "rate limit {:?} reached ({} per {window}): {}",
            &*slot.limit_id,
            slot.max,
            slot.reason.as_str()
        ),
    };
    let reason = Reason::new(text).unwrap_or_else(|_| slot.reason.clone());
    // Only an allowed call reaches a cap (a call a rule asks about is counted when it is
    // answered, where `ask` caps are the person's to waive), so an `ask` here replaces an
    // allow: who answers is who the limit or flow rule names, or anyone.
    let approvers = if slot.over == PolicyAction::Ask {
        slot.approvers.iter().cloned().collect()
    } else {
        Vec::new()
    };
    PolicyDecision {
        policy_digest: decided.policy_digest.clone(),
        layer: slot.layer.clone(),
        approvers,
        ..PolicyDecision::new(slot.over, reason).with_rule_id(Arc::clone(&slot.limit_id))
    }
}

/// The policy in force for the re-check after approval, with the approved call counted.
pub(super) struct Counted<'a> {
    pub(super) controller: &'a ToolController,
    pub(super) policy: &'a dyn Policy,
}

impl Policy for Counted<'_> {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        let mut decision = self.policy.decide(call);
        self.controller
            .count(self.policy, call, &mut decision, Stage::Approved);
        decision
    }
}
