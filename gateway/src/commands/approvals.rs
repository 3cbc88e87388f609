//! `approvals list | show | approve | reject`: a person answers waiting calls from a shell.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use toolgate::approvals::{ApprovalError, ApprovalId, ApprovalRequest, ApprovalStore};
use toolgate::clock::{Clock as _, SystemClock};
use toolgate::{ApprovalResponse, Principal};

use crate::assemble;
use crate::cli::AnswerArgs;
use crate::config::Config;
use crate::identities::Keys;

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

/// The id, if it names a request still waiting unexpired — read alone, not found in a list of
/// all.
fn still_waiting(store: &dyn ApprovalStore, id: &str) -> Option<ApprovalId> {
    let Ok(approval_id) = id.parse::<ApprovalId>() else {
        super::report([format!(
            "{id:?} is not an approval id (as `approvals list` prints them)"
        )]);
        return None;
    };
    match store.waiting(approval_id, SystemClock.now_ms()) {
        Ok(Some(_)) => Some(approval_id),
        Ok(None) => {
            super::report([format!(
                "approval {approval_id} is not waiting (answered, expired, withdrawn, or never held here)"
            )]);
            None
        }
        Err(error) => {
            super::report([format!("cannot read the approval store: {error}")]);
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

/// Who answers: the principal a key names (with its groups), or, for a config naming no
/// identities, the name given; the problem printed otherwise.
async fn approver_of(config: &Config, answer: &AnswerArgs) -> Option<Principal> {
    let identities = !config.clients.is_empty() || config.jwt.is_some() || config.oauth.is_some();
    match (&answer.key_env, &answer.approver, identities) {
        (Some(var), claimed, true) => {
            let Ok(credential) = std::env::var(var) else {
                super::report([format!(
                    "--key-env {var}: the variable is not set (or not UTF-8)"
                )]);
                return None;
            };
            // An [oauth] issuer's keys are fetched when the token names one of them.
            let oauth = match config
                .oauth
                .clone()
                .map(crate::oauth::OAuth::new)
                .transpose()
            {
                Ok(oauth) => oauth.map(std::sync::Arc::new),
                Err(problem) => {
                    super::report([format!("[oauth]: {problem}")]);
                    return None;
                }
            };
            if let Some(page) = config.oauth.as_ref().and_then(|oauth| oauth.page.as_ref())
                && !page.credential_sign_in
            {
                super::report([format!(
                    "{}: approvers sign in at the identity provider ([oauth.page] credential_sign_in = false): answer on the approval page; no key or token typed here answers",
                    config.file.display()
                )]);
                return None;
            }
            // Whoever may sign in to the page, and no one else: a client marked
            // `page_sign_in = false` (a model's key) answers nothing here either.
            let keys = Keys::for_the_page(&config.clients, config.jwt.clone(), oauth);
            let Some((principal, _)) = keys.principal_fetching(credential.trim()).await else {
                super::report([format!(
                    "--key-env {var}: the key names nobody in {} who may answer ([[clients]] not marked page_sign_in = false, [oauth] or [jwt])",
                    config.file.display()
                )]);
                return None;
            };
            if claimed
                .as_ref()
                .is_some_and(|claimed| *claimed != principal.id)
            {
                super::report([format!(
                    "--as {:?}: your key names {:?}; answer as who you are",
                    claimed.as_deref().unwrap_or(""),
                    principal.id
                )]);
                return None;
            }
            Some(Principal::clone(&principal))
        }
        (None, _, true) => {
            super::report([format!(
                "{} names identities ([[clients]], [oauth] or [jwt]): pass --key-env VAR, a variable holding your API key or token, so the answer is yours",
                config.file.display()
            )]);
            None
        }
        (Some(_), _, false) => {
            super::report([format!(
                "--key-env: {} names no identities to check a key against; pass --as NAME",
                config.file.display()
            )]);
            None
        }
        (None, None, false) => {
            super::report(["name who answers: --as NAME".to_owned()]);
            None
        }
        (None, Some(name), false) => {
            if name.is_empty()
                || name.len() > 256
                || name.chars().any(|c| c.is_control() || c.is_whitespace())
            {
                super::report([format!(
                    "--as {name:?}: name who answers in 1 to 256 bytes, no space or control character"
                )]);
                return None;
            }
            Some(Principal::new(name.clone(), Vec::<String>::new()))
        }
    }
}

/// Approves or rejects `id` as the approver `answer` proves, through a controller assembled from
/// the config (its upstreams started, so an approved call runs here), printing the outcome.
pub async fn answer(id: &str, answer: &AnswerArgs, approve: bool) -> ExitCode {
    let Some((config, store)) = store_of(&answer.config) else {
        return ExitCode::FAILURE;
    };
    let Some(principal) = approver_of(&config, answer).await else {
        return ExitCode::FAILURE;
    };
    let approver = principal.id.clone();
    // One read of this id, not a list of what waits: the answer itself is checked in the take.
    let Some(approval_id) = still_waiting(store.as_ref(), id) else {
        return ExitCode::FAILURE;
    };
    drop(store);
    // A JSON Lines log has one writer: if a gateway holds it, say so before starting any
    // upstream (the probe's lock is let go at once; the controller takes it again below).
    if let Some(crate::config::AuditTarget::Jsonl(path)) = &config.audit
        && let Err(error) = toolgate::audit::JsonlAuditSink::open(path)
    {
        super::report([format!(
            "{}: audit.jsonl: {}: {error}; nothing ran, and no upstream was started: a JSON Lines log is held by the gateway writing it (stop that gateway first, or use audit.postgres_url_env to answer while gateways run); approval {} still waits",
            config.file.display(),
            path.display(),
            approval_id
        )]);
        return ExitCode::FAILURE;
    }
    let Some(pins) = super::pins_or_report(&config) else {
        return ExitCode::FAILURE;
    };
    let Some(started) = super::start_degraded_or_report(&config, &pins).await else {
        return ExitCode::FAILURE;
    };
    let controller = match assemble::controller(&config, &started) {
        Ok((controller, _)) => controller,
        Err(mut problems) => {
            problems.push(format!(
                "nothing ran: answering runs the call in this process, with the config's audit log and upstreams; a JSON Lines log is held by the gateway writing it (stop that gateway first, or use audit.postgres_url_env to answer while gateways run); approval {} still waits",
                approval_id
            ));
            super::report(problems);
            return ExitCode::FAILURE;
        }
    };
    let mut response = if approve {
        ApprovalResponse::approve(approval_id)
    } else {
        ApprovalResponse::reject(approval_id)
    }
    .by_principal(principal)
    // A shell is not the asker's client: the asker answers its own call here only where every
    // rule that asks allows it, as on the page.
    .out_of_band();
    if let Some(note) = &answer.note {
        response = response.with_note(note.clone());
    }
    if let Some(digest) = &answer.digest {
        response = response.for_digest(digest.clone());
    }
    match controller.resolve_request_async(response).await {
        Ok(resolved) if resolved.expired => {
            super::report([format!(
                "approval {approval_id} expired before your answer; nothing ran (the model may propose the call again)"
            )]);
            ExitCode::FAILURE
        }
        Ok(resolved) => {
            let (result, request) = (resolved.result, resolved.request);
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
        Err(ApprovalError::NotTheCallRead { .. }) => {
            super::report([format!(
                "approval {approval_id} holds another call than the digest you gave; nothing was answered and nothing ran: read it again with `approvals show {approval_id}`"
            )]);
            ExitCode::FAILURE
        }
        Err(error) => {
            super::report([format!("approval {approval_id}: {error}; nothing ran")]);
            ExitCode::FAILURE
        }
    }
}
