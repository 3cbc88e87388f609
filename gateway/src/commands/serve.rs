//! `serve`: the gate, running.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use toolgate::ToolController;
use toolgate::audit::checkpoint::NoteSigner;
use toolgate::mcp::McpServer;

use crate::assemble::{self, Started};
use crate::config::{AuditTarget, CheckpointConfig, Config};
use crate::metrics::Metrics;
use crate::oauth::OAuth;
use crate::pins::Pins;
use crate::policy;
use crate::upstream::Link;

/// Starts everything `config` names and serves it over stdio until the client disconnects.
/// Startup says, in the log, each upstream's tool count and each policy layer's digest.
pub async fn serve(config: Config) -> ExitCode {
    let Some(mut pins) = super::pins_or_report(&config) else {
        return ExitCode::FAILURE;
    };
    let Some(started) = super::start_degraded_or_report(&config, &pins).await else {
        return ExitCode::FAILURE;
    };
    let (controller, stack) = match assemble::controller(&config, &started) {
        Ok(built) => built,
        Err(problems) => {
            super::report(problems);
            return ExitCode::FAILURE;
        }
    };
    log_started(&started);
    if let Err(problem) = pin_first_seen(&mut pins, &started) {
        return failed(problem);
    }
    for layer in &stack.states {
        match &layer.set {
            None => {
                tracing::info!(policy = %layer.path.display(), digest = %layer.digest, "policy layer in force");
            }
            Some(set) => {
                tracing::info!(policy = %layer.path.display(), digest = %layer.digest, "tool set {}: its own policy layer in force", set.name);
            }
        }
    }
    log_tool_sets(&config, &controller);
    let checkpoints = match Checkpoints::start(&config) {
        Ok(checkpoints) => checkpoints,
        Err(problem) => return failed(problem),
    };
    let watcher = policy::watch(stack, Arc::clone(&controller), config.policy_poll);
    let refresher = refresher(&config, pins, &started, &controller);
    let links = started.links.clone();
    let metrics = Arc::clone(&started.metrics);
    let supervisors: Vec<_> = started
        .upstreams
        .into_iter()
        .map(|upstream| upstream.supervise(config.limits))
        .collect();
    let server = match mcp_server(&config, &controller, &links) {
        Ok(server) => server,
        Err(problem) => return failed(problem),
    };
    // The issuers' keys are fetched from here on, in the background: a provider that is down
    // refuses its tokens (and says so in the log) but stops nothing else.
    let oauth = match config.oauth.clone().map(OAuth::new).transpose() {
        Ok(oauth) => oauth.map(Arc::new),
        Err(problem) => return failed(format!("[oauth]: {problem}")),
    };
    if let Some(oauth) = &oauth {
        oauth.spawn_refreshers();
    }
    let mut listeners = Listeners::new();
    if let Some(address) = config.listen.admin {
        let page = crate::page::router(&config, Arc::clone(&controller), &metrics, oauth.clone());
        let page = match page {
            Ok(page) => page,
            Err(problem) => return failed(problem),
        };
        listeners.admin(address, &config, &controller, metrics, &links, page);
    }
    if let Some(address) = config.listen.http {
        listeners.mcp(address, &config, &server, &started.metrics, oauth);
    }
    if config.listen.stdio {
        listeners.stdio(server);
    }
    let failure = listeners.wait_for_end().await;
    watcher.abort();
    refresher.abort();
    if let Some(checkpoints) = checkpoints {
        checkpoints.stop().await;
    }
    for supervisor in supervisors {
        supervisor.abort();
    }
    failure.map_or(ExitCode::SUCCESS, failed)
}

/// Reports `problem`, and fails.
fn failed(problem: String) -> ExitCode {
    super::report([problem]);
    ExitCode::FAILURE
}

/// What was started, in the log: each upstream's tools listed and served, the tools left out,
/// what the descriptions tell the model, and what is held back.
/// Each tool set: where it is served and how many of the served tools it holds (a set holding
/// none is said loudly: its patterns likely name no served tool).
fn log_tool_sets(config: &Config, controller: &ToolController) {
    let specs = controller.specs();
    for set in &config.tool_sets {
        let patterns = set.patterns();
        let held = specs
            .iter()
            .filter(|spec| patterns.hold(&spec.name))
            .count();
        if held == 0 {
            tracing::warn!(
                "tool set {}: holds none of the {} served tools: its tools patterns {:?} name no served tool (served names carry their upstream's prefix)",
                set.name,
                specs.len(),
                set.tools
            );
        } else {
            tracing::info!(
                "tool set {}: {held} of the {} served tools, at {} ({})",
                set.name,
                specs.len(),
                set.path(),
                if set.policy.is_some() {
                    "with its own policy layer"
                } else {
                    "judged by the main layers"
                }
            );
        }
    }
}

