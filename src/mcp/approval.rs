//! Approvals carried by the protocol: the question shown to the person (an elicitation form) and
//! the sealed `requestState` that brings the approval id back on a 2026-07-28 retry.

use std::time::Duration;

use std::collections::BTreeMap;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec,
    SealOptions,
};
use serde_json::{Value, json};

use crate::approvals::{ApprovalId, ApprovalRequest};
use crate::canonical::{canonical_json, digest};
use crate::contract::quote_bounded;

/// The key of the one input request toolgate sends: the person's answer comes back under it.
const ANSWER_KEY: &str = "toolgate_approval";

/// How much of the canonical arguments the question shows before cutting.
const SHOWN_ARGUMENT_CHARS: usize = 2_000;

/// How long a sealed request state opens; the approval itself may expire sooner.
const STATE_TIME_TO_LIVE: Duration = Duration::from_secs(15 * 60);

/// How a client can be asked about a held request, read once from its request: on 2026-07-28 or
/// later (`modern`: no server-to-client request, and no logging), and whether it takes form
/// elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Askable {
    pub(crate) modern: bool,
    pub(crate) form: bool,
}

impl Askable {
    pub(crate) fn of(context: &rmcp::service::RequestContext<rmcp::service::RoleServer>) -> Self {
        let modern = context.protocol_version().is_some_and(|version| {
            version.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
        });
        let form = context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
        Self { modern, form }
    }

    /// Whether the person can be asked in the same request (an `elicitation/create`).
    pub(crate) fn in_request(self) -> bool {
        self.form && !self.modern
    }
}

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Approve,
    Reject,
}

impl Answer {
    /// Accept approves; decline and cancel reject (a dismissed question is not a yes).
    pub(crate) fn of(action: &ElicitationAction) -> Self {
        match action {
            ElicitationAction::Accept => Self::Approve,
            _ => Self::Reject,
        }
    }
}

/// Seals approval ids into `requestState` with a key only this server holds, bound to the tool
/// and its canonical arguments: a state from another server, for another call, altered in one
/// byte or older than its time to live does not open.
pub(crate) struct StateSeal {
    /// The first seals; every one opens (a rotated-out key keeps opening what it sealed until
    /// it is dropped).
    codecs: Vec<RequestStateCodec>,
}

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSeal(<key>)")
    }
}

impl StateSeal {
    /// A seal with a fresh 256-bit key from the OS.
    pub(crate) fn random() -> Result<Self, getrandom::Error> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)?;
        // 32 bytes is exactly the SDK's minimum; `try_new` cannot fail on it.
        let codec = RequestStateCodec::try_new(key.to_vec())
            .unwrap_or_else(|_| RequestStateCodec::new_unchecked(key.to_vec()));
        key.fill(0);
        Ok(Self {
            codecs: vec![codec],
        })
    }

    /// A seal sealing with the first of `keys` and opening with any (each at least 32 bytes):
    /// servers sharing them open each other's states — what several instances behind one load
    /// balancer need, a retry reaching another instance, or a restarted one. `None` if `keys` is
    /// empty or one is too short.
    pub(crate) fn with_keys<K: AsRef<[u8]>>(keys: &[K]) -> Option<Self> {
        let codecs = keys
            .iter()
            .map(|key| RequestStateCodec::try_new(key.as_ref().to_vec()).ok())
            .collect::<Option<Vec<_>>>()?;
        (!codecs.is_empty()).then_some(Self { codecs })
    }

    /// The input-required result asking the person about `request`.
    pub(crate) fn input_required(
        &self,
        request: &ApprovalRequest,
        session: Option<&str>,
        approvals_at: Option<&str>,
    ) -> InputRequiredResult {
        let principal = request
            .call
            .principal
            .as_ref()
            .map(|principal| principal.id.as_str());
        let binding = binding(
            &request.call.tool_name,
            &request.call.arguments,
            principal,
            session,
        );
        let state = self.codecs[0].seal_with(
            request.approval_id.to_string().as_bytes(),
            &SealOptions::new()
                .associated_data(binding.as_bytes())
                .ttl(STATE_TIME_TO_LIVE),
        );
        let mut requests = InputRequests::new();
        requests.insert(
            ANSWER_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(question(request, approvals_at))),
        );
        InputRequiredResult::new(Some(requests), Some(state))
    }

    /// The approval id sealed in `state`, if this server sealed it for `tool` with `arguments`,
    /// for the same principal in the same session.
    pub(crate) fn open(
        &self,
        state: &str,
        tool: &str,
        arguments: &Value,
        caller: &super::Caller,
    ) -> Option<ApprovalId> {
        let principal = caller
            .principal
            .as_ref()
            .map(|principal| principal.id.as_str());
        let binding = binding(tool, arguments, principal, caller.session.as_deref());
        let payload = self
            .codecs
            .iter()
            .find_map(|codec| codec.open_with(state, binding.as_bytes()).ok())?;
        std::str::from_utf8(&payload).ok()?.parse().ok()
    }
}

