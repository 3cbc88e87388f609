//! `serve`: the gate, running.

use std::process::ExitCode;

use toolgate::mcp::McpServer;

use crate::assemble;
use crate::config::Config;
use crate::policy;

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
    if !started.first_seen.is_empty() {
        for (upstream, tools) in &started.first_seen {
            pins.pin(upstream, tools.iter().cloned());
            tracing::info!(upstream = %upstream, tools = tools.len(), "first seen: its tool definitions are pinned");
        }
        if let Err(problem) = pins.save() {
            super::report([problem]);
            return ExitCode::FAILURE;
        }
    }
    for layer in &stack.states {
        tracing::info!(policy = %layer.path.display(), digest = %layer.digest, "policy layer in force");
    }
    // Signed checkpoints of the audit log: the key is checked before anything is served.
    let checkpoints = match (&config.checkpoints, &config.audit) {
        (Some(settings), Some(crate::config::AuditTarget::Jsonl(log))) => {
            match crate::checkpoints::signer(settings) {
                Ok(signer) => {
                    tracing::info!(
                        file = %settings.file.display(),
                        every_s = settings.every.as_secs(),
                        origin = %settings.origin,
                        "signed checkpoints of the audit log will be written"
                    );
                    let signer = std::sync::Arc::new(signer);
                    let periodic = crate::checkpoints::spawn(
                        settings.clone(),
                        log.clone(),
                        std::sync::Arc::clone(&signer),
                    );
                    Some((periodic, settings.clone(), log.clone(), signer))
                }
                Err(problem) => {
                    super::report([problem]);
                    return ExitCode::FAILURE;
                }
            }
        }
        _ => None,
    };
    let watcher = policy::watch(
        stack,
        std::sync::Arc::clone(&controller),
        config.policy_poll,
    );
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
    let refresher = crate::refresh::follow(
        config.clone(),
        pins,
        std::sync::Arc::clone(&started.metrics),
        started.listed.clone(),
        in_force,
        std::sync::Arc::clone(&controller),
    );
    let links = started.links.clone();
    let metrics = std::sync::Arc::clone(&started.metrics);
    let supervisors: Vec<_> = started
        .upstreams
        .into_iter()
        .map(|upstream| upstream.supervise(config.limits))
        .collect();
    let server = match McpServer::new(std::sync::Arc::clone(&controller)) {
        Ok(server) => {
            let upstreams = crate::passthrough::Upstreams::new(
                std::sync::Arc::new(config.clone()),
                links.clone(),
            );
            let server = server
                .with_implementation("toolgate-mcp-gateway", env!("CARGO_PKG_VERSION"))
                .with_passthrough(std::sync::Arc::new(upstreams));
            match approvals_at(&config) {
                Some(place) => server.with_approvals_at(place),
                None => server,
            }
        }
        Err(error) => {
            super::report([error.to_string()]);
            return ExitCode::FAILURE;
        }
    };
    let server = match crate::state_key::keys(&config).and_then(|keys| match keys {
        None => Ok(server),
        Some(keys) => server
            .with_state_keys(&keys)
            .map_err(|error| format!("{}: {error}", config.file.display())),
    }) {
        Ok(server) => server,
        Err(problem) => {
            super::report([problem]);
            return ExitCode::FAILURE;
        }
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until_stopped = move || {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        }
    };
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(address) = config.listen.admin {
        let page = crate::page::router(&config, std::sync::Arc::clone(&controller), &metrics);
        match &page {
            Some(_) => tracing::info!(
                "approval page: http://{address}/approvals — people sign in with a [[clients]] API key or a [jwt] token, and approved calls run in this gateway"
            ),
            None if config.approval_page.is_none() => tracing::info!(
                "no approval page: it needs a [[clients]] entry or a [jwt] table to sign people in (or approvals.page = false)"
            ),
            None => {}
        }
        let (metrics, controller, links) =
            (metrics, std::sync::Arc::clone(&controller), links.clone());
        let hosts = config.listen.allowed_hosts.clone();
        let until = until_stopped();
        tasks.spawn(async move {
            crate::http::serve_admin(address, metrics, controller, links, page, hosts, until)
                .await
                .map_err(|error| format!("listen.admin {address}: {error}"))
        });
    }
    if let Some(address) = config.listen.http {
        let server = server.clone();
        let listener = crate::http::McpListener {
            clients: config.clients.clone(),
            jwt: config.jwt.clone(),
            allowed_hosts: config.listen.allowed_hosts.clone(),
            allowed_origins: config.listen.allowed_origins.clone(),
            sessions: config.listen.sessions,
            metrics: std::sync::Arc::clone(&started.metrics),
        };
        let until = until_stopped();
        tasks.spawn(async move {
            crate::http::serve_mcp(address, server, listener, until)
                .await
                .map_err(|error| format!("listen.http {address}: {error}"))
        });
    }
    if config.listen.stdio {
        tasks.spawn(async move {
            tracing::info!("serving MCP over stdio");
            let served = server.serve_stdio().await;
            tracing::info!("the stdio client disconnected; stopping");
            served.map_err(|error| error.to_string())
        });
    }
    // The first listener to end (stdio closed, a bind failed) or a signal stops them all.
    let first = tokio::select! {
        ended = tasks.join_next() => ended,
        () = signal() => {
            tracing::info!("signal received; stopping");
            None
        }
    };
    let _ = stop.send(true);
    let mut failure = match first {
        Some(Ok(Err(problem))) => Some(problem),
        _ => None,
    };
    while let Ok(Some(ended)) =
        tokio::time::timeout(std::time::Duration::from_secs(5), tasks.join_next()).await
    {
        if let Ok(Err(problem)) = ended {
            failure.get_or_insert(problem);
        }
    }
    watcher.abort();
    refresher.abort();
    if let Some((periodic, settings, log, signer)) = checkpoints {
        periodic.abort();
        let _ = periodic.await;
        crate::checkpoints::write_final(settings, log, signer).await;
    }
    for supervisor in supervisors {
        supervisor.abort();
    }
    match failure {
        None => ExitCode::SUCCESS,
        Some(problem) => {
            super::report([problem]);
            ExitCode::FAILURE
        }
    }
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
fn approvals_at(config: &crate::config::Config) -> Option<String> {
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
    use super::approvals_at;

    const CONFIG: &str = "[upstreams.files]\ncommand = \"npx\"\n[policy]\nlayers = [\"p.json\"]\n\
        [[clients]]\nid = \"sam\"\napi_key_sha256 = \"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\"\n";

    fn place(extra: &str) -> Option<String> {
        let text = format!("{CONFIG}{extra}");
        let config =
            crate::config::parse(std::path::Path::new("/etc/gw/gw.toml"), &text).expect("loads");
        approvals_at(&config)
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
}
