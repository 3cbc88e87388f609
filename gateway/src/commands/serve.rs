//! `serve`: the gate, running.

use std::process::ExitCode;

use toolgate::mcp::McpServer;

use crate::assemble;
use crate::config::Config;
use crate::policy;

/// Starts everything `config` names and serves it over stdio until the client disconnects.
/// Startup says, in the log, each upstream's tool count and each policy layer's digest.
pub async fn serve(config: Config) -> ExitCode {
    let started = match assemble::start(&config).await {
        Ok(started) => started,
        Err(problems) => {
            super::report(problems);
            return ExitCode::FAILURE;
        }
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
    for layer in &stack.states {
        tracing::info!(policy = %layer.path.display(), digest = %layer.digest, "policy layer in force");
    }
    let watcher = policy::watch(
        stack,
        std::sync::Arc::clone(&controller),
        config.policy_poll,
    );
    let supervisors: Vec<_> = started
        .upstreams
        .into_iter()
        .map(|upstream| upstream.supervise(config.limits))
        .collect();
    let server = match McpServer::new(controller) {
        Ok(server) => server.with_implementation("toolgate-mcp-gateway", env!("CARGO_PKG_VERSION")),
        Err(error) => {
            super::report([error.to_string()]);
            return ExitCode::FAILURE;
        }
    };
    tracing::info!("serving over stdio");
    let served = server.serve_stdio().await;
    watcher.abort();
    for supervisor in supervisors {
        supervisor.abort();
    }
    match served {
        Ok(()) => {
            tracing::info!("the client disconnected; stopping");
            ExitCode::SUCCESS
        }
        Err(error) => {
            super::report([error.to_string()]);
            ExitCode::FAILURE
        }
    }
}