/// The person's answer in a retry's `inputResponses`, if there is a well-formed one.
pub(crate) fn answer_in(responses: Option<&InputResponses>) -> Option<Answer> {
    let response = responses?.get(ANSWER_KEY)?;
    let result: ElicitResult = serde_json::from_value(response.clone()).ok()?;
    Some(Answer::of(&result.action))
}

/// The form shown to the person: which tool, why the policy asks, and the exact arguments that
/// would run (canonical JSON; past `SHOWN_ARGUMENT_CHARS` characters, how many more there are and
/// the approval id to read them all under). Accept approves this call once; decline or cancel
/// rejects it.
pub(crate) fn question(
    request: &ApprovalRequest,
    approvals_at: Option<&str>,
) -> ElicitRequestParams {
    let arguments = canonical_json(&request.call.arguments);
    let shown: String = arguments.chars().take(SHOWN_ARGUMENT_CHARS).collect();
    // Never cut silently: say how much is left out and where the whole call can be read.
    let cut = if shown.len() < arguments.len() {
        let total = arguments.chars().count();
        format!(
            " … [{left} of {total} characters not shown: read the whole arguments of approval {id} at {place} before you accept]",
            left = total - SHOWN_ARGUMENT_CHARS,
            id = request.approval_id,
            place = approvals_at.unwrap_or("ToolController::pending or the approval store"),
        )
    } else {
        String::new()
    };
    let message = format!(
        "Allow the tool call {tool} to run once?\nWhy you are asked: {reason}\nArguments: {shown}{cut}\nDigest: {digest}\nAccept runs it once; decline or cancel does not.",
        tool = quote_bounded(&request.call.tool_name),
        reason = request.reason,
        digest = request.digest,
    );
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        // Nothing to fill in: the answer is the action (accept, decline, cancel).
        requested_schema: ElicitationSchema::new(BTreeMap::new()),
    }
}

/// What a sealed state is bound to: the tool's name and its canonical arguments.
/// What a sealed state is bound to: the call, and who made it where. A state issued to one
/// principal or session does not open for another.
fn binding(
    tool: &str,
    arguments: &Value,
    principal: Option<&str>,
    session: Option<&str>,
) -> String {
    digest(&json!({
        "tool": tool,
        "arguments": arguments,
        "principal": principal,
        "session": session,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, ToolCall, ToolController, ToolDefinition, ToolPolicy, ToolRegistry};
    use crate::{ToolError, ToolSpec};

    fn held(text: &str) -> ApprovalRequest {
        let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
        let spec = ToolSpec::new("patch", "", json!({"type": "object"}));
        let registry = ToolRegistry::new([ToolDefinition::new(spec, noop).unwrap()]).unwrap();
        let policy = ToolPolicy::new(Vec::<String>::new(), ["patch"]).unwrap();
        let controller = ToolController::new(registry, policy);
        match controller.handle(ToolCall::new("c", "patch", json!({ "text": text }))) {
            Outcome::PendingApproval(request) => request,
            Outcome::Completed(result) => panic!("{result:?}"),
        }
    }

    fn message(request: &ApprovalRequest) -> String {
        match question(request, None) {
            ElicitRequestParams::FormElicitationParams { message, .. } => message,
            _ => unreachable!("a form"),
        }
    }

    #[test]
    fn a_question_that_cuts_the_arguments_says_how_much_and_where_to_read_them() {
        // `{"text":"…"}`: 11 characters around the text.
        let request = held(&"é".repeat(4_989));
        let shown = message(&request);
        assert!(
            shown.contains("3000 of 5000 characters not shown"),
            "{shown}"
        );
        assert!(shown.contains(&request.approval_id.to_string()), "{shown}");
        assert!(shown.contains("ToolController::pending"), "{shown}");
        // Exactly at the limit nothing is cut, and nothing says so.
        // Where the whole arguments are, when the server was told.
        let there = match question(&request, Some("http://127.0.0.1:9090/approvals")) {
            ElicitRequestParams::FormElicitationParams { message, .. } => message,
            _ => unreachable!("a form"),
        };
        assert!(
            there.contains("at http://127.0.0.1:9090/approvals before you accept"),
            "{there}"
        );
        let whole = message(&held(&"a".repeat(SHOWN_ARGUMENT_CHARS - 11)));
        assert!(!whole.contains("not shown"), "{whole}");
        assert!(whole.contains(&"a".repeat(SHOWN_ARGUMENT_CHARS - 11)));
    }
}
