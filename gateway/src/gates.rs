//! The gates of an upstream's resources and prompts: registry tools named
//! `<served prefix>resources/read` and `<served prefix>prompts/get` (see
//! [`toolgate::mcp::passthrough`]), judged by the policy like the upstream's tools, whose
//! handlers read the resource or get the prompt from the upstream — as the client request they
//! run for, so what the upstream sends meanwhile (progress, a log message, a sampling request)
//! belongs to that client.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientRequest, GetPromptRequest, GetPromptRequestParams, ReadResourceRequest,
    ReadResourceRequestParams, ServerResult,
};
use serde_json::Value;
use toolgate::definition::ToolOutput;
use toolgate::mcp::CallFailure;
use toolgate::mcp::passthrough::{self, GET_PROMPT, READ_RESOURCE};
use toolgate::{ToolDefinition, ToolError, ToolSpec};

use crate::config::Config;
use crate::upstream::Link;

/// Which of resources and prompts `link`'s upstream declared; both `false` while it is down.
pub fn declared(link: &Link) -> (bool, bool) {
    let info = link.peer().ok().and_then(|peer| peer.peer_info());
    info.map_or((false, false), |info| {
        (
            info.capabilities.resources.is_some(),
            info.capabilities.prompts.is_some(),
        )
    })
}

/// The gates of `link`'s upstream, each bounded like its tools' calls. Every upstream has both,
/// whatever it declared: a policy naming them loads while the upstream is down, or after it
/// stops serving resources (a gate of an upstream that serves none answers so, sending nothing).
pub fn definitions(config: &Arc<Config>, link: &Arc<Link>) -> Vec<ToolDefinition> {
    let limits = &config.limits;
    let mut gates = Vec::new();
    {
        let link = Arc::clone(link);
        let timeout = limits.call_timeout;
        let spec = read_spec(config, link.name());
        gates.push(ToolDefinition::blocks_async(
            spec,
            move |arguments: Value| {
                let link = Arc::clone(&link);
                async move { read(&link, &arguments, timeout).await }
            },
        ));
    }
    {
        let link = Arc::clone(link);
        let config = Arc::clone(config);
        let spec = get_spec(&config, link.name());
        gates.push(ToolDefinition::blocks_async(
            spec,
            move |arguments: Value| {
                let (link, config) = (Arc::clone(&link), Arc::clone(&config));
                async move { get(&config, &link, arguments).await }
            },
        ));
    }
    gates
        .into_iter()
        .filter_map(|gate| {
            gate.map(|gate| gate.with_max_output_bytes(limits.max_message_bytes))
                .map_err(|error| tracing::error!(upstream = %link.name(), "a gate could not be built: {error}"))
                .ok()
        })
        .collect()
}

/// The spec of `upstream`'s gate reading resources.
fn read_spec(config: &Config, upstream: &str) -> ToolSpec {
    ToolSpec::new(
        config.served_name(upstream, READ_RESOURCE),
        "Reads a resource of this upstream (resources/read).",
        passthrough::read_resource_schema(),
    )
}

/// The spec of `upstream`'s gate getting prompts.
fn get_spec(config: &Config, upstream: &str) -> ToolSpec {
    ToolSpec::new(
        config.served_name(upstream, GET_PROMPT),
        "Gets a prompt of this upstream (prompts/get).",
        passthrough::get_prompt_schema(),
    )
}

/// The specs of every gate `serve` registers for `upstream` — reading, getting, and the requests
/// its config forwards —, for what reads the policy without starting it (`policy diff`,
/// `explain` from the pins file).
pub fn specs(config: &Config, upstream: &crate::config::UpstreamConfig) -> Vec<ToolSpec> {
    let mut specs = vec![
        read_spec(config, &upstream.name),
        get_spec(config, &upstream.name),
    ];
    let requests = [
        upstream
            .forwarded
            .sampling
            .clone()
            .map(passthrough::sampling_gate),
        upstream
            .forwarded
            .elicitation
            .clone()
            .map(passthrough::elicitation_gate),
    ];
    specs.extend(
        requests
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|gate| gate.spec().clone()),
    );
    specs
}

/// `resources/read` of the URI in `arguments`, sent upstream within `timeout`.
async fn read(link: &Link, arguments: &Value, timeout: Duration) -> Result<ToolOutput, ToolError> {
    let uri = arguments["uri"].as_str().unwrap_or_default().to_owned();
    let session = up(link, |(resources, _)| resources, "resources")?;
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
        ReadResourceRequestParams::new(uri),
    ));
    match crate::forward::exchange(&session, link.name(), request, timeout).await? {
        ServerResult::ReadResourceResult(answer) => structured(link, &answer),
        _ => Err(crate::forward::failed(link.name(), CallFailure::Unreadable)),
    }
}

/// `prompts/get` of the prompt `arguments` names (as served), sent upstream.
async fn get(config: &Config, link: &Link, arguments: Value) -> Result<ToolOutput, ToolError> {
    let served = arguments["name"].as_str().unwrap_or_default();
    let Some((upstream, own)) = config.owner_of(served) else {
        return Err(ToolError::new(
            "no upstream serves a prompt of this name; nothing was sent",
        ));
    };
    if upstream != link.name() {
        return Err(ToolError::new(
            "this prompt is another upstream's; nothing was sent",
        ));
    }
    let mut params = GetPromptRequestParams::new(own);
    if let Some(Value::Object(given)) = arguments.get("arguments") {
        params = params.with_arguments(given.clone());
    }
    let session = up(link, |(_, prompts)| prompts, "prompts")?;
    let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
    let timeout = config.limits.call_timeout;
    match crate::forward::exchange(&session, link.name(), request, timeout).await? {
        ServerResult::GetPromptResult(answer) => structured(link, &answer),
        _ => Err(crate::forward::failed(link.name(), CallFailure::Unreadable)),
    }
}

/// The session of `link`'s upstream, if it serves `what` (`serves` picks it from what it
/// declared); otherwise why not (nothing is sent).
fn up(
    link: &Link,
    serves: fn((bool, bool)) -> bool,
    what: &str,
) -> Result<crate::upstream::Session, ToolError> {
    let session = link.session().map_err(|why| {
        ToolError::new(format!(
            "upstream `{}` is unavailable ({why}); nothing was sent",
            link.name()
        ))
    })?;
    if !serves(declared(link)) {
        return Err(ToolError::new(format!(
            "upstream `{}` serves no {what}; nothing was sent",
            link.name()
        )));
    }
    Ok(session)
}

/// The protocol's answer as the gate's structured content (what the server hands the client).
fn structured(link: &Link, answer: &impl serde::Serialize) -> Result<ToolOutput, ToolError> {
    serde_json::to_value(answer)
        .map(|answer| ToolOutput::new(Vec::new()).with_structured(answer))
        .map_err(|_| {
            ToolError::new(format!(
                "upstream `{}` answered with a result the gateway cannot encode; nothing was passed on",
                link.name()
            ))
        })
}
