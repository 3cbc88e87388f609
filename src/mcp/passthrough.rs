//! What an [`McpServer`](super::McpServer) serves beyond tools when something else holds it — a
//! gateway's upstreams: resources, resource templates, prompts, completions and logging.
//!
//! Reading a resource and getting a prompt hand content to the model, so each is gated like a
//! call: the server makes a [`ToolCall`](crate::ToolCall) of the registry tool the
//! [`Passthrough`] names for it (a *gate*), with the URI, or the prompt's name and arguments, as
//! its arguments — resolved, validated, decided by the policy (an `ask` held for a person),
//! recorded in the audit log with the caller's principal, like any call. The gate's handler does
//! the reading; its result's structured content is the protocol's result. Gates are named with
//! a protocol method as suffix ([`READ_RESOURCE`], [`GET_PROMPT`]), never listed as a tool and
//! refused by `tools/call`; a policy pattern allows or asks for a gate only if it ends with the
//! gate's method, so a rule written for tools does not start allowing resources.
//!
//! Listing passes what the caller could be allowed: an entry whose gate the policy denies
//! whatever its arguments is left out, as a tool is. Completions, logging levels and
//! subscriptions pass unjudged: they carry no content of a resource or prompt (a subscriber learns
//! only that a URI changed, and reading it is gated).

use std::future::Future;
use std::pin::Pin;

use rmcp::ErrorData;
#[expect(
    deprecated,
    reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
)]
use rmcp::model::LoggingLevel;
use rmcp::model::{CompleteRequestParams, CompleteResult, Prompt, Resource, ResourceTemplate};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};

use super::Caller;
use crate::definition::{DefinitionError, ToolOutput};
use crate::{ToolDefinition, ToolError, ToolSpec};

/// The suffix of a gate that reads a resource; its arguments are `{"uri": URI}`.
pub const READ_RESOURCE: &str = "resources/read";
/// The suffix of a gate that gets a prompt; its arguments are `{"name": NAME, "arguments": {…}}`
/// (the prompt's name as served, its arguments as the client sent them).
pub const GET_PROMPT: &str = "prompts/get";

/// The suffix of a gate that puts an upstream's `sampling/createMessage` to a client; its
/// arguments are the request's parameters.
pub const CREATE_MESSAGE: &str = "sampling/createMessage";
/// The suffix of a gate that puts an upstream's `elicitation/create` to a client; its arguments
/// are the request's parameters.
pub const ELICIT: &str = "elicitation/create";

/// Whether `tool` names a gate (ends with a protocol method a tool name cannot hold): such a
/// registry entry is not a tool — never listed by `tools/list`, refused by `tools/call`.
pub fn is_gate(tool: &str) -> bool {
    crate::gate_names::gate_method(tool).is_some()
}

/// A gate named `name` that puts an upstream's sampling request to the client of the call it
/// came during ([`Downstream::create_message`](super::Downstream::create_message)): its handler
/// sends the request's parameters (its arguments) to that client and returns the client's answer
/// as structured content. Run any other way — a call approved later, out of band — it asks
/// nobody and fails: the upstream's request it answered has ended.
///
/// # Errors
///
/// A name the registry would refuse.
pub fn sampling_gate(name: impl Into<String>) -> Result<ToolDefinition, DefinitionError> {
    let spec = ToolSpec::new(
        name,
        "Puts an upstream's sampling request (sampling/createMessage) to the client.",
        json!({
            "type": "object",
            "properties": {"messages": {"type": "array"}, "maxTokens": {"type": "integer"}},
            "required": ["messages", "maxTokens"]
        }),
    );
    ToolDefinition::blocks_async(spec, |arguments: Value| async move {
        let client = asked_client()?;
        #[expect(
            deprecated,
            reason = "sampling is forwarded on the revisions that have it"
        )]
        let request: rmcp::model::CreateMessageRequestParams =
            serde_json::from_value(arguments).map_err(|_| unreadable_request())?;
        #[expect(
            deprecated,
            reason = "sampling is forwarded on the revisions that have it"
        )]
        let answer = client.peer().create_message(request).await;
        answered(answer)
    })
}

