//! `Debug` never prints what a model or a person sent: every type that holds
//! arguments names calls, tools, ids and digests, so `{:?}` in a log line is safe.

use serde_json::{Value, json};
use toolgate::approvals::{Answered, PendingApprovals};
use toolgate::*;

const SECRET: &str = "SECRET-7f3a";
const EDITED: &str = "EDITED-91c2";

fn note_tool() -> ToolDefinition {
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    });
    ToolDefinition::new(
        ToolSpec::new("note", "Write a note.", schema),
        |_: &Value| -> Result<String, ToolError> { Ok("noted".into()) },
    )
    .expect("valid tool")
}

fn assert_redacted(what: &str, printed: &str) {
    assert!(
        !printed.contains(SECRET),
        "{what} prints the argument: {printed}"
    );
    assert!(
        !printed.contains(EDITED),
        "{what} prints edited arguments: {printed}"
    );
}

#[test]
fn debug_of_calls_requests_approvals_and_the_controller_prints_no_argument() {
    let controller = ToolController::new(
        ToolRegistry::new([note_tool()]).expect("registry"),
        ToolPolicy::new(Vec::<String>::new(), ["note"]).expect("policy"),
    );
    let call = ToolCall::new("c1", "note", json!({"text": SECRET, "nested": [SECRET]}));
    assert_redacted("ToolCall", &format!("{call:?}"));
    assert_redacted("ToolCall (pretty)", &format!("{call:#?}"));

    let outcome = controller.handle(call);
    assert_redacted("Outcome", &format!("{outcome:?}"));
    let Outcome::PendingApproval(request) = outcome else {
        panic!("note asks for approval");
    };
    assert!(
        format!("{request:?}").contains("c1"),
        "the call id is shown"
    );
    assert_redacted("ApprovalRequest", &format!("{request:?}"));
    assert_redacted("ToolController", &format!("{controller:?}"));
    assert_redacted("ToolController (pretty)", &format!("{controller:#?}"));

    let response = ApprovalResponse::approve_edited(request.approval_id, json!({"text": EDITED}));
    assert_redacted("ApprovalResponse", &format!("{response:?}"));
    assert!(format!("{response:?}").contains("<redacted>"));
}

#[test]
fn debug_of_pending_approvals_answered_and_approval_prints_no_argument() {
    let runtime = ToolRuntime::new(ToolRegistry::new([note_tool()]).expect("registry"));
    let pending = PendingApprovals::new();
    let mut ids = Vec::new();
    for index in 0..3 {
        let call = ToolCall::new(format!("c{index}"), "note", json!({"text": SECRET}));
        let prepared = runtime.prepare(call).expect("valid call");
        let request = pending
            .request(prepared, Reason::from_static("asks"))
            .expect("held");
        ids.push(request.approval_id);
    }
    assert_redacted("PendingApprovals", &format!("{pending:?}"));
    assert_redacted("PendingApprovals (pretty)", &format!("{pending:#?}"));

    let approved = pending
        .answer(ApprovalResponse::approve_edited(
            ids[0],
            json!({"text": EDITED}),
        ))
        .expect("pending");
    assert_redacted("Answered::Approved", &format!("{approved:?}"));
    let Answered::Approved(approval) = approved else {
        panic!("approved");
    };
    assert_redacted("Approval", &format!("{approval:#?}"));
    assert!(approval.edited_arguments().is_some());

    let rejected = pending
        .answer(ApprovalResponse::reject(ids[1]))
        .expect("pending");
    assert_redacted("Answered::Rejected", &format!("{rejected:?}"));
    let revoked = pending.revoke(ids[2]).expect("pending");
    assert_redacted("revoked ApprovalRequest", &format!("{revoked:?}"));
}
