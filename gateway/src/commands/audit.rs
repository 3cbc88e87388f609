//! `audit verify FILE [--head HEAD]` and `audit prove FILE --index I`.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;
use toolgate::audit::{
    ChainTip, TreeHead, audit_receipt, audit_tree_head, verify_audit_extends, verify_audit_file,
};

/// Verifies the audit log at `path` — and, given `head`, that it extends that tree head kept
/// earlier: exit 0 printing its entry count, last hash and tree head now; 1 naming the first line
/// that breaks the chain, or saying entries were cut off or rewritten.
pub fn verify(path: &Path, head: Option<&str>) -> ExitCode {
    let kept = match head.map(str::parse::<TreeHead>).transpose() {
        Ok(kept) => kept,
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: --head: {error}");
            return ExitCode::FAILURE;
        }
    };
    let checked = || -> Result<(TreeHead, ChainTip), String> {
        let now = match &kept {
            Some(kept) => verify_audit_extends(path, kept).map_err(|error| error.to_string())?,
            None => audit_tree_head(path).map_err(|error| error.to_string())?,
        };
        let tip = verify_audit_file(path).map_err(|error| error.to_string())?;
        Ok((now, tip))
    };
    match checked() {
        Ok((now, tip)) => {
            println!(
                "{}: {} entries, the hash chain holds; last hash {}",
                path.display(),
                tip.entries,
                tip.last_hash
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
            eprintln!("toolgate-mcp-gateway: {}: {error}", path.display());
            ExitCode::FAILURE
        }
    }
}

/// Prints the receipt of entry `index` (its `seq`) with the log's tree head now, as one JSON
/// object: what proves, with the entry's line alone, that the entry is in the log.
pub fn prove(path: &Path, index: u64) -> ExitCode {
    match audit_receipt(path, index) {
        Ok(Some((receipt, head))) => {
            println!(
                "{}",
                json!({"receipt": receipt, "tree_head": head.to_string()})
            );
            ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!(
                "toolgate-mcp-gateway: {}: no entry {index} (entries are numbered from 0)",
                path.display()
            );
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: {}: {error}", path.display());
            ExitCode::FAILURE
        }
    }
}
