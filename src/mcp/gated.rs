//! Requests gated as calls: reading a resource and getting a prompt (a call of the gate the
//! [`Passthrough`](super::Passthrough) names), and an upstream's sampling or elicitation request
//! put to a client ([`Downstream`](super::Downstream)). Each is handled by the controller like any
//! call, its result's structured content the protocol's answer.

use rmcp::ErrorData;
use rmcp::model::{
    ErrorCode, GetPromptRequestParams, GetPromptResult, ReadResourceRequestParams,
    ReadResourceResult, ResultType,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Value, json};

use super::McpServer;
use super::approval::{self, Answer};
use crate::approvals::ApprovalRequest;
use crate::contract::{ToolCall, ToolResult};
use crate::controller::Outcome;

/// The code of an answer nothing serves (the protocol's "resource not found").
const NOT_FOUND: ErrorCode = ErrorCode(-32002);

impl McpServer {
    /// `resources/read`: the URI's gate, called with the URI.
    pub(super) async fn read_resource_gated(
        &self,
        request: ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
        caller: super::Caller,
    ) -> Result<ReadResourceResult, ErrorData> {
        let Some(passthrough) = self.passthrough.as_ref().filter(|p| p.served().resources) else {
            return Err(not_served("resources"));
        };
        let Some(gate) = passthrough.resource_gate(&request.uri).await? else {
            return Err(ErrorData::new(
                NOT_FOUND,
                "no upstream serves a resource at this URI; nothing was read",
                None,
            ));
        };
        // A resource hidden from this caller answers as one nobody serves (decided and
        // audited as any read): its refusal does not tell the caller it is there.
        let hidden = self.hidden_from(&gate, &caller);
        let answer = self
            .through_gate(gate, json!({"uri": request.uri}), context, caller)
            .await
            .map_err(|error| {
                if hidden {
                    ErrorData::new(
                        NOT_FOUND,
                        "no upstream serves a resource at this URI; nothing was read",
                        None,
                    )
                } else {
                    error
                }
            })?;
        let mut result: ReadResourceResult = serde_json::from_value(without_reserved_meta(answer))
            .map_err(|_| unreadable("resource"))?;
        // An upstream on an earlier revision sends none; the SDK leaves it out for such clients.
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result)
    }

    /// `prompts/get`: the prompt's gate, called with its name and arguments.
    pub(super) async fn get_prompt_gated(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
        caller: super::Caller,
    ) -> Result<GetPromptResult, ErrorData> {
        let Some(passthrough) = self.passthrough.as_ref().filter(|p| p.served().prompts) else {
            return Err(not_served("prompts"));
        };
        let Some(gate) = passthrough.prompt_gate(&request.name) else {
            return Err(ErrorData::invalid_params(
                "no upstream serves a prompt of this name; nothing was got",
                None,
            ));
        };
        let mut arguments = json!({"name": request.name});
        if let Some(given) = request.arguments {
            arguments["arguments"] = Value::Object(given);
        }
        // As for a resource: a prompt hidden from this caller answers as one nobody serves.
        let hidden = self.hidden_from(&gate, &caller);
        let answer = self
            .through_gate(gate, arguments, context, caller)
            .await
            .map_err(|error| {
                if hidden {
                    ErrorData::invalid_params(
                        "no upstream serves a prompt of this name; nothing was got",
                        None,
                    )
                } else {
                    error
                }
            })?;
        let mut result: GetPromptResult = serde_json::from_value(without_reserved_meta(answer))
            .map_err(|_| unreadable("prompt"))?;
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result)
    }

    /// Whether `gate` is left out of `caller`'s lists (the policy denies every call of theirs).
    fn hidden_from(&self, gate: &str, caller: &super::Caller) -> bool {
        !self
            .controller
            .listed_specs_for(caller.principal.as_deref())
            .iter()
            .any(|spec| spec.name == gate)
    }

    /// Calls `gate` for this request's caller: its structured content, or why it is not given.
    async fn through_gate(
        &self,
        gate: String,
        arguments: Value,
        context: &RequestContext<RoleServer>,
        caller: super::Caller,
    ) -> Result<Value, ErrorData> {
        let askable = approval::Askable::of(context);
        // What the upstream sends meanwhile is judged as this gate's result is.
        let name = gate.clone();
        let work = self.through_gate_for(gate, arguments, &caller, &context.peer, askable);
        super::downstream::as_tool(&name, work).await
    }

    /// Calls `gate` for `caller`, whose session is `peer`: its structured content, or why it is
    /// not given.
    pub(super) async fn through_gate_for(
        &self,
        gate: String,
        arguments: Value,
        caller: &super::Caller,
        peer: &Peer<RoleServer>,
        askable: approval::Askable,
    ) -> Result<Value, ErrorData> {
        let mut call = ToolCall::new(self.call_ids.next(), gate, arguments);
        call.principal.clone_from(&caller.principal);
        let result = match self.controller.handle_async(call).await {
            Outcome::Completed(result) => result,
            Outcome::PendingApproval(request) => {
                self.ask_for_gate(request, peer, caller, askable).await?
            }
        };
        if result.is_error {
            return Err(ErrorData::invalid_request(result.content, None));
        }
        result.structured.ok_or_else(|| unreadable("answer"))
    }

    /// A gated request the policy asks about: put to the person in the same request, to a client
    /// that takes elicitations on an `initialize` revision. Nobody else can answer it usefully —
    /// the reader waits now, and an answer given later would read for nobody —, so when the
    /// client cannot be asked, or gives no answer, the approval is withdrawn at once (audited as
    /// revoked) instead of waiting in the store, and the client is told why nothing was passed
    /// on.
    async fn ask_for_gate(
        &self,
        request: ApprovalRequest,
        peer: &Peer<RoleServer>,
        caller: &super::Caller,
        askable: approval::Askable,
    ) -> Result<ToolResult, ErrorData> {
        let mut why = "this client cannot be asked in the request (it takes no form elicitation on an initialize revision)";
        if askable.in_request() {
            let asked = peer
                .create_elicitation_with_timeout(
                    approval::question(&request, self.approvals_at.as_deref()),
                    Some(super::server::ELICITATION_TIMEOUT),
                )
                .await;
            if let Ok(answer) = asked {
                let resolved = self
                    .resolve(request.approval_id, Answer::of(&answer.action), caller)
                    .await;
                if let Err(refused) = resolved {
                    // This person may not answer it (the rule names other approvers): nobody
                    // else can usefully, so it does not wait either.
                    self.withdraw(request.approval_id).await;
                    return Err(ErrorData::invalid_request(refused, None));
                }
                return resolved.map_err(|why| ErrorData::invalid_request(why, None));
            }
            why = "the client gave no answer";
        }
        self.withdraw(request.approval_id).await;
        Err(ErrorData::invalid_request(
            format!(
                "a person must approve this first ({reason}), and {why}; the request was withdrawn and nothing was passed on",
                reason = request.reason,
            ),
            None,
        ))
    }
}

