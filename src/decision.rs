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
pub(crate) use approvers::{admitted_by_all, admitted_out_of_band, bar_self_for_unnamed};
pub use rate_slot::{RateSlot, Refuses, SlotKind};

#[cfg(test)]
mod tests {
    /// The room stays low: outside comments its files name no module of the crate but the
    /// contract types and the provenance value look a rate slot carries — no stage that speaks it.
    #[test]
    fn the_vocabulary_imports_no_stage() {
        let files = [
            ("decision.rs", include_str!("decision.rs")),
            ("action.rs", include_str!("decision/action.rs")),
            ("approvers.rs", include_str!("decision/approvers.rs")),
            ("rate_slot.rs", include_str!("decision/rate_slot.rs")),
        ];
        for (file, text) in files {
            // The code, not its tests (this one names what it looks for).
            let code = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or("")
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"));
            for line in code {
                for (at, _) in line.match_indices("crate::") {
                    let module = line[at + "crate::".len()..]
                        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or("");
                    assert!(
                        ["contract", "provenance", "decision"].contains(&module),
                        "{file} imports crate::{module}: {line}"
                    );
                }
            }
        }
    }
}
