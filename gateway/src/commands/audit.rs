//! `audit verify FILE [--head HEAD]`, `audit prove FILE --index I`, `disclose`, `forget` — on a
//! file or, with `--postgres-env VAR`, the PostgreSQL log — and signed checkpoints: `audit key`,
//! `audit checkpoint`, `audit verify-checkpoint`.

use std::path::Path;
use std::process::ExitCode;

use super::audit_postgres;
use crate::cli::AuditLog;

use serde_json::json;
use toolgate::audit::{
    ChainTip, TreeHead, audit_receipt, audit_tree_head, verify_audit_extends, verify_audit_file,
};

/// Verifies the audit log — and, given `head`, that it extends that tree head kept earlier:
/// exit 0 printing its entry count, last hash and tree head now; 1 naming the first entry that
/// breaks the chain, or saying entries were cut off or rewritten.
pub fn verify(log: &AuditLog, head: Option<&str>) -> ExitCode {
    let kept = match head.map(str::parse::<TreeHead>).transpose() {
        Ok(kept) => kept,
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: --head: {error}");
            return ExitCode::FAILURE;
        }
    };
    let checked = match log {
        AuditLog::File(path) => (|| -> Result<(TreeHead, ChainTip), String> {
            let now = match &kept {
                Some(kept) => {
                    verify_audit_extends(path, kept).map_err(|error| error.to_string())?
                }
                None => audit_tree_head(path).map_err(|error| error.to_string())?,
            };
            let tip = verify_audit_file(path).map_err(|error| error.to_string())?;
            Ok((now, tip))
        })(),
        AuditLog::Postgres(env) => audit_postgres::verify(env, kept.as_ref()),
    };
    let name = name_of(log);
    match checked {
        Ok((now, tip)) => {
            println!(
                "{name}: {} entries, the hash chain holds; last hash {}",
                tip.entries, tip.last_hash
            );
            match kept {
                Some(kept) => println!(
                    "It extends the tree head kept ({kept}): none of its first {} entries was cut off or rewritten.",
                    kept.size
                ),
                None => println!(
                    "Cutting entries off the end, or rewriting the log whole, leaves a valid chain: keep the tree head below elsewhere and check later logs with --head."
                ),
            }
            println!("tree head: {now}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: {name}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// How messages name `log`.
fn name_of(log: &AuditLog) -> String {
    match log {
        AuditLog::File(path) => path.display().to_string(),
        AuditLog::Postgres(env) => audit_postgres::name(env),
    }
}

/// Prints the receipt of entry `index` (its `seq`) with the log's tree head now, as one JSON
/// object: what proves, with the entry's line alone, that the entry is in the log.
pub fn prove(log: &AuditLog, index: u64) -> ExitCode {
    let proved = match log {
        AuditLog::File(path) => audit_receipt(path, index).map_err(|error| error.to_string()),
        AuditLog::Postgres(env) => audit_postgres::prove(env, index),
    };
    let name = name_of(log);
    match proved {
        Ok(Some((receipt, head))) => {
            println!(
                "{}",
                json!({"receipt": receipt, "tree_head": head.to_string()})
            );
            ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!(
                "toolgate-mcp-gateway: {name}: no entry {index} (entries are numbered from 0)"
            );
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: {name}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Shows `arguments` (JSON) against entry `index`: exit 0 when the entry commits to them, 3 when
/// it commits to other arguments or its salt was erased, 1 on an error (the log does not verify,
/// no such entry, the JSON does not parse). The arguments are never printed.
pub fn disclose(log: &AuditLog, index: u64, arguments: &str) -> ExitCode {
    let arguments: serde_json::Value = match serde_json::from_str(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: --arguments is not JSON: {error}");
            return ExitCode::FAILURE;
        }
    };
    let disclosed = match log {
        AuditLog::File(path) => toolgate::audit::disclose_audit_arguments(path, index, &arguments)
            .map_err(|error| error.to_string()),
        AuditLog::Postgres(env) => audit_postgres::disclose(env, index, arguments),
    };
    match disclosed {
        Ok(disclosure) => {
            println!("entry {index}: {disclosure}");
            if disclosure == toolgate::audit::Disclosure::Matches {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(3)
            }
        }
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: {}: {error}", name_of(log));
            ExitCode::FAILURE
        }
    }
}

/// Erases entry `index`'s salt (kept beside a file log, or in the database).
pub fn forget(log: &AuditLog, index: u64) -> ExitCode {
    let forgotten = match log {
        AuditLog::File(path) => {
            toolgate::audit::forget_audit_salt(path, index).map_err(|error| error.to_string())
        }
        AuditLog::Postgres(env) => audit_postgres::forget(env, index),
    };
    match forgotten {
        Ok(true) => {
            println!("entry {index}: salt erased; its arguments can no longer be confirmed");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("entry {index}: no salt to erase (erased before, or never written)");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: {}: {error}", name_of(log));
            ExitCode::FAILURE
        }
    }
}

/// Writes a new checkpoint signing key to `out` (mode 600; an existing file is refused) and
/// prints its verifier key.
pub fn checkpoint_key(name: &str, out: &Path) -> ExitCode {
    use toolgate::audit::checkpoint::NoteSigner;
    let (signer, verifier) = match NoteSigner::generate(name) {
        Ok(made) => made,
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: --name: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let written = options.open(out).and_then(|mut file| {
        use std::io::Write as _;
        writeln!(file, "{}", signer.private_key())
    });
    if let Err(error) = written {
        eprintln!(
            "toolgate-mcp-gateway: {}: cannot write the key ({error}); nothing was written over",
            out.display()
        );
        return ExitCode::FAILURE;
    }
    println!("{verifier}");
    eprintln!(
        "private key written to {} (keep it secret); the verifier key above checks checkpoints it signs",
        out.display()
    );
    ExitCode::SUCCESS
}

/// Prints the log's signed checkpoint.
pub fn checkpoint(path: &Path, key_file: &Path, origin: &str) -> ExitCode {
    use toolgate::audit::checkpoint::{NoteSigner, checkpoint_audit_file};
    let signer = toolgate::files::read_text(key_file, crate::files::MAX_CONFIG_FILE_BYTES)
        .map_err(|error| format!("{}: {error}", key_file.display()))
        .and_then(|text| {
            NoteSigner::from_key(&text).map_err(|error| format!("{}: {error}", key_file.display()))
        });
    let signer = match signer {
        Ok(signer) => signer,
        Err(problem) => {
            eprintln!("toolgate-mcp-gateway: --key-file {problem}");
            return ExitCode::FAILURE;
        }
    };
    match checkpoint_audit_file(path, origin, &signer) {
        Ok(note) => {
            print!("{note}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: {}: {error}", path.display());
            ExitCode::FAILURE
        }
    }
}

/// Checks the log against a signed checkpoint.
pub fn verify_checkpoint(
    path: &Path,
    note: &Path,
    key: &str,
    witnesses: &[String],
    origin: &str,
) -> ExitCode {
    use toolgate::audit::checkpoint::{NoteVerifier, verify_audit_checkpoint};
    let log = NoteVerifier::from_key(key).map_err(|error| format!("--key: {error}"));
    let verifiers: Result<Vec<NoteVerifier>, String> = log.and_then(|log| {
        let mut all = vec![log];
        for witness in witnesses {
            all.push(
                NoteVerifier::from_key(witness).map_err(|error| format!("--witness: {error}"))?,
            );
        }
        Ok(all)
    });
    let name = |key: &str| key.split('+').next().unwrap_or(key).to_owned();
    let checked = verifiers.and_then(|verifiers| {
        let text = toolgate::files::read_text(note, crate::files::MAX_CONFIG_FILE_BYTES)
            .map_err(|error| format!("{}: {error}", note.display()))?;
        verify_audit_checkpoint(path, &text, &verifiers, origin)
            .map_err(|error| format!("{}: {error}", path.display()))
    });
    match checked {
        Ok(checkpoint) => {
            let cosigned = if witnesses.is_empty() {
                "no witness was asked for".to_owned()
            } else {
                format!(
                    "cosigned by {}",
                    witnesses
                        .iter()
                        .map(|w| name(w))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            println!(
                "{}: extends the signed checkpoint of {} ({} entries): none of them was cut off or rewritten; signed by {} (the log's key), {cosigned}",
                path.display(),
                checkpoint.origin,
                checkpoint.size,
                name(key),
            );
            ExitCode::SUCCESS
        }
        Err(problem) => {
            eprintln!("toolgate-mcp-gateway: {problem}");
            ExitCode::FAILURE
        }
    }
}
