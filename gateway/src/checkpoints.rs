//! Signed checkpoints of the JSON Lines audit log, written on a schedule: the latest replaces the
//! file whole (written beside it, then renamed), so a reader never sees half of one, and each new
//! one is POSTed to the checkpoint webhook when one is configured.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolgate::audit::checkpoint::{NoteSigner, checkpoint_audit_file};

use crate::config::CheckpointConfig;

/// The signer of the key file `config` names; the error names the file and says what to do.
pub fn signer(config: &CheckpointConfig) -> Result<NoteSigner, String> {
    let text = toolgate::files::read_text(&config.key_file, crate::files::MAX_CONFIG_FILE_BYTES)
        .map_err(|error| {
        format!(
            "audit.checkpoint_key_file: {}: {error} (make one with `toolgate-mcp-gateway audit key --name NAME --out FILE`)",
            config.key_file.display()
        )
    })?;
    NoteSigner::from_key(&text).map_err(|error| {
        format!(
            "audit.checkpoint_key_file: {}: {error}",
            config.key_file.display()
        )
    })
}

/// Writes the log's signed checkpoint to `config.file` if the log changed since `last`; returns
/// the note written (or `last`, unchanged).
pub fn write_once(
    config: &CheckpointConfig,
    log: &Path,
    signer: &NoteSigner,
    last: Option<String>,
) -> Result<Option<String>, String> {
    let note = checkpoint_audit_file(log, &config.origin, signer)?;
    if last.as_deref() == Some(note.as_str()) {
        return Ok(last);
    }
    let mut staged = config.file.clone().into_os_string();
    staged.push(".new");
    let staged = PathBuf::from(staged);
    std::fs::write(&staged, &note)
        .and_then(|()| std::fs::rename(&staged, &config.file))
        .map_err(|error| format!("{}: {error}", config.file.display()))?;
    Ok(Some(note))
}

/// Writes a checkpoint now and then every `config.every`, off the event loop; a round that
/// fails (a torn tail being written, a full disk) is logged and the next one tries again.
pub fn spawn(
    config: CheckpointConfig,
    log: PathBuf,
    signer: std::sync::Arc<NoteSigner>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // No redirect is followed: a checkpoint goes where the operator said, or nowhere.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        let mut last: Option<String> = None;
        loop {
            let (config_now, log_now, signer_now, previous) = (
                config.clone(),
                log.clone(),
                std::sync::Arc::clone(&signer),
                last.clone(),
            );
            let round = tokio::task::spawn_blocking(move || {
                write_once(&config_now, &log_now, &signer_now, previous)
            })
            .await;
            match round {
                Ok(Ok(written)) => {
                    if written != last {
                        tracing::info!(file = %config.file.display(), "signed checkpoint of the audit log written");
                        if let (Some(url), Some(note)) = (&config.webhook_url, &written) {
                            publish(&client, url, note).await;
                        }
                    }
                    last = written;
                }
                Ok(Err(problem)) => {
                    tracing::warn!("no checkpoint this round: {problem}");
                }
                Err(_) => tracing::warn!("the checkpoint round failed"),
            }
            tokio::time::sleep(config.every.max(Duration::from_secs(1))).await;
        }
    })
}

/// POSTs a new checkpoint to the webhook; a failure is logged, never retried into the next
/// round (the next checkpoint supersedes it).
async fn publish(client: &reqwest::Client, url: &str, note: &str) {
    let sent = client
        .post(url)
        .header("content-type", "text/plain; charset=utf-8")
        .body(note.to_owned())
        .send()
        .await;
    match sent {
        Ok(response) if response.status().is_success() => {}
        Ok(response) => {
            tracing::warn!(status = %response.status(), "the checkpoint webhook refused a checkpoint")
        }
        Err(error) => tracing::warn!("the checkpoint webhook could not be reached: {error}"),
    }
}

/// The last checkpoint, when the gateway stops: the entries written since the last round are
/// covered by a signed checkpoint now, not only after the next start.
pub async fn write_final(
    config: CheckpointConfig,
    log: PathBuf,
    signer: std::sync::Arc<NoteSigner>,
) {
    let file = config.file.clone();
    match tokio::task::spawn_blocking(move || write_once(&config, &log, &signer, None)).await {
        Ok(Ok(_)) => {
            tracing::info!(file = %file.display(), "signed checkpoint of the audit log written on stopping");
        }
        Ok(Err(problem)) => tracing::warn!("no checkpoint on stopping: {problem}"),
        Err(_) => tracing::warn!("the checkpoint on stopping failed"),
    }
}
