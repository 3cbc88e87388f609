//! The tools the gateway serves: every upstream's tools under `<upstream><separator><tool>`, each
//! a toolgate definition whose handler forwards the authorized call through the upstream's
//! [`Link`].

use std::collections::{BTreeMap, HashMap, HashSet};
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
#[derive(Default)]
pub struct Catalog {
    pub served: Vec<Served>,
    pub definitions: Vec<ToolDefinition>,
    pub left: Vec<Left>,
    /// Upstreams with no pins yet: their served tools' definitions and digests, to pin.
    pub first_seen: BTreeMap<String, Vec<(Tool, String)>>,
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
    let mut building = Building {
        config,
        metrics,
        pins,
        catalog: Catalog::default(),
        names: LookAlikes::default(),
        owners: HashMap::new(),
    };
    // The prefixed upstreams claim their names first: a look-alike under an upstream's own
    // names is the one left out, never the prefixed tool it resembles.
    let mut tools = tools;
    tools.sort_by_key(|(link, _)| config.serves_own_names(link.name()));
    let links: Vec<Arc<Link>> = tools.iter().map(|(link, _)| Arc::clone(link)).collect();
    for (link, upstream_tools) in tools {
        building.upstream(&link, upstream_tools)?;
    }
    // Each upstream's resources and prompts, gated as calls (not pinned: the gateway defines
    // them, the same for every upstream).
    let shared = Arc::new(config.clone());
    for link in &links {
        building.gates(&shared, link)?;
    }
    Ok(building.finish())
}

/// A catalog being built, upstream by upstream.
struct Building<'a> {
    config: &'a Config,
    metrics: &'a Arc<Metrics>,
    pins: &'a Pins,
    catalog: Catalog,
    /// The served names so far, for look-alikes of them.
    names: LookAlikes,
    /// The upstream serving each name taken so far.
    owners: HashMap<String, String>,
}

/// An upstream's pinned tools, by name, with their digests.
type PinnedTools = HashMap<String, (Tool, String)>;

