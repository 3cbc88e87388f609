//! From a config to a running gate: upstreams started and listed, their tools in one registry,
//! the policy layers loaded against it, the audit sink and approval store opened. Every problem
//! is collected and reported together, each naming what it is about.

use std::sync::Arc;

use toolgate::ToolController;
use toolgate::approvals::{
    ApprovalStore, MemoryApprovalStore, PostgresApprovalStore, SqliteApprovalStore,
};
use toolgate::audit::{JsonlAuditSink, PostgresAuditSink};
use toolgate::limits::PostgresRateCounters;

use crate::blocking::{OffRuntime, off_runtime};

use crate::catalog::{self, Left, Served};
use crate::config::{ApprovalStoreConfig, AuditTarget, Config, StateKeySource};
use crate::metrics::{CountingSink, Metrics};
use crate::pins::Pins;
use crate::policy::{self, PolicyStack};
use crate::upstream::{Upstream, list_tools};
use crate::webhook::NotifyingSink;

/// Started upstreams and what they serve, before a controller is built over them.
pub struct Started {
    pub upstreams: Vec<Upstream>,
    pub served: Vec<Served>,
    /// The served tools' definitions, taken by the controller.
    pub definitions: std::sync::Mutex<Vec<toolgate::ToolDefinition>>,
    pub left: Vec<Left>,
    /// Tools listed by each upstream, in config order (for the startup summary).
    pub counts: Vec<(String, usize)>,
    /// The links to the upstreams, for health.
    pub links: Vec<Arc<crate::upstream::Link>>,
    /// What the gateway counts.
    pub metrics: Arc<Metrics>,
    /// Upstreams seen for the first time: their tools to pin.
    pub first_seen: std::collections::BTreeMap<String, Vec<(rmcp::model::Tool, String)>>,
    /// What each upstream listed, as listed (a broken one: its pinned tools).
    pub listed: Vec<(Arc<crate::upstream::Link>, Vec<rmcp::model::Tool>)>,
    /// Upstreams that did not start or list, and why: held back (their pinned tools served,
    /// answering "unavailable, nothing ran") and restarted with backoff.
    pub broken: Vec<(String, String)>,
    /// Pinned definitions that may stand in, held back, for changed or vanished tools.
    pub stand_ins: std::sync::Mutex<Vec<catalog::StandIn>>,
    /// The stand-ins the policy needed: in the registry, held back, and why.
    pub held: std::sync::Mutex<Vec<(Served, String)>>,
}

impl Started {
    /// What is held back and why, one entry each, for the log and `check`. An upstream's entry
    /// quotes its stderr, one line of it per line, invisible characters spelled out.
    pub fn held_back(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .broken
            .iter()
            .map(|(upstream, why)| {
                let shown: Vec<String> = why
                    .split('\n')
                    .map(crate::shown::escape_invisible)
                    .collect();
                format!("upstream `{upstream}` is held back: {}", shown.join("\n"))
            })
            .collect();
        lines.extend(
            self.held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .map(|(served, why)| {
                    format!(
                        "tool {} of upstream `{}` is held back: {why}",
                        crate::shown::quoted(&served.tool.name),
                        served.upstream
                    )
                }),
        );
        lines
    }
}

