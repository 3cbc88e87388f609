//! The gateway's upstream: an MCP server started as a child process, its tools imported as
//! toolgate definitions whose handlers forward the call.

use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceExt as _, model::Tool};
use serde_json::Value;

use super::McpError;
use super::wire::result_text;
use crate::contract::{ToolSpec, quote_bounded};
use crate::definition::{DefinitionError, ToolDefinition, ToolError};
use crate::registry::ToolRegistry;

/// A running upstream MCP server, spoken to as a client over its stdin and stdout (2025-11-25
/// `initialize` handshake). Dropping it stops the session; the child is killed with it.
#[derive(Debug)]
pub struct Upstream {
    service: RunningService<RoleClient, ()>,
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
    /// Starts `command` and opens an MCP session on its stdin and stdout. Its stderr is inherited.
    ///
    /// # Errors
    ///
    /// [`McpError::Spawn`] if the process cannot start, [`McpError::Upstream`] if it does not
    /// answer the handshake.
    pub async fn spawn(command: tokio::process::Command) -> Result<Self, McpError> {
        let transport = TokioChildProcess::new(command).map_err(McpError::Spawn)?;
        let service =
            ().serve(transport)
                .await
                .map_err(|error| McpError::Upstream(Box::new(error)))?;
        Ok(Self { service })
    }

    /// The peer to send requests to.
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// The upstream's tools as a registry whose handlers forward each call upstream, and the tools
    /// that could not be imported. Names, descriptions and input schemas are taken as sent;
    /// annotations are hints and are dropped — only the gateway's policy decides.
    ///
    /// # Errors
    ///
    /// [`McpError::Upstream`] if `tools/list` fails, [`McpError::Registry`] if the upstream lists
    /// one name twice. A name a registry would refuse as a look-alike (an invisible character, a
    /// name differing from an earlier one only in case or in characters drawn alike) is skipped,
    /// not fatal: a hostile upstream cannot keep its other tools out with one bad name.
    pub async fn import_tools(&self) -> Result<(ToolRegistry, Vec<Skipped>), McpError> {
        let tools = self
            .peer()
            .list_all_tools()
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
            match forwarding_definition(self.peer().clone(), &tool) {
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
) -> Result<ToolDefinition, DefinitionError> {
    let spec = ToolSpec::new(
        tool.name.to_string(),
        tool.description.as_deref().unwrap_or_default(),
        Value::Object((*tool.input_schema).clone()),
    );
    let name = tool.name.to_string();
    ToolDefinition::new_async(spec, move |arguments: Value| {
        let peer = peer.clone();
        let name = name.clone();
        async move { forward(&peer, name, arguments).await }
    })
}

async fn forward(
    peer: &Peer<RoleClient>,
    name: String,
    arguments: Value,
) -> Result<String, ToolError> {
    let Value::Object(arguments) = arguments else {
        return Err(ToolError::new("arguments must be a JSON object"));
    };
    let request = CallToolRequestParams::new(name).with_arguments(arguments);
    match peer.call_tool(request).await {
        Ok(result) if result.is_error == Some(true) => Err(ToolError::new(result_text(&result))),
        Ok(result) => Ok(result_text(&result)),
        Err(ServiceError::McpError(error)) => Err(ToolError::new(format!(
            "the upstream server refused the call (code {}): {}",
            error.code.0, error.message
        ))),
        Err(_) => Err(ToolError::new(
            "the upstream server did not answer (it may have stopped); whether the call took effect is unknown",
        )),
    }
}
