//! The `[audit]` table: where the log goes, the space kept ahead of a JSON Lines log, and its
//! signed checkpoints.

use std::path::Path;

use super::super::checkpoints::checkpoint_config;
use super::super::{AuditSection, AuditTarget, CheckpointConfig};

/// The most zeros `audit.jsonl_reserve_mib` keeps ahead of a log: a gigabyte is seconds of lines
/// at any rate a disk syncs them; more is a typo.
const MAX_RESERVE_MIB: u64 = 1024;

/// `[audit]`, paths relative to `base`: where the log goes, the bytes of zeros kept ahead of a
/// JSON Lines log, and its signed checkpoints.
pub(super) fn audit(
    section: Option<AuditSection>,
    base: &Path,
    problem: &mut dyn FnMut(&str, String),
) -> (Option<AuditTarget>, u64, Option<CheckpointConfig>) {
    let Some(section) = section else {
        return (None, 0, None);
    };
    let checkpoints = checkpoint_config(base, &section, problem);
    let reserve = jsonl_reserve(&section, problem);
    let target = match (section.jsonl, section.postgres_url_env) {
        (Some(path), None) => Some(AuditTarget::Jsonl(base.join(path))),
        (None, Some(url_env)) => Some(AuditTarget::Postgres { url_env }),
        _ => {
            problem(
                "audit",
                "set exactly one of `jsonl` (a file) and `postgres_url_env`".to_owned(),
            );
            None
        }
    };
    (target, reserve, checkpoints)
}

/// `audit.jsonl_reserve_mib`, in bytes; 0 when unset or wrong.
fn jsonl_reserve(section: &AuditSection, problem: &mut dyn FnMut(&str, String)) -> u64 {
    match (section.jsonl_reserve_mib, &section.jsonl) {
        (None, _) => 0,
        (Some(_), None) => {
            problem(
                "audit.jsonl_reserve_mib",
                "reserves space in a JSON Lines log, but `jsonl` is not set".to_owned(),
            );
            0
        }
        (Some(mib), Some(_)) if mib > MAX_RESERVE_MIB => {
            problem(
                "audit.jsonl_reserve_mib",
                format!("is {mib}: at most {MAX_RESERVE_MIB} (MiB of zeros ahead of the log)"),
            );
            0
        }
        (Some(mib), Some(_)) => mib << 20,
    }
}