/// Starts every upstream at once and lists its tools within the config's bounds. An upstream
/// that does not start or list is held back, not fatal: it is served down (its pinned tools
/// answer "unavailable, nothing ran") and restarted with backoff once supervised.
///
/// # Errors
///
/// A served-name collision.
pub async fn start(config: &Config, pins: &Pins) -> Result<Started, Vec<String>> {
    let mut starting = tokio::task::JoinSet::new();
    for (index, upstream) in config.upstreams.iter().enumerate() {
        let (upstream, limits) = (upstream.clone(), config.limits);
        starting.spawn(async move {
            let started = match Upstream::start(upstream.clone(), &limits).await {
                Ok(running) => match list_tools(running.peer(), &limits).await {
                    Ok(listed) => Ok((running, listed)),
                    Err(error) => Err((
                        format!("upstream `{}`: {error}", upstream.name),
                        format!("its tools could not be listed: {error}"),
                    )),
                },
                // The operator's line names the command and quotes its stderr; what a caller
                // is told says only what happened.
                Err(error) => Err((error.to_string(), format!("it {}", error.what))),
            };
            (index, upstream, started)
        });
    }
    let mut results = Vec::new();
    while let Some(joined) = starting.join_next().await {
        results.push(joined.expect("an upstream start does not panic"));
    }
    results.sort_by_key(|(index, ..)| *index);
    let mut upstreams = Vec::new();
    let mut tools = Vec::new();
    let mut counts = Vec::new();
    let mut broken = Vec::new();
    for (_, upstream_config, started) in results {
        let name = upstream_config.name.clone();
        match started {
            Ok((running, listed)) => {
                counts.push((name, listed.len()));
                tools.push((Arc::clone(running.link()), listed));
                upstreams.push(running);
            }
            Err((why, short)) => {
                let pinned: Vec<rmcp::model::Tool> = pins
                    .pinned(&name)
                    .into_iter()
                    .map(|(tool, _)| tool)
                    .collect();
                let down = Upstream::down(upstream_config, short);
                tools.push((Arc::clone(down.link()), pinned));
                upstreams.push(down);
                broken.push((name, why));
            }
        }
    }
    let links = tools.iter().map(|(link, _)| Arc::clone(link)).collect();
    let metrics = Arc::new(Metrics::new());
    let catalog::Catalog {
        served,
        definitions,
        left,
        first_seen,
        stand_ins,
    } = catalog::build(config, tools.clone(), &metrics, pins)
        .map_err(|error| vec![error.to_string()])?;
    metrics.serve_tools(served.iter().map(|entry| entry.spec.name.clone()));
    Ok(Started {
        upstreams,
        served,
        definitions: std::sync::Mutex::new(definitions),
        left,
        counts,
        links,
        metrics,
        first_seen,
        listed: tools,
        broken,
        stand_ins: std::sync::Mutex::new(stand_ins),
        held: std::sync::Mutex::default(),
    })
}

