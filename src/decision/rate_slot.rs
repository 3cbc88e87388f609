//! What a policy says about rate limits: the counters a call would take a slot in.

use std::sync::Arc;

use super::{PolicyAction, Reason};

/// One counter a call would take a slot in: which, its window and cap, and what happens past it.
/// A policy names them ([`Policy::rate_slots`](crate::Policy::rate_slots)); the controller counts
/// (see [`limits`](crate::limits)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateSlot {
    /// The counter: the limit's id and, for a keyed limit, the key's digest (never its value).
    pub bucket: Arc<str>,
    /// The window in milliseconds; `None` counts for the session.
    pub window_ms: Option<u64>,
    /// How many calls the window holds.
    pub max: u32,
    /// `Deny` or `Ask`, past the cap.
    pub over: PolicyAction,
    /// The limit's id.
    pub limit_id: Arc<str>,
    /// The limit's reason.
    pub reason: Reason,
    /// The layer the limit came from, when the policy is a stack of layers.
    pub layer: Option<Arc<str>>,
    /// What an authorized call adds to the counter (1 for a rate limit).
    pub weight: u64,
    /// When the counter refuses the call ([`Refuses::Above`] `max` for a rate limit).
    pub refuses: Refuses,
    /// What the slot stands for, for the reason a refusal gives.
    pub kind: SlotKind,
    /// Whether the call's record replaces the counter's earlier ones (a flow rule's history).
    pub replaces: bool,
    /// Whether the counter is shared by every session of the store (a principal's history).
    pub across_sessions: bool,
    /// Who may answer when the slot's `ask` holds the call (a flow rule's `approvers`); `None`:
    /// whoever may answer the decision it replaces.
    pub approvers: Option<Arc<super::Approvers>>,
    /// The group of slots of one rule (and layer) that refuse only together (see
    /// [`Take::group`](crate::limits::Take::group)); `None`: it refuses on its own.
    pub group: Option<u32>,
    /// For a provenance condition: the value looked up, whose counter the controller names
    /// (it holds the key values are digested with); `bucket` is then not used.
    pub look: Option<crate::provenance::ValueLook>,
}

/// What a [`RateSlot`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotKind {
    /// A rate limit: calls counted.
    Limit,
    /// A limit with `sum`: a field's values added up.
    Sum,
    /// A flow rule looking back at the session's earlier calls, or a record for one.
    Flow,
    /// A flow rule's provenance condition: where a value of the call was seen before.
    Provenance,
}

impl RateSlot {
    /// A counter named `limit_id` (which is also its bucket), holding `max` calls per
    /// `window_ms` (`None`: for the session), then `over` with `reason`.
    pub fn new(
        limit_id: impl Into<Arc<str>>,
        window_ms: Option<u64>,
        max: u32,
        over: PolicyAction,
        reason: Reason,
    ) -> Self {
        let limit_id = limit_id.into();
        Self {
            bucket: Arc::clone(&limit_id),
            window_ms,
            max,
            over,
            limit_id,
            reason,
            layer: None,
            weight: 1,
            refuses: Refuses::Above(u64::from(max)),
            kind: SlotKind::Limit,
            replaces: false,
            across_sessions: false,
            approvers: None,
            group: None,
            look: None,
        }
    }

    /// The same slot, reading where `look`'s value was seen.
    #[must_use]
    pub fn looking_up(mut self, look: crate::provenance::ValueLook) -> Self {
        self.look = Some(look);
        self
    }

    /// The same slot, refusing only together with the other slots of its rule in `group`.
    #[must_use]
    pub fn in_group(mut self, group: u32) -> Self {
        self.group = Some(group);
        self
    }

    /// The same slot, its `ask` answerable only by `approvers`.
    #[must_use]
    pub fn approved_by(mut self, approvers: Arc<super::Approvers>) -> Self {
        self.approvers = Some(approvers);
        self
    }

    /// The same slot, its counter shared by every session of the store.
    #[must_use]
    pub fn across_sessions(mut self) -> Self {
        self.across_sessions = true;
        self
    }

    /// The same slot, adding `weight` for the call and refusing when `refuses` says.
    #[must_use]
    pub fn judged(mut self, weight: u64, refuses: Refuses) -> Self {
        self.weight = weight;
        self.refuses = refuses;
        self
    }

    /// The same slot, standing for a flow rule.
    #[must_use]
    pub fn of_flow(self) -> Self {
        self.of_kind(SlotKind::Flow)
    }

    /// The same slot, its record replacing the counter's earlier ones.
    #[must_use]
    pub fn replacing(mut self) -> Self {
        self.replaces = true;
        self
    }

    /// The same slot, standing for `kind`.
    #[must_use]
    pub fn of_kind(mut self, kind: SlotKind) -> Self {
        self.kind = kind;
        self
    }

    /// The same slot in the counter `bucket` (a keyed limit's own counter).
    #[must_use]
    pub fn in_bucket(mut self, bucket: impl Into<Arc<str>>) -> Self {
        self.bucket = bucket.into();
        self
    }
}

/// When a counter refuses a call, from its total in the window before the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refuses {
    /// When the total plus the call's weight would pass this cap (a rate limit, a sum cap).
    Above(u64),
    /// When anything was counted (a flow rule's `after`: "a private read ran in this session").
    AnyCounted,
    /// When nothing was counted (a flow rule's `unless_after`: "unless this path was read").
    NothingCounted,
    /// Never: the call is only recorded, for flow rules that look at it later.
    Never,
    /// Always: what the rule needs of this call cannot be judged (a path spelling no lexical
    /// check reads), so the rule takes its action.
    Always,
}
