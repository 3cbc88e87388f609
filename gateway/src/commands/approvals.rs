//! `approvals list | show | approve | reject`: a person answers waiting calls from a shell.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use toolgate::approvals::{ApprovalRequest, ApprovalStore};
use toolgate::clock::{Clock as _, SystemClock};
use toolgate::{ApprovalId, ApprovalResponse};

use crate::assemble;
use crate::config::Config;

/// The config and its (durable) approval store, or the problem printed.
fn store_of(config_path: &Path) -> Option<(Config, Arc<dyn ApprovalStore>)> {
    let config = super::config_or_report(config_path)?;
    match assemble::approval_store(&config) {
        Ok(Some(store)) => Some((config, store)),
        Ok(None) => {
            super::report([format!(
                "{}: approvals.store: \"memory\" keeps waiting calls inside the gateway process; nothing outside it can see or answer them (use \"sqlite\", the default, or \"postgres\")",
                config.file.display()
            )]);
            None
        }
        Err(problem) => {
            super::report([problem]);
            None
        }
    }
}

fn waiting(store: &dyn ApprovalStore) -> Result<Vec<ApprovalRequest>, String> {
    store
        .pending(SystemClock.now_ms())
        .map_err(|error| format!("cannot read the approval store: {error}"))
}

fn who(request: &ApprovalRequest) -> &str {
    request
        .call
        .principal
        .as_ref()
        .map_or("(no principal)", |principal| principal.id.as_str())
}

/// Prints the waiting calls, oldest first.
pub fn list(config_path: &Path) -> ExitCode {
    let Some((_, store)) = store_of(config_path) else {
        return ExitCode::FAILURE;
    };
    match waiting(store.as_ref()) {
        Ok(requests) if requests.is_empty() => println!("no call is waiting for approval"),
        Ok(requests) => {
            for request in requests {
                println!(
                    "{}  {}  asked by {}  because {}",
                    request.approval_id,
                    request.call.tool_name,
                    who(&request),
                    request.reason
                );
            }
        }
        Err(problem) => {
            super::report([problem]);
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// The waiting call `id`, or the problem printed.
fn find(store: &dyn ApprovalStore, id: &str) -> Option<ApprovalRequest> {
    let Ok(approval_id) = id.parse::<ApprovalId>() else {
        super::report([format!(
            "{id:?} is not an approval id (as `approvals list` prints them)"
        )]);
        return None;
    };
    match waiting(store) {
        Ok(requests) => {
            let found = requests
                .into_iter()
                .find(|request| request.approval_id == approval_id);
            if found.is_none() {
                super::report([format!(
                    "approval {approval_id} is not waiting (answered, expired, withdrawn, or never held here)"
                )]);
            }
            found
        }
        Err(problem) => {
            super::report([problem]);
            None
        }
    }
}

/// Prints one waiting call whole.
pub fn show(config_path: &Path, id: &str) -> ExitCode {
    let Some((_, store)) = store_of(config_path) else {
        return ExitCode::FAILURE;
    };
    let Some(request) = find(store.as_ref(), id) else {
        return ExitCode::FAILURE;
    };
    let arguments = serde_json::to_string_pretty(&request.call.arguments)
        .unwrap_or_else(|_| "(not printable)".to_owned());
    println!("approval:   {}", request.approval_id);
    println!("tool:       {}", request.call.tool_name);
    println!("asked by:   {}", who(&request));
    println!("because:    {}", request.reason);
    println!("arguments digest:  {}", request.digest);
    println!("definition digest: {}", request.definition_digest);
    println!("arguments (all of them):\n{arguments}");
    ExitCode::SUCCESS
}

/// Approves or rejects `id` as `approver` through a controller assembled from the config (its
/// upstreams started, so an approved call runs here), printing the outcome.
pub async fn answer(config_path: &Path, id: &str, approver: &str, approve: bool) -> ExitCode {
    if approver.is_empty()
        || approver.len() > 256
        || approver
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
    {
        super::report([format!(
            "--as {approver:?}: name who answers in 1 to 256 bytes, no space or control character"
        )]);
        return ExitCode::FAILURE;
    }
    let Some((config, store)) = store_of(config_path) else {
        return ExitCode::FAILURE;
    };
    let Some(request) = find(store.as_ref(), id) else {
        return ExitCode::FAILURE;
    };
    drop(store);
    let Some(pins) = super::pins_or_report(&config) else {
        return ExitCode::FAILURE;
    };
    let Some(started) = super::start_or_report(&config, &pins).await else {
        return ExitCode::FAILURE;
    };
    let controller = match assemble::controller(&config, &started) {
        Ok((controller, _)) => controller,
        Err(mut problems) => {
            problems.push(format!(
                "nothing ran: answering runs the call in this process, with the config's audit log and upstreams; a JSON Lines log is held by the gateway writing it (stop that gateway first, or use audit.postgres_url_env to answer while gateways run); approval {} still waits",
                request.approval_id
            ));
            super::report(problems);
            return ExitCode::FAILURE;
        }
    };
    let response = if approve {
        ApprovalResponse::approve(request.approval_id)
    } else {
        ApprovalResponse::reject(request.approval_id)
    }
    .by(approver);
    match controller.resolve_async(response).await {
        Ok(result) => {
            let text = &result.content;
            if approve && !result.is_error {
                println!(
                    "approved by {approver}: {} ran once; its result:\n{text}",
                    request.call.tool_name
                );
                ExitCode::SUCCESS
            } else if approve {
                println!("approved by {approver}, but the call did not succeed:\n{text}");
                ExitCode::FAILURE
            } else {
                println!(
                    "rejected by {approver}: {} did not run",
                    request.call.tool_name
                );
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            super::report([format!(
                "approval {}: {error}; nothing ran",
                request.approval_id
            )]);
            ExitCode::FAILURE
        }
    }
}