impl McpServer {
    /// Withdraws a waiting approval (audited as revoked); one already answered stays answered.
    async fn withdraw(&self, id: crate::approvals::ApprovalId) {
        let controller = std::sync::Arc::clone(&self.controller);
        // The store may be a database: withdrawn off the runtime's threads.
        let _ = tokio::task::spawn_blocking(move || controller.revoke(id)).await;
    }
}

/// A result with its `_meta` keys under toolgate's and the protocol's reserved prefixes removed
/// (see [`RESERVED_META_PREFIX`](super::RESERVED_META_PREFIX)): no upstream makes a client believe
/// a read waits for an approval, or that another server answered.
pub(super) fn without_reserved_meta(mut result: Value) -> Value {
    if let Some(object) = result.as_object_mut()
        && let Some(Value::Object(meta)) = object.remove("_meta")
        && let Some(meta) = crate::providers::mcp::without_reserved_keys(meta)
    {
        object.insert("_meta".to_owned(), Value::Object(meta));
    }
    result
}

/// The refusal of a method this server does not serve.
pub(super) fn not_served(what: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("this server serves no {what}"),
        None,
    )
}

/// A gate's answer that is not the protocol's result: refused whole, quoting nothing.
fn unreadable(what: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("the upstream's {what} is not a valid MCP result; nothing of it was passed on"),
        None,
    )
}
