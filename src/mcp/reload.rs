//! A policy file followed while the gateway runs: a change is put in force only if it loads whole.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::controller::ToolController;
use crate::rules::{PolicyLoadError, RulePolicy};

/// A [`RulePolicy`] JSON file, read again on every [`check`](Self::check).
///
/// # Guarantees
///
/// A changed file is put in force only if it parses and loads against the controller's current
/// registry ([`ToolController::try_replace_policy`]); otherwise the policy in force stays,
/// untouched, and the error is returned. An unchanged file is not loaded again.
#[derive(Debug)]
pub struct PolicyFile {
    path: PathBuf,
    // The text last looked at, applied or not, so a bad file is reported once per change.
    last: Option<String>,
}

/// What one [`PolicyFile::check`] did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Reload {
    /// The file has not changed since the last check.
    Unchanged,
    /// The changed file is in force.
    Applied,
    /// The changed file was not applied; the previous policy stays in force.
    Rejected(PolicyLoadError),
}

impl PolicyFile {
    /// Follows `path`; the first [`check`](Self::check) loads it.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            last: None,
        }
    }

    /// The file followed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file and, if it changed, tries to put it in force in `controller`.
    pub fn check(&mut self, controller: &ToolController) -> Reload {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            // Unreadable (removed, mid-rename): loading it again gives the typed read error; if
            // it has become readable meanwhile, it is loaded whole like any change.
            Err(_) => {
                self.last = None;
                let path = &self.path;
                return match controller
                    .try_replace_policy(|registry| RulePolicy::from_file(path, registry))
                {
                    Ok(()) => Reload::Applied,
                    Err(error) => Reload::Rejected(error),
                };
            }
        };
        if self.last.as_deref() == Some(text.as_str()) {
            return Reload::Unchanged;
        }
        let outcome =
            controller.try_replace_policy(|registry| RulePolicy::from_json(&text, registry));
        self.last = Some(text);
        match outcome {
            Ok(()) => Reload::Applied,
            Err(error) => Reload::Rejected(error),
        }
    }

    /// Checks the file every `every` on a tokio task, writing what happened to stderr.
    pub fn watch(
        mut self,
        controller: Arc<ToolController>,
        every: Duration,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match self.check(&controller) {
                    Reload::Unchanged => {}
                    Reload::Applied => {
                        eprintln!("toolgate: policy {} reloaded", self.path.display())
                    }
                    Reload::Rejected(error) => eprintln!(
                        "toolgate: policy {} not reloaded, the previous policy stays: {error}",
                        self.path.display()
                    ),
                }
            }
        })
    }
}
