//! `audit verify FILE`.

use std::path::Path;
use std::process::ExitCode;

/// Verifies the audit log at `path`: exit 0 printing its entry count and last hash, 1 naming the
/// first line that breaks the chain.
pub fn verify(path: &Path) -> ExitCode {
    match toolgate::audit::verify_audit_file(path) {
        Ok(tip) => {
            println!(
                "{}: {} entries, the hash chain holds; last hash {}",
                path.display(),
                tip.entries,
                tip.last_hash
            );
            println!(
                "Cutting whole entries off the end leaves a valid chain: compare the count and last hash with a copy kept elsewhere."
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: {}: {error}", path.display());
            ExitCode::FAILURE
        }
    }
}
