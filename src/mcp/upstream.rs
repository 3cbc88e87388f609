//! An upstream: an MCP server started as a child process, its tools imported as toolgate
//! definitions whose handlers forward the call — every wait and every size bounded.

use std::process::Stdio;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::{ServiceExt as _, model::Tool};
use serde_json::Value;

use super::McpError;
use super::call_failure::{CallFailure, cut};
use super::frames::pump;
use super::listing::list_tools;
use super::wire::tool_output;
use crate::contract::{ToolSpec, quote_bounded};
use crate::definition::{DefinitionError, ToolDefinition, ToolError, ToolOutput};
use crate::registry::ToolRegistry;

/// A running upstream MCP server, spoken to as a client over its stdin and stdout (2025-11-25
/// `initialize` handshake). Dropping it stops the session; the child is killed with it.
///
/// # Guarantees
///
/// Nothing the upstream sends makes its client wait or grow without bound ([`UpstreamLimits`]):
/// the handshake, the whole `tools/list` and each call have a time bound; a message over
/// `max_message_bytes` is dropped as it streams by, and a call waiting for it gets an error saying
/// the upstream ran the call; list pages are counted and a repeated cursor ends the list; a
/// refusal's message is cut to `max_refusal_chars`.
#[derive(Debug)]
pub struct Upstream {
    service: RunningService<RoleClient, ()>,
    limits: UpstreamLimits,
    _child: tokio::process::Child,
}

/// The bounds an [`Upstream`] keeps. The defaults: 4 MiB messages, 30 s for the handshake, 100
/// list pages within 30 s, 5 minutes per call, refusal messages cut to 1,000 characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamLimits {
    /// The largest message read from the upstream, in bytes.
    pub max_message_bytes: usize,
    /// How long the `initialize` handshake may take.
    pub handshake_timeout: Duration,
    /// The most `tools/list` pages followed.
    pub max_list_pages: usize,
    /// How long all `tools/list` pages may take together.
    pub list_timeout: Duration,
    /// How long one call may wait for its reply.
    pub call_timeout: Duration,
    /// The most characters of an upstream's refusal message kept.
    pub max_refusal_chars: usize,
}

impl Default for UpstreamLimits {
    fn default() -> Self {
        Self {
            max_message_bytes: 4 << 20,
            handshake_timeout: Duration::from_secs(30),
            max_list_pages: 100,
            list_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(300),
            max_refusal_chars: 1000,
        }
    }
}

/// An upstream tool that was not imported, and why (its schema does not compile offline, its
/// name could be taken for another's). The tool is not served; nothing can call it through the
/// gateway.
#[derive(Debug)]
#[non_exhaustive]
pub struct Skipped {
    /// The tool's name, bounded and escaped.
    pub name: String,
    /// Why it was left out.
    pub error: SkipReason,
}

