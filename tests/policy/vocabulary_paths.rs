//! The vocabulary lives in `toolgate::decision`; the paths it had before keep naming the very same
//! types for one release (CHANGELOG), and the stage outcomes answer at the crate root.

#![allow(unused_imports, reason = "the imports are what is tested")]

use std::any::TypeId;

#[test]
fn old_paths_name_the_same_types_as_the_decision_room() {
    fn same<A: 'static, B: 'static>() -> bool {
        TypeId::of::<A>() == TypeId::of::<B>()
    }
    use toolgate::decision as d;
    assert!(same::<toolgate::policy::PolicyAction, d::PolicyAction>());
    assert!(same::<toolgate::policy::PolicyDecision, d::PolicyDecision>());
    assert!(same::<toolgate::policy::Reason, d::Reason>());
    assert!(same::<toolgate::policy::EmptyReason, d::EmptyReason>());
    assert!(same::<toolgate::policy::Approvers, d::Approvers>());
    assert!(same::<toolgate::policy::ApproverRefusal, d::ApproverRefusal>());
    assert!(same::<toolgate::policy::RateSlot, d::RateSlot>());
    assert!(same::<toolgate::policy::SlotKind, d::SlotKind>());
    assert!(same::<toolgate::approvals::Approvers, d::Approvers>());
    assert!(same::<
        toolgate::approvals::ApproverRefusal,
        d::ApproverRefusal,
    >());
    assert!(same::<toolgate::limits::RateSlot, d::RateSlot>());
    assert!(same::<toolgate::limits::SlotKind, d::SlotKind>());
    assert!(same::<toolgate::limits::Refuses, d::Refuses>());
    assert!(same::<toolgate::PolicyAction, d::PolicyAction>());
    assert!(same::<toolgate::PolicyDecision, d::PolicyDecision>());
    assert!(same::<toolgate::Reason, d::Reason>());
    // The stage outcomes at their one path.
    let _: Option<toolgate::PolicyOutcome> = None;
    let _: Option<toolgate::ApprovalOutcome> = None;
    assert_eq!(
        toolgate::Staleness::DigestMismatch.message(),
        "denied: the approved call does not match the digest it was approved under"
    );
}
