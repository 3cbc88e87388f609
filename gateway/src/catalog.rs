//! The tools the gateway serves: every upstream's tools under `<upstream><separator><tool>`, each
//! a toolgate definition whose handler forwards the authorized call through the upstream's
//! [`Link`].

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::Tool;
use serde_json::Value;
use toolgate::mcp::tool_output;
use toolgate::registry::LookAlikes;
use toolgate::{ToolDefinition, ToolSpec};

use crate::config::Config;
use crate::metrics::Metrics;
use crate::pins::{Pins, Verdict};
use crate::upstream::Link;

use crate::shown::quoted;

/// One served tool: where it comes from and its definition.
pub struct Served {
    /// The upstream's name.
    pub upstream: String,
    /// The tool's name upstream.
    pub tool: Tool,
    /// What clients see of it, under the served name.
    pub spec: ToolSpec,
    /// Its definition's digest (what a pin holds).
    pub digest: String,
}

/// An upstream tool left out, and why.
#[derive(Debug)]
pub struct Left {
    pub upstream: String,
    pub name: String,
    pub why: String,
}

/// The served tools of every upstream, their definitions (for the registry) and what was left
/// out.
pub struct Catalog {
    pub served: Vec<Served>,
    pub definitions: Vec<ToolDefinition>,
    pub left: Vec<Left>,
    /// Upstreams with no pins yet: their served tools' definitions and digests, to pin.
    pub first_seen: std::collections::BTreeMap<String, Vec<(Tool, String)>>,
    /// Pinned definitions of tools that changed or vanished upstream: what the registry holds
    /// in their place, held back, when the policy names them.
    pub stand_ins: Vec<StandIn>,
}

/// A tool's pinned definition standing in for what its upstream lists now (changed, or gone):
/// in the registry so that a policy naming it loads, and held back so that no call reaches it.
pub struct StandIn {
    pub served: Served,
    pub definition: ToolDefinition,
    /// Why it is held back, for the log, `/healthz` and `check`.
    pub why: String,
}

/// A problem that stops the catalog from being served.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CatalogError(pub String);

