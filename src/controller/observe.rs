//! Spans for `handle` and `resolve`: the call id, the tool name and the approval id, each bounded in length — never argument values.

use tracing::Span;
use tracing::field::Empty;

use crate::approvals::{Answered, ApprovalResponse};
use crate::contract::{ToolCall, quote_bounded};

pub(super) fn handle_span(call: &ToolCall) -> Span {
    tracing::info_span!(
        "toolgate.handle",
        call_id = %quote_bounded(&call.call_id),
        tool = %quote_bounded(&call.tool_name),
    )
}

pub(super) fn resolve_span(response: &ApprovalResponse) -> Span {
    tracing::info_span!(
        "toolgate.resolve",
        approval_id = %response.approval_id,
        verdict = ?response.verdict,
        call_id = Empty,
        tool = Empty,
    )
}

/// Fills in the call's id and tool once the answered request is known.
pub(super) fn record_answered(span: &Span, answered: &Answered) {
    let request = match answered {
        Answered::Approved(approval) => approval.request(),
        Answered::Rejected(request) | Answered::Expired(request) => request,
    };
    span.record(
        "call_id",
        tracing::field::display(quote_bounded(&request.call.call_id)),
    );
    span.record(
        "tool",
        tracing::field::display(quote_bounded(&request.call.tool_name)),
    );
}