fn log_started(started: &Started) {
    for (upstream, listed) in &started.counts {
        let served = started
            .served
            .iter()
            .filter(|served| &served.upstream == upstream)
            .count();
        tracing::info!(upstream = %upstream, listed, served, "upstream ready");
    }
    for left in &started.left {
        tracing::warn!(upstream = %left.upstream, tool = %left.name, "tool not served: {}", left.why);
    }
    for warning in crate::catalog::description_warnings(&started.served) {
        tracing::warn!("{warning}");
    }
    // Served degraded: said loudly, and in /healthz and the metrics while it lasts.
    for line in started.held_back() {
        tracing::error!("{line}; the rest is served");
    }
}

/// Pins the tools of the upstreams seen for the first time, if any, and saves the pins.
fn pin_first_seen(pins: &mut Pins, started: &Started) -> Result<(), String> {
    if started.first_seen.is_empty() {
        return Ok(());
    }
    for (upstream, tools) in &started.first_seen {
        pins.pin(upstream, tools.iter().cloned());
        tracing::info!(upstream = %upstream, tools = tools.len(), "first seen: its tool definitions are pinned");
    }
    pins.save()
}

/// Signed checkpoints of the JSON Lines audit log: written on a schedule, and once more when the
/// gateway stops.
struct Checkpoints {
    periodic: JoinHandle<()>,
    settings: CheckpointConfig,
    log: PathBuf,
    signer: Arc<NoteSigner>,
}

impl Checkpoints {
    /// The checkpoints `config` asks for, started. The key is read now, so that a wrong one stops
    /// the gateway before anything is served.
    fn start(config: &Config) -> Result<Option<Self>, String> {
        let (Some(settings), Some(AuditTarget::Jsonl(log))) = (&config.checkpoints, &config.audit)
        else {
            return Ok(None);
        };
        let signer = crate::checkpoints::signer(settings)
            .map_err(|problem| format!("{}: {problem}", config.file.display()))?;
        tracing::info!(
            file = %settings.file.display(),
            every_s = settings.every.as_secs(),
            origin = %settings.origin,
            "signed checkpoints of the audit log will be written"
        );
        let signer = Arc::new(signer);
        let periodic =
            crate::checkpoints::spawn(settings.clone(), log.clone(), Arc::clone(&signer));
        Ok(Some(Self {
            periodic,
            settings: settings.clone(),
            log: log.clone(),
            signer,
        }))
    }

    /// Stops the schedule, then signs the log as it ends.
    async fn stop(self) {
        self.periodic.abort();
        let _ = self.periodic.await;
        crate::checkpoints::write_final(self.settings, self.log, self.signer).await;
    }
}

/// Follows the upstreams' tool lists, starting from the definitions in force: the served tools
/// and the stand-ins held back.
fn refresher(
    config: &Config,
    pins: Pins,
    started: &Started,
    controller: &Arc<ToolController>,
) -> JoinHandle<()> {
    let in_force = started
        .served
        .iter()
        .chain(
            started
                .held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .map(|(served, _)| served),
        )
        .map(|served| (served.spec.name.clone(), served.digest.clone()))
        .collect();
    crate::refresh::follow(
        config.clone(),
        pins,
        Arc::clone(&started.metrics),
        started.listed.clone(),
        in_force,
        Arc::clone(controller),
    )
}

/// The MCP server over `controller`: it names itself, passes resources and prompts through to
/// the upstreams behind `links`, says where a held call is answered, and seals request states
/// with the config's keys.
fn mcp_server(
    config: &Config,
    controller: &Arc<ToolController>,
    links: &[Arc<Link>],
) -> Result<McpServer, String> {
    let server = McpServer::new(Arc::clone(controller)).map_err(|error| error.to_string())?;
    let upstreams = crate::passthrough::Upstreams::new(Arc::new(config.clone()), links.to_vec());
    let server = server
        .with_implementation("toolgate-mcp-gateway", env!("CARGO_PKG_VERSION"))
        .with_passthrough(Arc::new(upstreams));
    let server = match approvals_at(config) {
        Some(place) => server.with_approvals_at(place),
        None => server,
    };
    let server = match &config.traces {
        Some(_) => server.with_call_span(crate::traces::call_span()),
        None => server,
    };
    match crate::state_key::keys(config)? {
        None => Ok(server),
        Some(keys) => server
            .with_state_keys(&keys)
            .map_err(|error| format!("{}: {error}", config.file.display())),
    }
}