impl Building<'_> {
    /// The tools `link`'s upstream lists: each served or left out, and the pinned ones changed or
    /// no longer listed standing in, held back.
    fn upstream(&mut self, link: &Arc<Link>, tools: Vec<Tool>) -> Result<(), CatalogError> {
        let mut own = HashSet::new();
        let pinned: PinnedTools = self
            .pins
            .pinned(link.name())
            .into_iter()
            .map(|(tool, digest)| (tool.name.to_string(), (tool, digest)))
            .collect();
        // Which of two look-alike names is served must not hang on the order the upstream lists
        // them in: a pinned tool claims its name first, then an ASCII one (`delete` before a
        // fullwidth or Cyrillic look-alike), then the rest; served, they keep the upstream's order.
        let mut place = HashMap::new();
        for (at, tool) in tools.iter().enumerate() {
            place.entry(tool.name.to_string()).or_insert(at);
        }
        let mut claiming = tools;
        claiming.sort_by_key(|tool| {
            (
                !pinned.contains_key(tool.name.as_ref()),
                !tool.name.is_ascii(),
            )
        });
        let first = self.catalog.served.len();
        for tool in claiming {
            self.tool(link, &pinned, &mut own, tool)?;
        }
        self.in_listed_order(first, &place);
        // Pinned, and no longer listed.
        for gone in pinned.keys().filter(|name| !own.contains(*name)) {
            let why = "its upstream no longer lists it; not served until its upstream lists it as pinned, or `toolgate-mcp-gateway pin --config FILE` accepts the list without it".to_owned();
            let stand_in = self.stand_in(link, &pinned, gone, why);
            self.catalog.stand_ins.extend(stand_in);
        }
        Ok(())
    }

    /// Puts the served tools from `first` on (with their definitions) in the order their upstream
    /// listed them: `place` holds each name's first place in its upstream's list.
    fn in_listed_order(&mut self, first: usize, place: &HashMap<String, usize>) {
        let catalog = &mut self.catalog;
        let mut tools: Vec<(Served, ToolDefinition)> = catalog
            .served
            .drain(first..)
            .zip(catalog.definitions.drain(first..))
            .collect();
        tools.sort_by_key(|(served, _)| place.get(served.tool.name.as_ref()).copied());
        for (served, definition) in tools {
            catalog.served.push(served);
            catalog.definitions.push(definition);
        }
    }

    /// One tool of `link`'s upstream, served or left out; `own` holds the names its upstream
    /// listed before it.
    fn tool(
        &mut self,
        link: &Arc<Link>,
        pinned: &PinnedTools,
        own: &mut HashSet<String>,
        tool: Tool,
    ) -> Result<(), CatalogError> {
        let Some(name) = self.name(link, own, &tool)? else {
            return Ok(());
        };
        // One bound on a reply, the config's: the library's own output cap (1 MiB by
        // default) would refuse what `limits.max_message_bytes` lets through.
        let definition = forwarding(
            Arc::clone(link),
            &tool,
            name.clone(),
            self.config.limits.call_timeout,
            Arc::clone(self.metrics),
        )
        .map(|definition| definition.with_max_output_bytes(self.config.limits.max_message_bytes));
        let definition = match definition {
            Ok(definition) => definition,
            Err(error) => {
                self.leave(link, &tool, error.to_string());
                return Ok(());
            }
        };
        let digest = definition.digest().to_owned();
        // A look-alike of a name claimed before is left out as one, whatever its pin says (said
        // as "new; pin it", it would stay out after `pin` — which pins only tools served — and
        // send the operator round again). Pinned tools claim first, so a new look-alike never
        // takes a pinned tool's place.
        if let Err(error) = self.names.check(&name) {
            self.leave(link, &tool, error.to_string());
            return Ok(());
        }
        if !self.pinned_or_first_seen(link, pinned, &tool, &digest) {
            return Ok(());
        }
        self.owners.insert(name, link.name().to_owned());
        self.catalog.served.push(Served {
            upstream: link.name().to_owned(),
            tool,
            spec: definition.spec().clone(),
            digest,
        });
        self.catalog.definitions.push(definition);
        Ok(())
    }

    /// The name `tool` would be served under, or `None` with it left out: a name that reads as
    /// another upstream's tool or as a gate, or one its upstream lists twice (then neither is
    /// served).
    ///
    /// # Errors
    ///
    /// Another upstream serves a tool under that name.
    fn name(
        &mut self,
        link: &Link,
        own: &mut HashSet<String>,
        tool: &Tool,
    ) -> Result<Option<String>, CatalogError> {
        // A tool served under its own name that reads as another upstream's (`files__x`)
        // would be judged and held back as that upstream's: left out.
        let Some(name) = self.config.claimed_name(link.name(), &tool.name) else {
            self.leave(link, tool, "its name reads as another upstream's served tool (it starts with that upstream's name and the separator)".to_owned());
            return Ok(None);
        };
        if toolgate::mcp::passthrough::is_gate(&name) {
            self.leave(link, tool, "its name ends with a protocol method (resources/read, prompts/get) the gateway names the gates of resources and prompts by".to_owned());
            return Ok(None);
        }
        if !own.insert(tool.name.to_string()) {
            self.leave(
                link,
                tool,
                "the upstream lists this name twice; neither is served".to_owned(),
            );
            let catalog = &mut self.catalog;
            catalog.served.retain(|entry| entry.spec.name != name);
            catalog
                .definitions
                .retain(|definition| definition.spec().name != name);
            return Ok(None);
        }
        if let Some(other) = self.owners.get(&name) {
            return Err(CatalogError(format!(
                "upstreams `{other}` and `{}` would both serve a tool named {}: rename one upstream in the config",
                link.name(),
                quoted(&name)
            )));
        }
        Ok(Some(name))
    }

    /// Whether `tool` (its definition's digest `digest`) is served as its upstream's pins stand:
    /// pinned, or its upstream seen for the first time (the tool then to be pinned). Changed, it
    /// is left out, its pinned definition standing in; new, it is left out.
    fn pinned_or_first_seen(
        &mut self,
        link: &Arc<Link>,
        pinned: &PinnedTools,
        tool: &Tool,
        digest: &str,
    ) -> bool {
        let accept = "not served until accepted with `toolgate-mcp-gateway pin --config FILE`";
        match self.pins.judge(link.name(), &tool.name, digest) {
            Verdict::Pinned => true,
            Verdict::FirstSeen => {
                self.catalog
                    .first_seen
                    .entry(link.name().to_owned())
                    .or_default()
                    .push((tool.clone(), digest.to_owned()));
                true
            }
            Verdict::Changed { pinned: before } => {
                let why = format!(
                    "its definition changed since it was pinned ({before} → {digest}); {accept}"
                );
                let stand_in = self.stand_in(link, pinned, &tool.name, why.clone());
                self.catalog.stand_ins.extend(stand_in);
                self.leave(link, tool, why);
                false
            }
            Verdict::New => {
                let why = format!("it is new since its upstream was pinned; {accept}");
                self.leave(link, tool, why);
                false
            }
        }
    }

    /// The pinned definition of `tool`, standing in (held back, for `why`) for what `link`'s
    /// upstream lists now.
    fn stand_in(
        &self,
        link: &Arc<Link>,
        pinned: &PinnedTools,
        tool: &str,
        why: String,
    ) -> Option<StandIn> {
        let (pinned_tool, digest) = pinned.get(tool)?;
        let name = self.config.claimed_name(link.name(), tool)?;
        let definition = forwarding(
            Arc::clone(link),
            pinned_tool,
            name,
            self.config.limits.call_timeout,
            Arc::clone(self.metrics),
        )
        .ok()?
        .with_max_output_bytes(self.config.limits.max_message_bytes);
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
    }

    /// `tool` of `link`'s upstream left out, for `why`.
    fn leave(&mut self, link: &Link, tool: &Tool, why: String) {
        self.catalog.left.push(Left {
            upstream: link.name().to_owned(),
            name: quoted(&tool.name),
            why,
        });
    }

    /// The gates of `link`'s upstream (its resources and prompts, and the requests the config
    /// forwards from it), each under a name nothing else is served under.
    fn gates(&mut self, shared: &Arc<Config>, link: &Arc<Link>) -> Result<(), CatalogError> {
        let forwarded = self
            .config
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
        for gate in crate::gates::definitions(shared, link)
            .into_iter()
            .chain(requests)
        {
            let name = gate.spec().name.clone();
            if let Some(other) = self.owners.get(&name) {
                return Err(CatalogError(format!(
                    "upstreams `{other}` and `{}` would both serve {}: rename one upstream in the config",
                    link.name(),
                    quoted(&name)
                )));
            }
            self.owners.insert(name, link.name().to_owned());
            self.catalog.definitions.push(gate);
        }
        Ok(())
    }

    /// The catalog built.
    fn finish(mut self) -> Catalog {
        // A stand-in never takes a name another tool is served under.
        let owners = &self.owners;
        self.catalog
            .stand_ins
            .retain(|stand_in| !owners.contains_key(&stand_in.served.spec.name));
        self.catalog
    }
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
