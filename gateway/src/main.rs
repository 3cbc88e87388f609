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
    let mut serving = match &cli.command {
        Some(Command::Serve { config }) => match commands::config_or_report(config) {
            Some(config) => Some(config),
            None => return ExitCode::FAILURE,
        },
        _ => None,
    };
    let traces = match serving.as_ref().and_then(|config| config.traces.as_ref()) {
        Some(traces) => match traces::start(traces) {
            Ok((traces, layer)) => Some((traces, layer)),
            Err(problem) => {
                let file = serving
                    .as_ref()
                    .map(|config| config.file.display().to_string());
                eprintln!(
                    "toolgate-mcp-gateway: {}: {problem}; nothing was started",
                    file.unwrap_or_default()
                );
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let (traces, layer) = traces.unzip();
    logging::init(layer);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async {
        match (cli.command, cli.policy) {
            (Some(Command::Serve { .. }), _) => match serving.take() {
                Some(config) => commands::serve(config).await,
                None => ExitCode::FAILURE,
            },
            (Some(Command::Tools { config }), _) => commands::tools(&config).await,
            (Some(Command::Check { config }), _) => commands::check(&config).await,
            (
                Some(Command::Policy {
                    command: PolicyCommand::Diff { old, new, config },
                }),
                _,
            ) => commands::policy_diff(&config, &old, &new).await,
            (
                Some(Command::Policy {
                    command:
                        PolicyCommand::Explain {
                            tool,
                            arguments,
                            principal,
                            groups,
                            config,
                        },
                }),
                _,
            ) => {
                let caller = principal.map(|id| toolgate::Principal::new(id, groups));
                commands::policy_explain(&config, &tool, &arguments, caller).await
            }
            (
                Some(Command::Init {
                    upstream,
                    http,
                    dir,
                    client,
                    force,
                    command,
                }),
                _,
            ) => {
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
            (Some(Command::Key { id, groups }), _) => commands::key(&id, &groups),
            (Some(Command::Pin { config }), _) => commands::pin(&config).await,
            (
                Some(Command::Audit {
                    command: AuditCommand::Verify { log, head },
                }),
                _,
            ) => commands::verify(&log.log(), head.as_deref()),
            (
                Some(Command::Audit {
                    command: AuditCommand::Prove { log, index },
                }),
                _,
            ) => commands::prove(&log.log(), index),
            (
                Some(Command::Audit {
                    command:
                        AuditCommand::Disclose {
                            log,
                            index,
                            arguments,
                        },
                }),
                _,
            ) => commands::disclose(&log.log(), index, &arguments),
            (
                Some(Command::Audit {
                    command: AuditCommand::Forget { log, index },
                }),
                _,
            ) => commands::forget(&log.log(), index),
            (
                Some(Command::Audit {
                    command: AuditCommand::Export { postgres_env, out },
                }),
                _,
            ) => commands::export(&postgres_env, &out),
            (
                Some(Command::Audit {
                    command: AuditCommand::Key { name, out },
                }),
                _,
            ) => commands::checkpoint_key(&name, &out),
            (
                Some(Command::Audit {
                    command:
                        AuditCommand::Checkpoint {
                            file,
                            key_file,
                            origin,
                        },
                }),
                _,
            ) => commands::checkpoint(&file, &key_file, &origin),
            (
                Some(Command::Audit {
                    command:
                        AuditCommand::VerifyCheckpoint {
                            file,
                            checkpoint,
                            key,
                            witnesses,
                            origin,
                        },
                }),
                _,
            ) => commands::verify_checkpoint(&file, &checkpoint, &key, &witnesses, &origin),
            (Some(Command::Approvals { command }), _) => match command {
                ApprovalsCommand::List { config } => commands::list_approvals(&config),
                ApprovalsCommand::Show { id, config } => commands::show_approval(&config, &id),
                ApprovalsCommand::Approve { id, answer } => {
                    commands::answer_approval(&id, &answer, true).await
                }
                ApprovalsCommand::Reject { id, answer } => {
                    commands::answer_approval(&id, &answer, false).await
                }
            },
            (
                Some(Command::StateKey {
                    command: StateKeyCommand::Rotate { config },
                }),
                _,
            ) => commands::rotate_state_key(&config),
            (None, Some(policy)) => {
                commands::serve(config::Config::legacy(policy, cli.audit, cli.upstream)).await
            }
            (None, None) => {
                let _ = <Cli as clap::CommandFactory>::command().print_help();
                ExitCode::from(2)
            }
        }
    });
    // Children are killed on drop; do not wait for tasks blocked on their pipes.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    if let Some(traces) = traces {
        traces.shutdown();
    }
    code
}
