//! What starting an upstream gives: the session (and the process, for a child), or why not.

use rmcp::service::{RoleClient, RunningService};
use tokio::process::Child;

use super::client::GatewayClient;

/// A started upstream: the session and the process.
pub struct Started {
    pub service: RunningService<RoleClient, GatewayClient>,
    /// The process, for a stdio upstream.
    pub child: Option<Child>,
}

/// Why an upstream did not start. Its display says each cause once, in operator terms: the
/// command, what happened, the exit status, the last stderr lines.
#[derive(Debug, thiserror::Error)]
#[error("upstream `{name}` ({command}) {what}{}", stderr_tail(tail.as_deref()))]
pub struct StartError {
    pub name: String,
    pub command: String,
    pub what: String,
    /// The last stderr lines of a child; `None` for a remote upstream.
    pub tail: Option<Vec<String>>,
}

fn stderr_tail(tail: Option<&[String]>) -> String {
    let Some(tail) = tail else {
        return String::new();
    };
    if tail.is_empty() {
        "; it wrote nothing on stderr".to_owned()
    } else {
        format!("; its last stderr lines:\n    {}", tail.join("\n    "))
    }
}
