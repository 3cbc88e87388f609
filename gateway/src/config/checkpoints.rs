//! The `[audit]` keys of signed checkpoints, checked at load.

use std::path::Path;

/// The `[audit]` checkpoint keys: all of key file and origin, or none; only beside `jsonl`.
pub(super) fn checkpoint_config(
    base: &Path,
    section: &super::AuditSection,
    problem: &mut dyn FnMut(&str, String),
) -> Option<super::CheckpointConfig> {
    let named = section.checkpoint_file.is_some()
        || section.checkpoint_every_s.is_some()
        || section.checkpoint_webhook_url.is_some();
    let (key_file, origin) = match (&section.checkpoint_key_file, &section.checkpoint_origin) {
        (Some(key), Some(origin)) => (key, origin),
        (None, None) if !named => return None,
        _ => {
            problem(
                "audit.checkpoint_key_file",
                "signed checkpoints need both `checkpoint_key_file` (from `toolgate-mcp-gateway audit key`) and `checkpoint_origin`".to_owned(),
            );
            return None;
        }
    };
    let Some(jsonl) = &section.jsonl else {
        problem(
            "audit.checkpoint_key_file",
            "checkpoints are of a JSON Lines log: set `audit.jsonl`".to_owned(),
        );
        return None;
    };
    if origin.trim().is_empty() || origin.chars().any(char::is_control) {
        problem(
            "audit.checkpoint_origin",
            "the log's origin is one line naming it (e.g. audit.example.com/gateway)".to_owned(),
        );
    }
    let every = section.checkpoint_every_s.unwrap_or(300);
    if every == 0 {
        problem(
            "audit.checkpoint_every_s",
            "checkpoints are written every 1 second or more".to_owned(),
        );
    }
    let log = base.join(jsonl);
    let file = section.checkpoint_file.as_ref().map_or_else(
        || {
            let mut name = log.clone().into_os_string();
            name.push(".checkpoint");
            std::path::PathBuf::from(name)
        },
        |file| base.join(file),
    );
    if let Some(url) = &section.checkpoint_webhook_url
        && !super::webhook_url_allowed(url)
    {
        problem(
            "audit.checkpoint_webhook_url",
            "must be https://…, or http:// to a loopback host".to_owned(),
        );
    }
    Some(super::CheckpointConfig {
        webhook_url: section.checkpoint_webhook_url.clone(),
        key_file: base.join(key_file),
        origin: origin.clone(),
        file,
        every: std::time::Duration::from_secs(every.max(1)),
    })
}
