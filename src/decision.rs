//! The words every stage speaks: what a policy decides ([`PolicyAction`], [`PolicyDecision`],
//! [`Reason`]), who may answer an ask ([`Approvers`], and why an answer does not count:
//! [`ApproverRefusal`]), and the counters a call takes a slot in ([`RateSlot`], [`SlotKind`],
//! [`Refuses`]).
//!
//! This room imports nothing of the stages that speak it — the policies, the approval stores,
//! the limits, the audit log and the proof all import it — so a stage never reaches up into
//! another to name a decision. (Before 0.1 these types lived in [`policy`](crate::policy), and
//! `Refuses` in [`limits`](crate::limits); those paths still name them, for one release.)

mod action;
mod approvers;
mod rate_slot;

pub use action::{EmptyReason, PolicyAction, PolicyDecision, Reason};
pub use approvers::{ApproverRefusal, Approvers};
pub(crate) use approvers::{admitted_by_all, admitted_out_of_band};
pub use rate_slot::{RateSlot, Refuses, SlotKind};