/// How people sign in to the approval page, as `config` has it: the startup line named every way
/// the gateway knows, whatever was configured (an independent attack read it as configured).
fn sign_in_ways(config: &Config) -> String {
    let provider = config.oauth.as_ref().and_then(|oauth| oauth.page.as_ref());
    let credentials = provider.is_none_or(|page| page.credential_sign_in);
    let mut ways = Vec::new();
    if provider.is_some() {
        ways.push("at the [oauth.page] identity provider");
    }
    if credentials && config.clients.iter().any(|client| client.page_sign_in) {
        ways.push("with a [[clients]] API key");
    }
    if credentials && config.oauth.is_some() {
        ways.push("with an [oauth] token");
    }
    if credentials && config.jwt.is_some() {
        ways.push("with a [jwt] token");
    }
    match ways.as_slice() {
        [] => "in no way this config gives".to_owned(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// The running listeners, each until `stop` is sent.
struct Listeners {
    // Declared first, so dropped (aborted) first: before the channel that stops them.
    tasks: JoinSet<Result<(), String>>,
    stopped: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
}

impl Listeners {
    fn new() -> Self {
        let (stop, stopped) = watch::channel(false);
        Self {
            tasks: JoinSet::new(),
            stopped,
            stop,
        }
    }

    /// `/metrics`, `/healthz` and, when served, the approval page, on `address`.
    fn admin(
        &mut self,
        address: SocketAddr,
        config: &Config,
        controller: &Arc<ToolController>,
        metrics: Arc<Metrics>,
        links: &[Arc<Link>],
        page: Option<axum::Router>,
    ) {
        match &page {
            Some(_) => tracing::info!(
                "approval page: http://{address}/approvals — people sign in {}, and approved calls run in this gateway",
                sign_in_ways(config)
            ),
            None if config.approval_page.is_none() => tracing::info!(
                "no approval page: it needs a [[clients]] entry, an [oauth] or a [jwt] table to sign people in (or approvals.page = false)"
            ),
            None => {}
        }
        let (controller, links) = (Arc::clone(controller), links.to_vec());
        let hosts = config.listen.allowed_hosts.clone();
        let until = until_stopped(self.stopped.clone());
        self.tasks.spawn(async move {
            crate::http::serve_admin(address, metrics, controller, links, page, hosts, until)
                .await
                .map_err(|error| format!("listen.admin {address}: {error}"))
        });
    }

    /// MCP over Streamable HTTP on `address`, for the config's clients and tokens.
    fn mcp(
        &mut self,
        address: SocketAddr,
        config: &Config,
        server: &McpServer,
        metrics: &Arc<Metrics>,
        oauth: Option<Arc<OAuth>>,
    ) {
        let server = server.clone();
        let listener = crate::http::McpListener {
            clients: config.clients.clone(),
            jwt: config.jwt.clone(),
            oauth,
            tool_sets: config.tool_sets.iter().cloned().map(Arc::new).collect(),
            allowed_hosts: config.listen.allowed_hosts.clone(),
            allowed_origins: config.listen.allowed_origins.clone(),
            sessions: config.listen.sessions,
            metrics: Arc::clone(metrics),
        };
        let until = until_stopped(self.stopped.clone());
        self.tasks.spawn(async move {
            crate::http::serve_mcp(address, server, listener, until)
                .await
                .map_err(|error| format!("listen.http {address}: {error}"))
        });
    }

    /// MCP over stdin and stdout, for one client.
    fn stdio(&mut self, server: McpServer) {
        self.tasks.spawn(async move {
            tracing::info!("serving MCP over stdio");
            let served = server.serve_stdio().await;
            tracing::info!("the stdio client disconnected; stopping");
            served.map_err(|error| error.to_string())
        });
    }

    /// Waits for the first listener to end (stdio closed, a bind failed) or a signal, then stops
    /// them all, waiting at most 5 seconds for each; the first failure, if any.
    async fn wait_for_end(&mut self) -> Option<String> {
        let first = tokio::select! {
            ended = self.tasks.join_next() => ended,
            () = signal() => {
                tracing::info!("signal received; stopping");
                None
            }
        };
        let _ = self.stop.send(true);
        let mut failure = first.and_then(ended_badly);
        while let Ok(Some(ended)) =
            tokio::time::timeout(std::time::Duration::from_secs(5), self.tasks.join_next()).await
        {
            if let Some(problem) = ended_badly(ended) {
                failure.get_or_insert(problem);
            }
        }
        failure
    }
}

/// What went wrong with a listener that ended: its own problem, or a panic (a listener that
/// panicked did not serve, and the gateway must not exit as if all were well).
fn ended_badly(ended: Result<Result<(), String>, tokio::task::JoinError>) -> Option<String> {
    match ended {
        Ok(Ok(())) => None,
        Ok(Err(problem)) => Some(problem),
        Err(error) if error.is_panic() => Some(format!(
            "a listener stopped on an internal error (a panic): {error}"
        )),
        Err(_) => None,
    }
}

/// Resolves once `stop` is sent.
async fn until_stopped(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// SIGINT or SIGTERM.
async fn signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(terminate) => terminate,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// Where a person answers waiting calls, for the MCP question and the held call's message: the
/// approval page when it is served, else the shell command against a durable store.
fn approvals_at(config: &Config) -> Option<String> {
    if let (Some(_), Some(admin)) = (config.approval_page, config.listen.admin) {
        // Bound to every address, the listener has no one address a person could open.
        if admin.ip().is_unspecified() {
            return Some(format!(
                "the approval page, /approvals on port {} of this gateway's host",
                admin.port()
            ));
        }
        return Some(format!("the approval page, http://{admin}/approvals"));
    }
    match config.approvals {
        crate::config::ApprovalStoreConfig::Memory => None,
        _ => Some(format!(
            "`toolgate-mcp-gateway approvals show ID --config {}`",
            config.file.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{approvals_at, sign_in_ways};

    const CONFIG: &str = "[upstreams.files]\ncommand = \"npx\"\n[policy]\nlayers = [\"p.json\"]\n\
        [[clients]]\nid = \"sam\"\napi_key_sha256 = \"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\"\n";

    fn place(extra: &str) -> Option<String> {
        let text = format!("{CONFIG}{extra}");
        let config =
            crate::config::parse(std::path::Path::new("/etc/gw/gw.toml"), &text).expect("loads");
        approvals_at(&config)
    }

    #[test]
    fn the_startup_line_names_only_the_sign_in_ways_configured() {
        let config = |text: &str| {
            crate::config::parse(std::path::Path::new("/etc/gw/gw.toml"), text).expect("loads")
        };
        assert_eq!(sign_in_ways(&config(CONFIG)), "with a [[clients]] API key");
        let model_only = CONFIG.replace("[[clients]]\n", "[[clients]]\npage_sign_in = false\n");
        assert_eq!(
            sign_in_ways(&config(&model_only)),
            "in no way this config gives"
        );
    }

    #[test]
    fn a_held_call_names_the_page_a_person_can_open_or_the_shell_command() {
        let page = place("[listen]\nstdio = true\nadmin = \"127.0.0.1:9090\"\n");
        assert_eq!(
            page.as_deref(),
            Some("the approval page, http://127.0.0.1:9090/approvals")
        );
        // Bound to every address: no link to a host nobody can open, but the port and the path.
        let everywhere =
            place("[listen]\nstdio = true\nadmin = \"0.0.0.0:9090\"\nallow_plain_http = true\n")
                .unwrap();
        assert!(!everywhere.contains("0.0.0.0"), "{everywhere}");
        assert!(
            everywhere.contains("/approvals on port 9090"),
            "{everywhere}"
        );
        // No page: the shell command against the durable store, naming the config file.
        let shell = place("").unwrap();
        assert!(
            shell.contains("approvals show ID --config /etc/gw/gw.toml"),
            "{shell}"
        );
        assert_eq!(place("[approvals]\nstore = \"memory\"\n"), None);
    }

    #[tokio::test]
    async fn a_listener_that_panicked_ended_badly() {
        let panicked = tokio::spawn(async {
            panic!("a route the router refused");
        })
        .await
        .map(|()| Ok(()));
        let said = super::ended_badly(panicked).expect("a failure");
        assert!(said.contains("panic"), "{said}");
        assert_eq!(super::ended_badly(Ok(Ok(()))), None);
        assert_eq!(
            super::ended_badly(Ok(Err("bind".to_owned()))).as_deref(),
            Some("bind")
        );
    }
}