/// The served tools of every upstream, or why they cannot be served together.
///
/// Names that could pass for another (an invisible or bidi character, mixed scripts, a
/// look-alike of a name served before) are left out, never fatal; two upstreams whose tools
/// would be served under one name are refused: the config must rename one.
///
/// # Errors
///
/// Two tools under one served name.
pub fn build(
    config: &Config,
    tools: Vec<(Arc<Link>, Vec<Tool>)>,
    metrics: &Arc<Metrics>,
    pins: &Pins,
) -> Result<Catalog, CatalogError> {
    let mut first_seen = std::collections::BTreeMap::<String, Vec<(Tool, String)>>::new();
    let mut stand_ins = Vec::new();
    let mut served: Vec<Served> = Vec::new();
    let mut definitions: Vec<ToolDefinition> = Vec::new();
    let mut left = Vec::new();
    let mut names = LookAlikes::default();
    let mut owners = std::collections::HashMap::<String, String>::new();
    // The prefixed upstreams claim their names first: a look-alike under an upstream's own
    // names is the one left out, never the prefixed tool it resembles.
    let mut tools = tools;
    tools.sort_by_key(|(link, _)| config.serves_own_names(link.name()));
    let links: Vec<Arc<Link>> = tools.iter().map(|(link, _)| Arc::clone(link)).collect();
    for (link, upstream_tools) in tools {
        let mut own = std::collections::HashSet::new();
        let pinned: std::collections::HashMap<String, (Tool, String)> = pins
            .pinned(link.name())
            .into_iter()
            .map(|(tool, digest)| (tool.name.to_string(), (tool, digest)))
            .collect();
        let stand_in = |tool: &str, why: String| {
            let (pinned_tool, digest) = pinned.get(tool)?;
            let name = config.claimed_name(link.name(), tool)?;
            let definition = forwarding(
                Arc::clone(&link),
                pinned_tool,
                name,
                config.limits.call_timeout,
                Arc::clone(metrics),
            )
            .ok()?
            .with_max_output_bytes(config.limits.max_message_bytes);
            // A pins file edited by hand: its definition is not the one its digest names.
            (definition.digest() == digest).then(|| StandIn {
                served: Served {
                    upstream: link.name().to_owned(),
                    tool: pinned_tool.clone(),
                    spec: definition.spec().clone(),
                    digest: digest.clone(),
                },
                definition,
                why,
            })
        };
        for tool in upstream_tools {
            // A tool served under its own name that reads as another upstream's (`files__x`)
            // would be judged and held back as that upstream's: left out.
            let Some(name) = config.claimed_name(link.name(), &tool.name) else {
                left.push(Left {
                    upstream: link.name().to_owned(),
                    name: quoted(&tool.name),
                    why: "its name reads as another upstream's served tool (it starts with that upstream's name and the separator)".to_owned(),
                });
                continue;
            };
            if toolgate::mcp::passthrough::is_gate(&name) {
                left.push(Left {
                    upstream: link.name().to_owned(),
                    name: quoted(&tool.name),
                    why: "its name ends with a protocol method (resources/read, prompts/get) the gateway names the gates of resources and prompts by".to_owned(),
                });
                continue;
            }
            if !own.insert(tool.name.to_string()) {
                left.push(Left {
                    upstream: link.name().to_owned(),
                    name: quoted(&tool.name),
                    why: "the upstream lists this name twice; neither is served".to_owned(),
                });
                served.retain(|entry| entry.spec.name != name);
                definitions.retain(|definition| definition.spec().name != name);
                continue;
            }
            if let Some(other) = owners.get(&name) {
                return Err(CatalogError(format!(
                    "upstreams `{other}` and `{}` would both serve a tool named {}: rename one upstream in the config",
                    link.name(),
                    quoted(&name)
                )));
            }
            // One bound on a reply, the config's: the library's own output cap (1 MiB by
            // default) would refuse what `limits.max_message_bytes` lets through.
            let definition = forwarding(
                Arc::clone(&link),
                &tool,
                name.clone(),
                config.limits.call_timeout,
                Arc::clone(metrics),
            )
            .map(|definition| definition.with_max_output_bytes(config.limits.max_message_bytes));
            match definition {
                Ok(definition) => {
                    let digest = definition.digest().to_owned();
                    let accept =
                        "not served until accepted with `toolgate-mcp-gateway pin --config FILE`";
                    match pins.judge(link.name(), &tool.name, &digest) {
                        Verdict::Pinned => {}
                        Verdict::FirstSeen => first_seen
                            .entry(link.name().to_owned())
                            .or_default()
                            .push((tool.clone(), digest.clone())),
                        Verdict::Changed { pinned } => {
                            let why = format!(
                                "its definition changed since it was pinned ({pinned} → {digest}); {accept}"
                            );
                            stand_ins.extend(stand_in(&tool.name, why.clone()));
                            left.push(Left {
                                upstream: link.name().to_owned(),
                                name: quoted(&tool.name),
                                why,
                            });
                            continue;
                        }
                        Verdict::New => {
                            left.push(Left {
                                upstream: link.name().to_owned(),
                                name: quoted(&tool.name),
                                why: format!("it is new since its upstream was pinned; {accept}"),
                            });
                            continue;
                        }
                    }
                    // Only a tool that will be served claims its name against look-alikes.
                    if let Err(error) = names.check(&name) {
                        left.push(Left {
                            upstream: link.name().to_owned(),
                            name: quoted(&tool.name),
                            why: error.to_string(),
                        });
                        continue;
                    }
                    owners.insert(name, link.name().to_owned());
                    served.push(Served {
                        upstream: link.name().to_owned(),
                        tool,
                        spec: definition.spec().clone(),
                        digest,
                    });
                    definitions.push(definition);
                }
                Err(error) => left.push(Left {
                    upstream: link.name().to_owned(),
                    name: quoted(&tool.name),
                    why: error.to_string(),
                }),
            }
        }
        // Pinned, and no longer listed.
        for gone in pinned.keys().filter(|name| !own.contains(*name)) {
            let why = "its upstream no longer lists it; not served until its upstream lists it as pinned, or `toolgate-mcp-gateway pin --config FILE` accepts the list without it".to_owned();
            stand_ins.extend(stand_in(gone, why));
        }
    }
    // Each upstream's resources and prompts, gated as calls (not pinned: the gateway defines
    // them, the same for every upstream).
    let shared = Arc::new(config.clone());
    for link in &links {
        let forwarded = config
            .upstreams
            .iter()
            .find(|upstream| upstream.name == link.name())
            .map(|upstream| upstream.forwarded.clone())
            .unwrap_or_default();
        let requests = [
            forwarded
                .sampling
                .map(toolgate::mcp::passthrough::sampling_gate),
            forwarded
                .elicitation
                .map(toolgate::mcp::passthrough::elicitation_gate),
        ];
        let requests = requests.into_iter().flatten().filter_map(|gate| {
            gate.map_err(|error| tracing::error!(upstream = %link.name(), "a gate could not be built: {error}"))
                .ok()
        });
        for gate in crate::gates::definitions(&shared, link)
            .into_iter()
            .chain(requests)
        {
            let name = gate.spec().name.clone();
            if let Some(other) = owners.get(&name) {
                return Err(CatalogError(format!(
                    "upstreams `{other}` and `{}` would both serve {}: rename one upstream in the config",
                    link.name(),
                    quoted(&name)
                )));
            }
            owners.insert(name, link.name().to_owned());
            definitions.push(gate);
        }
    }
    // A stand-in never takes a name another tool is served under.
    stand_ins.retain(|stand_in| !owners.contains_key(&stand_in.served.spec.name));
    Ok(Catalog {
        served,
        definitions,
        left,
        first_seen,
        stand_ins,
    })
}

