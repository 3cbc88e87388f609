//! The subcommands.

mod approvals;
mod audit;
mod audit_postgres;
mod check;
mod init;
mod key;
mod pin;
mod policy;
mod serve;
mod state_key;
mod tools;

pub use approvals::{answer as answer_approval, list as list_approvals, show as show_approval};
pub use audit::{checkpoint, checkpoint_key, disclose, forget, prove, verify, verify_checkpoint};
pub use audit_postgres::export;
pub use check::check;
pub use init::{Init, init};
pub use key::key;
pub use pin::pin;
pub use policy::{diff as policy_diff, explain as policy_explain};
pub use serve::serve;
pub use state_key::rotate_state_key;
pub use tools::tools;

use std::path::Path;

use crate::config::{self, Config};

/// The config at `path`, or every problem in it, printed.
pub(crate) fn config_or_report(path: &Path) -> Option<Config> {
    match config::load(path) {
        Ok(config) => Some(config),
        Err(problems) => {
            report(problems.iter().map(ToString::to_string));
            None
        }
    }
}

/// The pins of `config`, or the problem printed.
pub(crate) fn pins_or_report(config: &Config) -> Option<crate::pins::Pins> {
    crate::pins::Pins::of(config)
        .map_err(|problem| report([problem]))
        .ok()
}

/// The upstreams of `config` started and listed against `pins`, or every problem printed — an
/// upstream that did not start or list is one (for commands that must see every upstream).
pub(crate) async fn start_or_report(
    config: &Config,
    pins: &crate::pins::Pins,
) -> Option<crate::assemble::Started> {
    let started = start_degraded_or_report(config, pins).await?;
    if started.broken.is_empty() {
        Some(started)
    } else {
        report(started.broken.iter().map(|(_, why)| why.clone()));
        None
    }
}

/// The upstreams of `config` started and listed against `pins`, an upstream that did not start
/// or list held back (served down, restarted once supervised); `None` with the problem printed
/// when the tools cannot be served together.
pub(crate) async fn start_degraded_or_report(
    config: &Config,
    pins: &crate::pins::Pins,
) -> Option<crate::assemble::Started> {
    crate::assemble::start(config, pins)
        .await
        .map_err(report)
        .ok()
}

/// Prints each problem on stderr, one per line, after a count.
pub(crate) fn report(problems: impl IntoIterator<Item = String>) {
    let problems: Vec<String> = problems.into_iter().collect();
    let count = problems.len();
    eprintln!(
        "toolgate-mcp-gateway: {count} problem{}:",
        if count == 1 { "" } else { "s" }
    );
    for problem in problems {
        eprintln!("  - {}", problem.replace('\n', "\n    "));
    }
}