/// The registry of `started`'s tools and the policy layers loaded against it. When the layers
/// do not load, the pinned definitions of changed or vanished tools are added, held back, and
/// the layers tried again: the rest is served, as while running.
fn registry_and_policy(
    config: &Config,
    started: &Started,
) -> Result<(toolgate::ToolRegistry, PolicyStack), Vec<String>> {
    let definitions = std::mem::take(
        &mut *started
            .definitions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let stand_ins = std::mem::take(
        &mut *started
            .stand_ins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    // Tried first on the served tools' specs alone: the stand-ins enter only when needed (with
    // none, the policy is loaded once, below).
    let fits_without = stand_ins.is_empty() || {
        let specs = definitions
            .iter()
            .map(|definition| definition.spec().clone())
            .collect();
        policy::spec_registry(specs).is_ok_and(|registry| {
            policy::load(&config.policy_layers, &config.tool_sets, &registry).is_ok()
        })
    };
    let stand_ins = if fits_without { Vec::new() } else { stand_ins };
    let mut definitions = definitions;
    let names: Vec<(String, String)> = stand_ins
        .iter()
        .map(|stand_in| {
            (
                stand_in.served.upstream.clone(),
                stand_in.served.tool.name.to_string(),
            )
        })
        .collect();
    let mut held = Vec::new();
    for stand_in in stand_ins {
        definitions.push(stand_in.definition);
        held.push((stand_in.served, stand_in.why));
    }
    let registry =
        toolgate::ToolRegistry::new(definitions).map_err(|error| vec![error.to_string()])?;
    let errors = match policy::load(&config.policy_layers, &config.tool_sets, &registry) {
        Ok(stack) => {
            for link in &started.links {
                link.withhold(
                    names
                        .iter()
                        .filter(|(upstream, _)| upstream == link.name())
                        .map(|(_, tool)| tool.clone())
                        .collect(),
                );
            }
            *started
                .held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = held;
            return Ok((registry, stack));
        }
        Err(errors) => errors,
    };
    // A rule naming a tool that is not served: say why it is not.
    let mut problems: Vec<String> = errors
        .iter()
        .map(|error| format!("{}: {error}", config.file.display()))
        .collect();
    problems.extend(started.left.iter().map(|left| {
        format!(
            "upstream `{}`: {} is not served: {}",
            left.upstream, left.name, left.why
        )
    }));
    let unknown = started
        .listed
        .iter()
        .filter(|(_, tools)| tools.is_empty())
        .map(|(link, _)| link.name());
    problems.extend(
        started
            .broken
            .iter()
            .filter(|(upstream, _)| unknown.clone().any(|name| name == upstream))
            .map(|(upstream, why)| {
                format!("upstream `{upstream}` is not served ({why}); no pinned definitions of its tools are kept to stand in for them (`toolgate-mcp-gateway pin --config FILE` keeps them once it is up)")
            }),
    );
    Err(problems)
}

/// The controller over `started`'s tools, with the config's policy layers, audit sink and
/// approval store.
///
/// # Errors
///
/// One line per policy layer that does not load, and the audit sink or approval store that does
/// not open.
pub fn controller(
    config: &Config,
    started: &Started,
) -> Result<(Arc<ToolController>, PolicyStack), Vec<String>> {
    let (registry, stack) = registry_and_policy(config, started)?;
    let mut controller = ToolController::try_new(registry, stack.layers.clone())
        .map_err(|error| vec![format!("the policy does not fit the tools: {error}")])?;
    let mut problems = Vec::new();
    let mut inner: Option<Box<dyn toolgate::audit::AuditSink>> = None;
    match &config.audit {
        None => {}
        Some(AuditTarget::Jsonl(path)) => match JsonlAuditSink::open(path) {
            Ok(sink) => inner = Some(Box::new(sink.with_reserve(config.audit_jsonl_reserve))),
            Err(error) => problems.push(format!(
                "{}: audit.jsonl: {}: {error}",
                config.file.display(),
                path.display()
            )),
        },
        Some(AuditTarget::Postgres { url_env }) => {
            match env_value(config, "audit.postgres_url_env", url_env).and_then(|url| {
                let owners = deployment_owners(config)?;
                off_runtime(|| {
                    let sink = PostgresAuditSink::connect(&url)?;
                    sink.claim(&owners)?;
                    Ok(sink)
                })
                .map_err(|error: toolgate::audit::AuditError| {
                    format!(
                        "{}: audit.postgres_url_env: ${url_env}: {error}",
                        config.file.display()
                    )
                })
            }) {
                Ok(sink) => inner = Some(Box::new(OffRuntime::new(sink))),
                Err(problem) => problems.push(problem),
            }
        }
    }
    // One handle on the store for the controller and, if asked, the webhook reading arguments.
    let store = match approval_store(config) {
        Ok(store) => store.unwrap_or_else(|| Arc::new(MemoryApprovalStore::new())),
        Err(problem) => {
            problems.push(problem);
            Arc::new(MemoryApprovalStore::new())
        }
    };
    if let Some(webhook) = &config.approvals_webhook {
        let token = match &webhook.bearer_token_env {
            None => Ok(None),
            Some(name) => env_value(config, "approvals.webhook_bearer_token_env", name).map(Some),
        };
        match token.and_then(|token| {
            NotifyingSink::start(
                webhook.url.clone(),
                token,
                config.file.display().to_string(),
                config
                    .approval_page
                    .and(config.listen.admin)
                    .map(|admin| format!("http://{admin}/approvals")),
                webhook.arguments.then(|| Arc::clone(&store)),
                inner.take(),
            )
            .map_err(|problem| format!("{}: {problem}", config.file.display()))
        }) {
            Ok(sink) => inner = Some(Box::new(sink)),
            Err(problem) => problems.push(problem),
        }
    }
    controller = controller.with_audit_sink(CountingSink {
        metrics: Arc::clone(&started.metrics),
        inner,
    });
    controller = controller.with_approval_store(store);
    if let Some(shared) = &config.shared_counters {
        // Every instance of one named deployment counts together; any other deployment apart.
        let url_env = &shared.url_env;
        let session = format!("toolgate-gateway:deployment:{}", shared.deployment);
        match env_value(config, "rate_limits.postgres_url_env", url_env).and_then(|url| {
            off_runtime(|| PostgresRateCounters::connect(&url, session)).map_err(|error| {
                format!(
                    "{}: rate_limits.postgres_url_env: ${url_env}: {error}",
                    config.file.display()
                )
            })
        }) {
            Ok(counters) => controller = controller.with_rate_counters(OffRuntime::new(counters)),
            Err(problem) => problems.push(problem),
        }
    }
    // The default key file is made on first start; anything else must be readable now.
    let made_on_start =
        matches!(&config.state_key, StateKeySource::File { path, create: true } if !path.exists());
    if !made_on_start && let Err(problem) = crate::state_key::keys(config) {
        problems.push(problem);
    }
    // Provenance digests are keyed from the state key, so the instances of one deployment (which
    // share it) read each other's records; a per-process state key — or the first start, before
    // the key file is made — keeps them per process.
    if !made_on_start
        && let Ok(Some(keys)) = crate::state_key::keys(config)
        && let Some(first) = keys.first()
    {
        controller = controller.with_provenance_key(provenance_key(first));
    }
    if problems.is_empty() {
        Ok((Arc::new(controller), stack))
    } else {
        Err(problems)
    }
}

/// The approval store `config` names, opened; `None` for the controller's own, in memory.
///
/// # Errors
///
/// The store cannot be opened, naming the config key.
pub fn approval_store(config: &Config) -> Result<Option<Arc<dyn ApprovalStore>>, String> {
    match &config.approvals {
        ApprovalStoreConfig::Memory => Ok(None),
        ApprovalStoreConfig::Sqlite(path) => match SqliteApprovalStore::open(path) {
            Ok(store) => Ok(Some(Arc::new(store))),
            Err(error) => Err(format!(
                "{}: approvals.path: {}: {error}",
                config.file.display(),
                path.display()
            )),
        },
        ApprovalStoreConfig::Postgres { url_env } => {
            env_value(config, "approvals.postgres_url_env", url_env).and_then(|url| {
                let owners = deployment_owners(config)?;
                off_runtime(|| {
                    let store = PostgresApprovalStore::connect(&url)?;
                    store.claim(&owners)?;
                    Ok::<_, toolgate::approvals::ApprovalError>(store)
                })
                .map(|store| Some(Arc::new(OffRuntime::new(store)) as Arc<dyn ApprovalStore>))
                .map_err(|error| {
                    format!(
                        "{}: approvals.postgres_url_env: ${url_env}: {error}",
                        config.file.display()
                    )
                })
            })
        }
    }
}

/// The value of the environment variable `name` that config key `key` names.
fn env_value(config: &Config, key: &str, name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| {
        format!(
            "{}: {key}: the environment variable {name} is not set (or not UTF-8)",
            config.file.display()
        )
    })
}

/// The names this deployment's tables in a shared database are claimed under
/// (`PostgresApprovalStore::claim`, `PostgresAuditSink::claim`): one derived from each
/// request-state key, the sealing one's first — the instances of a deployment share the key, no
/// other deployment has it, and a key rotated at the last start is still accepted (and replaced).
/// Derived, so the tables never hold the key. The default key file is made here if it is
/// missing: a shared store is claimed on the first start too. Empty for a per-process key (the
/// one-upstream form, whose approvals stay in memory).
fn deployment_owners(config: &Config) -> Result<Vec<String>, String> {
    use sha2::Digest as _;
    let keys = crate::state_key::keys(config)?.unwrap_or_default();
    Ok(keys
        .iter()
        .map(|key| {
            let mut hasher = sha2::Sha256::new();
            hasher.update(b"toolgate-mcp-gateway deployment owner v1\0");
            hasher.update(key);
            crate::hex::encode(&hasher.finalize()[..16])
        })
        .collect())
}

/// The provenance key derived from the state key that seals: a different key for a different
/// use, so neither digest helps read the other.
fn provenance_key(state_key: &[u8]) -> toolgate::provenance::ProvenanceKey {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"toolgate-mcp-gateway provenance key v1\0");
    hasher.update(state_key);
    toolgate::provenance::ProvenanceKey::new(hasher.finalize().into())
}