/// Why an upstream tool was left out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkipReason {
    /// Its definition could not be built (a schema that refers outside itself, say).
    #[error(transparent)]
    Definition(#[from] DefinitionError),
    /// Its name holds an invisible character, or looks like a tool imported before it (which is
    /// served): a registry refuses both, and one such tool must not keep the others out.
    #[error(transparent)]
    Name(#[from] crate::registry::RegistryError),
}

impl Upstream {
    /// Starts `command` and opens an MCP session on its stdin and stdout, with the default
    /// [`UpstreamLimits`]. Its stderr is inherited.
    ///
    /// # Errors
    ///
    /// [`McpError::Spawn`] if the process cannot start, [`McpError::Upstream`] if it does not
    /// complete the handshake within its bound.
    pub async fn spawn(command: tokio::process::Command) -> Result<Self, McpError> {
        Self::spawn_with(command, UpstreamLimits::default()).await
    }

    /// [`spawn`](Self::spawn) with `limits`.
    ///
    /// # Errors
    ///
    /// As [`spawn`](Self::spawn).
    pub async fn spawn_with(
        mut command: tokio::process::Command,
        limits: UpstreamLimits,
    ) -> Result<Self, McpError> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(McpError::Spawn)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(McpError::Spawn(std::io::Error::other(
                "no pipes to the child",
            )));
        };
        // The SDK reads a bounded copy of stdout (it would buffer a line up to 16 MiB and then
        // drop it silently, leaving the call waiting).
        let (bounded, sdk_side) = tokio::io::duplex(64 * 1024);
        tokio::spawn(pump(stdout, bounded, limits.max_message_bytes));
        let service =
            match tokio::time::timeout(limits.handshake_timeout, ().serve((sdk_side, stdin))).await
            {
                Ok(Ok(service)) => service,
                Ok(Err(error)) => return Err(McpError::Upstream(Box::new(error))),
                Err(_) => {
                    return Err(McpError::Upstream(
                        format!(
                            "no answer to the handshake within {} ms",
                            limits.handshake_timeout.as_millis()
                        )
                        .into(),
                    ));
                }
            };
        Ok(Self {
            service,
            limits,
            _child: child,
        })
    }

    /// The peer to send requests to.
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// The upstream's tools as a registry whose handlers forward each call upstream, and the tools
    /// that could not be imported. Names, descriptions, input and output schemas are taken as
    /// sent; annotations are hints and are dropped — only the gateway's policy decides. A call's
    /// result is passed on whole ([`ToolDefinition::blocks_async`]): every content block, the
    /// structured content (checked against the output schema), `isError` and `_meta`.
    ///
    /// # Errors
    ///
    /// [`McpError::Upstream`] if `tools/list` fails, [`McpError::Registry`] if the upstream lists
    /// one name twice. A name a registry would refuse as a look-alike (an invisible character, a
    /// name differing from an earlier one only in case or in characters drawn alike) is skipped,
    /// not fatal: a hostile upstream cannot keep its other tools out with one bad name.
    pub async fn import_tools(&self) -> Result<(ToolRegistry, Vec<Skipped>), McpError> {
        let tools = list_tools(
            self.peer(),
            self.limits.max_list_pages,
            self.limits.list_timeout,
        )
        .await
        .map_err(|error| McpError::Upstream(Box::new(error)))?;
        let mut definitions = Vec::with_capacity(tools.len());
        let mut skipped = Vec::new();
        let mut names = std::collections::HashSet::new();
        let mut look_alikes = crate::registry::LookAlikes::default();
        for tool in tools {
            // A name given twice stays fatal (the registry says so); a look-alike is skipped.
            if names.insert(tool.name.to_string())
                && let Err(error) = look_alikes.check(&tool.name)
            {
                skipped.push(Skipped {
                    name: quote_bounded(&tool.name),
                    error: error.into(),
                });
                continue;
            }
            match forwarding_definition(self.peer().clone(), &tool, self.limits) {
                Ok(definition) => definitions.push(definition),
                Err(error) => skipped.push(Skipped {
                    name: quote_bounded(&tool.name),
                    error: error.into(),
                }),
            }
        }
        Ok((ToolRegistry::new(definitions)?, skipped))
    }
}

/// A definition for `tool` whose handler sends the validated, authorized arguments upstream.
fn forwarding_definition(
    peer: Peer<RoleClient>,
    tool: &Tool,
    limits: UpstreamLimits,
) -> Result<ToolDefinition, DefinitionError> {
    let mut spec = ToolSpec::new(
        tool.name.to_string(),
        tool.description.as_deref().unwrap_or_default(),
        Value::Object((*tool.input_schema).clone()),
    );
    if let Some(output_schema) = &tool.output_schema {
        spec = spec.with_output_schema(Value::Object((**output_schema).clone()));
    }
    let name = tool.name.to_string();
    ToolDefinition::blocks_async(spec, move |arguments: Value| {
        let peer = peer.clone();
        let name = name.clone();
        async move { forward(&peer, name, arguments, limits).await }
    })
    .map(|definition| definition.with_max_output_bytes(limits.max_message_bytes))
}

async fn forward(
    peer: &Peer<RoleClient>,
    name: String,
    arguments: Value,
    limits: UpstreamLimits,
) -> Result<ToolOutput, ToolError> {
    let Value::Object(arguments) = arguments else {
        return Err(ToolError::new(
            "arguments must be a JSON object; the call was not sent, nothing ran",
        ));
    };
    let request = CallToolRequestParams::new(name).with_arguments(arguments);
    let failure = match tokio::time::timeout(limits.call_timeout, peer.call_tool(request)).await {
        Ok(Ok(result)) => return Ok(tool_output(result)),
        Ok(Err(error)) => CallFailure::of(error),
        Err(_) => {
            return Err(ToolError::new(format!(
                "the upstream server did not answer within {} ms; whether the call took effect is unknown",
                limits.call_timeout.as_millis()
            )));
        }
    };
    Err(ToolError::new(match failure {
        CallFailure::Oversized { .. } => format!(
            "the upstream server ran the call, but its reply was larger than {} bytes and was dropped",
            limits.max_message_bytes
        ),
        CallFailure::Refused { code, message } => format!(
            "the upstream server refused the call (code {code}): {}",
            cut(&message, limits.max_refusal_chars)
        ),
        CallFailure::NotSent => {
            "the upstream server could not be sent the call (its session closed); nothing ran"
                .to_owned()
        }
        CallFailure::Unreadable => "the upstream server answered the call with a result this client cannot read (a content type or field it does not know); the call may have taken effect, and nothing of the answer was passed on".to_owned(),
        CallFailure::Malformed { detail } => format!(
            "the upstream server answered the call, but {}; the call may have taken effect",
            detail.replacen("the upstream's ", "its ", 1)
        ),
        CallFailure::NoAnswer => "the upstream server did not answer (it may have stopped); whether the call took effect is unknown".to_owned(),
    }))
}