fn forwarding(
    link: Arc<Link>,
    tool: &Tool,
    served_name: String,
    timeout: Duration,
    metrics: Arc<Metrics>,
) -> Result<ToolDefinition, toolgate::definition::DefinitionError> {
    let spec = ToolSpec::new(
        served_name,
        tool.description.as_deref().unwrap_or_default(),
        Value::Object((*tool.input_schema).clone()),
    );
    let name = tool.name.to_string();
    let call = move |arguments: Value| {
        let link = Arc::clone(&link);
        let name = name.clone();
        let metrics = Arc::clone(&metrics);
        async move {
            let started = std::time::Instant::now();
            let result = crate::forward::forward(&link, name, arguments, timeout).await;
            metrics.observe_upstream(link.name(), started.elapsed());
            result
        }
    };
    // The whole result is passed on (every content block, structuredContent beside them — checked
    // by the library against the output schema when one is declared —, isError, _meta).
    let spec = match &tool.output_schema {
        Some(output_schema) => spec.with_output_schema(Value::Object((**output_schema).clone())),
        None => spec,
    };
    ToolDefinition::blocks_async(spec, move |arguments: Value| {
        let sent = call(arguments);
        async move { sent.await.map(tool_output) }
    })
}

/// What the served tools' descriptions tell the model beside what each tool does (instructions,
/// links, hidden markup, invisible characters): one line per tool that holds any, naming the
/// upstream and the served name. Read when tools are imported (`serve`), pinned and checked.
pub fn description_warnings(served: &[Served]) -> Vec<String> {
    served
        .iter()
        .filter_map(|served| {
            let findings = toolgate::provenance::description_findings(&served.spec.description);
            if findings.is_empty() {
                return None;
            }
            let found: Vec<String> = findings.iter().map(ToString::to_string).collect();
            Some(format!(
                "the description of tool {:?} (upstream {:?}) holds {}",
                served.spec.name,
                served.upstream,
                found.join(", ")
            ))
        })
        .collect()
}