/// A gate named `name` that puts an upstream's elicitation request to the client of the call it
/// came during, as [`sampling_gate`] does.
///
/// # Errors
///
/// A name the registry would refuse.
pub fn elicitation_gate(name: impl Into<String>) -> Result<ToolDefinition, DefinitionError> {
    let spec = ToolSpec::new(
        name,
        "Puts an upstream's elicitation request (elicitation/create) to the client.",
        json!({
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"]
        }),
    );
    ToolDefinition::blocks_async(spec, |arguments: Value| async move {
        let client = asked_client()?;
        let request: rmcp::model::ElicitRequestParams =
            serde_json::from_value(arguments).map_err(|_| unreadable_request())?;
        let answer = client.peer().create_elicitation(request).await;
        answered(answer)
    })
}

/// The client request a sampling or elicitation gate runs for.
fn asked_client() -> Result<super::Downstream, ToolError> {
    super::Downstream::current().ok_or_else(|| {
        ToolError::new(
            "no client request waits for this answer any more (the upstream's request ended); nobody was asked",
        )
    })
}

fn unreadable_request() -> ToolError {
    ToolError::new("the upstream's request is not one the protocol defines; nobody was asked")
}

/// The client's answer as the gate's structured content, or why there is none.
fn answered<A: serde::Serialize>(
    answer: Result<A, rmcp::ServiceError>,
) -> Result<ToolOutput, ToolError> {
    match answer {
        Ok(answer) => serde_json::to_value(answer)
            .map(|answer| ToolOutput::new(Vec::new()).with_structured(answer))
            .map_err(|_| ToolError::new("the client's answer cannot be encoded")),
        Err(rmcp::ServiceError::McpError(error)) => Err(ToolError::new(format!(
            "the client refused (code {}): {}",
            error.code.0,
            super::call_failure::cut(&error.message, 1000)
        ))),
        Err(_) => Err(ToolError::new(
            "the client gave no answer (its session closed, or it cannot be asked on its protocol revision)",
        )),
    }
}

/// The input schema of a gate reading resources: one URI, nothing else.
pub fn read_resource_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"uri": {"type": "string", "minLength": 1}},
        "required": ["uri"],
        "additionalProperties": false
    })
}

/// The input schema of a gate getting prompts: the prompt's name and its string arguments.
pub fn get_prompt_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "arguments": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "required": ["name"],
        "additionalProperties": false
    })
}

/// A future a [`Passthrough`] returns.
pub type Passing<'a, T> = Pin<Box<dyn Future<Output = Result<T, ErrorData>> + Send + 'a>>;

/// Whether a subscriber may still be told of a resource's updates: asked at each update, since
/// the policy in force can change after the subscription was made.
#[derive(Clone)]
pub struct Watching(std::sync::Arc<dyn Fn() -> bool + Send + Sync>);

impl Watching {
    /// A subscription told of updates while `still` holds.
    pub fn new(still: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(still))
    }

    /// Whether the subscriber may be told now.
    pub fn still(&self) -> bool {
        (self.0)()
    }
}

impl std::fmt::Debug for Watching {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watching(..)")
    }
}

/// A listed entry and the gate deciding who may read or get it.
#[derive(Clone, Debug)]
pub struct Gated<T> {
    /// The entry as the client sees it.
    pub entry: T,
    /// The registry tool a read or get of it is judged as.
    pub gate: String,
}

/// What a [`Passthrough`] serves; the server declares exactly these capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Served {
    /// `resources/list`, `resources/templates/list`, `resources/read`.
    pub resources: bool,
    /// `resources/subscribe` and `resources/unsubscribe`.
    pub subscriptions: bool,
    /// `prompts/list`, `prompts/get`.
    pub prompts: bool,
    /// `completion/complete`.
    pub completions: bool,
    /// `logging/setLevel`, and log messages sent on.
    pub logging: bool,
}

impl Served {
    /// Nothing beyond tools.
    pub fn nothing() -> Self {
        Self::default()
    }

    /// The same, serving resources (and subscriptions to them when `subscriptions`).
    #[must_use]
    pub fn with_resources(mut self, subscriptions: bool) -> Self {
        self.resources = true;
        self.subscriptions = subscriptions;
        self
    }

