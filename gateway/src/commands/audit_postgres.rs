//! The `audit` commands on the PostgreSQL log (`--postgres-env VAR`): verify, prove, disclose,
//! forget, and export to a JSON Lines file that every file command reads.

use std::path::Path;
use std::process::ExitCode;

use toolgate::audit::{ChainTip, Disclosure, PostgresAuditSink, Receipt, TreeHead};

/// How messages name the PostgreSQL log whose URL is in `env` (never the URL: it may hold a
/// password).
pub fn name(env: &str) -> String {
    format!("the PostgreSQL audit log (${env})")
}

/// How a command opens the log: to read it (a role granted `SELECT` is enough, nothing is
/// created or moved), or to erase a salt.
#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

/// Runs `work` on the PostgreSQL log whose URL is in `env`, on a thread of its own: the blocking
/// client runs a runtime of its own, which may neither run nor be dropped on a thread of the
/// gateway's runtime.
fn with_log<T: Send>(
    env: &str,
    access: Access,
    work: impl FnOnce(&PostgresAuditSink) -> Result<T, String> + Send,
) -> Result<T, String> {
    let url = std::env::var(env).map_err(|_| {
        format!(
            "--postgres-env: ${env} is not set (it holds the PostgreSQL URL, as audit.postgres_url_env names it)"
        )
    })?;
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("toolgate-audit-postgres".into())
            .spawn_scoped(scope, || {
                let log = match access {
                    Access::Read => PostgresAuditSink::connect_read_only(&url),
                    Access::Write => PostgresAuditSink::connect(&url),
                }
                .map_err(|error| {
                    format!("cannot open it: {}", crate::causes::with_causes(&error))
                })?;
                work(&log)
            })
            .map_err(|error| format!("cannot start a thread: {error}"))?;
        worker
            .join()
            .unwrap_or_else(|_| Err("the database client panicked".to_owned()))
    })
}

/// The tree head now (checked to extend `kept` when given) and the chain's tip, after verifying it.
pub fn verify(env: &str, kept: Option<&TreeHead>) -> Result<(TreeHead, ChainTip), String> {
    with_log(env, Access::Read, |log| {
        let now = match kept {
            Some(kept) => log.verify_extends(kept),
            None => log.tree_head(),
        }
        .map_err(|error| crate::causes::with_causes(&error))?;
        let tip = log
            .verify()
            .map_err(|error| crate::causes::with_causes(&error))?;
        Ok((now, tip))
    })
}

/// Entry `index`'s receipt and the tree head now; `None` past the end.
pub fn prove(env: &str, index: u64) -> Result<Option<(Receipt, TreeHead)>, String> {
    with_log(env, Access::Read, |log| {
        log.receipt(index)
            .map_err(|error| crate::causes::with_causes(&error))
    })
}

/// `arguments` shown against entry `index`.
pub fn disclose(env: &str, index: u64, arguments: serde_json::Value) -> Result<Disclosure, String> {
    with_log(env, Access::Read, |log| {
        log.disclose(index, &arguments)
            .map_err(|error| crate::causes::with_causes(&error))?
            .ok_or_else(|| format!("no entry {index} (entries are numbered from 0)"))
    })
}

/// Erases entry `index`'s salt; whether there was one.
pub fn forget(env: &str, index: u64) -> Result<bool, String> {
    with_log(env, Access::Write, |log| {
        log.forget_salt(index)
            .map_err(|error| crate::causes::with_causes(&error))
    })
}

/// Writes the PostgreSQL log to a new file at `out`, verified as it is written, and prints what
/// was written with the file's tree head; a failed export — an error, a panic — leaves no file.
pub fn export(env: &str, out: &Path) -> ExitCode {
    let created = std::sync::atomic::AtomicBool::new(false);
    let written = with_log(env, Access::Read, |log| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        let file = options
            .open(out)
            .map_err(|error| format!("{}: cannot create it ({error})", out.display()))?;
        created.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut writer = std::io::BufWriter::new(file);
        let tip = log
            .export(&mut writer)
            .map_err(|error| crate::causes::with_causes(&error))?;
        writer
            .into_inner()
            .map_err(|error| error.into_error())
            .and_then(|file| file.sync_all())
            .map_err(|error| format!("{}: {error}", out.display()))?;
        Ok(tip)
    });
    if written.is_err() && created.load(std::sync::atomic::Ordering::SeqCst) {
        // Half a log must not be mistaken for the log (a buffer flushed while a panic unwound
        // ends on a whole line and verifies).
        let _ = std::fs::remove_file(out);
    }
    // Read back with the file's own check: the export is what `audit verify FILE` accepts.
    let checked = written.and_then(|tip| {
        toolgate::audit::audit_tree_head(out)
            .map(|head| (tip, head))
            .map_err(|error| format!("{}: the export does not verify: {error}", out.display()))
    });
    match checked {
        Ok((tip, head)) => {
            println!(
                "{}: {} entries written to {}; the hash chain holds; last hash {}",
                name(env),
                tip.entries,
                out.display(),
                tip.last_hash
            );
            println!("tree head: {head}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: {}: {error}", name(env));
            ExitCode::FAILURE
        }
    }
}
