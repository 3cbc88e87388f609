//! `state-key rotate`: a fresh request-state key first in the config's key file.

use std::path::Path;
use std::process::ExitCode;

use crate::config::StateKeySource;

/// Rotates the key file `config` names (its default `NAME.state-key`, or `state_key_file`).
pub fn rotate_state_key(config: &Path) -> ExitCode {
    let Some(config) = super::config_or_report(config) else {
        return ExitCode::FAILURE;
    };
    let path = match &config.state_key {
        StateKeySource::File { path, .. } => path.clone(),
        StateKeySource::Env(name) => {
            super::report([format!(
                "{}: gateway.state_key_env: the key comes from ${name}, not a file; rotate it where it is set",
                config.file.display()
            )]);
            return ExitCode::FAILURE;
        }
        StateKeySource::PerProcess => return ExitCode::FAILURE,
    };
    match crate::state_key::rotate(&path) {
        Ok(dropped) => {
            println!(
                "{}: a new key seals from the next start; the previous one still opens; {dropped} older key(s) dropped",
                path.display()
            );
            ExitCode::SUCCESS
        }
        Err(problem) => {
            super::report([problem]);
            ExitCode::FAILURE
        }
    }
}
