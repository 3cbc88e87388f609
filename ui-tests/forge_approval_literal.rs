//! Bypass: fabricate a consumed `Approval` for a call no person approved, and authorize it.
//! Must fail because `Approval`'s field is private: only `PendingApprovals::answer` builds one (G2, G5).
mod support;

use toolgate::approvals::Approval;
use toolgate::{ApprovalRequest, Authorized, ToolPolicy};

fn main() {
    let runtime = support::runtime();
    let request: ApprovalRequest = serde_json::from_str("{}").expect("any request");
    let forged = Approval { request };
    let policy = ToolPolicy::default();
    let _ = Authorized::by_approval(&runtime, &policy, forged);
}
