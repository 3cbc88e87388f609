//! `toolgate-mcp-gateway`: toolgate in front of MCP servers. See `--help`, and `CONFIG.md` for the
//! config file.
//!
//! Each upstream MCP server is started as a child (or reached over the network); its tools are
//! imported with their schemas and served gated: every call resolved by exact name, validated,
//! decided by the policy layers (re-read while running; a change applies only if it loads whole),
//! held for a person when the policy asks, and recorded in the audit log. Messages go to stderr;
//! in stdio mode stdout is the protocol.

mod assemble;
mod blocking;
mod catalog;
mod causes;
mod checkpoints;
mod cli;
mod commands;
mod config;
mod fields;
mod files;
mod forward;
mod gates;
mod hex;
mod http;
mod http_checks;
mod identities;
mod jwt;
mod logging;
mod metrics;
mod oauth;
mod page;
mod passthrough;
mod pins;
mod plain_names;
mod policy;
mod refresh;
mod sessions;
mod shown;
mod state_key;
mod tool_sets;
mod traces;
mod upstream;
mod webhook;

use std::process::ExitCode;

use clap::Parser as _;

use cli::{ApprovalsCommand, AuditCommand, Cli, Command, PolicyCommand, StateKeyCommand};

/// A proxy allocates and frees a few hundred small buffers per call (HTTP heads, JSON values,
/// futures); glibc's allocator spent 15% of the gateway's CPU on them under load, mimalloc less.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The TLS provider for https:// upstreams; an error means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // `serve` reads its config before the log is installed: `[traces]` adds the exporter's layer,
    // started here, outside the async runtime (its HTTP client blocks on a thread of its own).
    let serving = match &cli.command {
        Some(Command::Serve { config }) => match commands::config_or_report(config) {
            Some(config) => Some(config),
            None => return ExitCode::FAILURE,
        },
        _ => None,
    };
    let Ok((traces, layer)) = start_traces(serving.as_ref()) else {
        return ExitCode::FAILURE;
    };
    logging::init(layer);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(cli, serving));
    // Children are killed on drop; do not wait for tasks blocked on their pipes.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    if let Some(traces) = traces {
        traces.shutdown();
    }
    code
}

/// The `[traces]` exporter of the config about to be served, and its log layer; `Err` once the
/// failure is reported (nothing was started).
fn start_traces(
    serving: Option<&config::Config>,
) -> Result<(Option<traces::Traces>, Option<traces::TracesLayer>), ()> {
    let Some((config, settings)) =
        serving.and_then(|config| config.traces.as_ref().map(|traces| (config, traces)))
    else {
        return Ok((None, None));
    };
    match traces::start(settings) {
        Ok((traces, layer)) => Ok((Some(traces), Some(layer))),
        Err(problem) => {
            eprintln!(
                "toolgate-mcp-gateway: {}: {problem}; nothing was started",
                config.file.display()
            );
            Err(())
        }
    }
}

/// Runs the command asked for; `serving` is `serve`'s config, read already.
async fn run(cli: Cli, serving: Option<config::Config>) -> ExitCode {
    let Some(command) = cli.command else {
        return match cli.policy {
            Some(policy) => {
                commands::serve(config::Config::legacy(policy, cli.audit, cli.upstream)).await
            }
            None => {
                let _ = <Cli as clap::CommandFactory>::command().print_help();
                ExitCode::from(2)
            }
        };
    };
    match command {
        Command::Serve { .. } => match serving {
            Some(config) => commands::serve(config).await,
            None => ExitCode::FAILURE,
        },
        Command::Tools { config } => commands::tools(&config).await,
        Command::Check { config } => commands::check(&config).await,
        Command::Policy { command } => policy(command).await,
        Command::Init {
            upstream,
            http,
            dir,
            client,
            force,
            command,
        } => {
            commands::init(&commands::Init {
                dir: &dir,
                upstream: &upstream,
                command: &command,
                http,
                client: &client,
                force,
            })
            .await
        }
        Command::Key { id, groups } => commands::key(&id, &groups),
        Command::Pin { config } => commands::pin(&config).await,
        Command::Audit { command } => audit(command),
        Command::Approvals { command } => approvals(command).await,
        Command::StateKey {
            command: StateKeyCommand::Rotate { config },
        } => commands::rotate_state_key(&config),
    }
}

async fn policy(command: PolicyCommand) -> ExitCode {
    match command {
        PolicyCommand::Diff { old, new, config } => {
            commands::policy_diff(&config, &old, &new).await
        }
        PolicyCommand::Explain {
            tool,
            arguments,
            principal,
            groups,
            config,
        } => {
            let caller = principal.map(|id| toolgate::Principal::new(id, groups));
            commands::policy_explain(&config, &tool, &arguments, caller).await
        }
    }
}

fn audit(command: AuditCommand) -> ExitCode {
    match command {
        AuditCommand::Verify { log, head } => commands::verify(&log.log(), head.as_deref()),
        AuditCommand::Prove { log, index } => commands::prove(&log.log(), index),
        AuditCommand::Disclose {
            log,
            index,
            arguments,
        } => commands::disclose(&log.log(), index, &arguments),
        AuditCommand::Forget { log, index } => commands::forget(&log.log(), index),
        AuditCommand::Export { postgres_env, out } => commands::export(&postgres_env, &out),
        AuditCommand::Key { name, out } => commands::checkpoint_key(&name, &out),
        AuditCommand::Checkpoint {
            file,
            key_file,
            origin,
        } => commands::checkpoint(&file, &key_file, &origin),
        AuditCommand::VerifyCheckpoint {
            file,
            checkpoint,
            key,
            witnesses,
            origin,
        } => commands::verify_checkpoint(&file, &checkpoint, &key, &witnesses, &origin),
    }
}

async fn approvals(command: ApprovalsCommand) -> ExitCode {
    match command {
        ApprovalsCommand::List { config } => commands::list_approvals(&config),
        ApprovalsCommand::Show { id, config } => commands::show_approval(&config, &id),
        ApprovalsCommand::Approve { id, answer } => {
            commands::answer_approval(&id, &answer, true).await
        }
        ApprovalsCommand::Reject { id, answer } => {
            commands::answer_approval(&id, &answer, false).await
        }
    }
}