    /// The same, serving prompts.
    #[must_use]
    pub fn with_prompts(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// The same, serving completions.
    #[must_use]
    pub fn with_completions(mut self) -> Self {
        self.completions = true;
        self
    }

    /// The same, serving logging.
    #[must_use]
    pub fn with_logging(mut self) -> Self {
        self.logging = true;
        self
    }
}

/// The source of what a server serves beyond tools (see the [module](self) docs). A method for
/// something [`served`](Passthrough::served) does not name is never called.
pub trait Passthrough: Send + Sync + 'static {
    /// What it serves now.
    fn served(&self) -> Served;

    /// Every resource, each with its gate.
    fn list_resources(&self) -> Passing<'_, Vec<Gated<Resource>>>;

    /// Every resource template, each with the gate of the URIs it makes.
    fn list_resource_templates(&self) -> Passing<'_, Vec<Gated<ResourceTemplate>>>;

    /// The gate reading `uri`; `None`: nothing serves it.
    fn resource_gate<'a>(&'a self, uri: &'a str) -> Passing<'a, Option<String>>;

    /// Every prompt, each with its gate.
    fn list_prompts(&self) -> Passing<'_, Vec<Gated<Prompt>>>;

    /// The gate getting the prompt served as `name`; `None`: nothing serves it.
    fn prompt_gate(&self, name: &str) -> Option<String>;

    /// Completes a prompt's or a resource template's argument.
    fn complete(&self, request: CompleteRequestParams) -> Passing<'_, CompleteResult>;

    /// Sends `notifications/resources/updated` for `uri` to `peer`, the session of `caller`,
    /// until that session unsubscribes or ends — each update only while `watching` still holds
    /// (the policy in force may hide the resource from the caller after it subscribed).
    fn subscribe(
        &self,
        uri: String,
        caller: Caller,
        peer: Peer<RoleServer>,
        watching: Watching,
    ) -> Passing<'_, ()>;

    /// Ends the subscription of `caller`'s session to `uri`.
    fn unsubscribe(&self, uri: String, caller: Caller) -> Passing<'_, ()>;

    /// A number that grows when the resource or prompt list may have changed: each session is
    /// then sent `notifications/resources/list_changed` and `notifications/prompts/list_changed`
    /// (read as often as the controller's generation).
    fn listings_generation(&self) -> u64 {
        0
    }

    /// Sends `subscriber` log messages at `level` and above.
    #[expect(
        deprecated,
        reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
    )]
    fn set_level(&self, level: LoggingLevel, subscriber: Peer<RoleServer>) -> Passing<'_, ()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_are_named_by_their_suffix_only() {
        assert!(is_gate("resources/read"));
        assert!(is_gate("files__resources/read"));
        assert!(is_gate("files__prompts/get"));
        assert!(is_gate("files__sampling/createMessage"));
        assert!(is_gate("elicitation/create"));
        assert!(!is_gate("files__read_resource"));
        assert!(!is_gate("resources/read_all"));
        assert!(!is_gate("prompts/list"));
    }

    #[test]
    fn gate_schemas_take_exactly_what_the_server_sends() {
        let read = crate::ToolDefinition::new(
            crate::ToolSpec::new("resources/read", "", read_resource_schema()),
            |_: &Value| Ok(String::new()),
        )
        .expect("a schema");
        assert!(read.validate(&json!({"uri": "test://a"})).is_ok());
        assert!(read.validate(&json!({"uri": ""})).is_err());
        assert!(
            read.validate(&json!({"uri": "test://a", "more": 1}))
                .is_err()
        );
        let get = crate::ToolDefinition::new(
            crate::ToolSpec::new("prompts/get", "", get_prompt_schema()),
            |_: &Value| Ok(String::new()),
        )
        .expect("a schema");
        assert!(
            get.validate(&json!({"name": "p", "arguments": {"a": "b"}}))
                .is_ok()
        );
        assert!(
            get.validate(&json!({"name": "p", "arguments": {"a": 1}}))
                .is_err()
        );
        assert!(get.validate(&json!({"arguments": {}})).is_err());
    }
}
