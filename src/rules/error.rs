//! Why a policy was not loaded.

use std::sync::Arc;

use super::LoadProblem;
use crate::policy::PolicyMismatch;

/// A policy that was not loaded. Nothing of it took effect; the author of the configuration is at
/// fault and every problem is listed with its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyLoadError {
    /// The file could not be read.
    #[error("cannot read policy file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's error (its source is the `std::io::Error`).
        source: ReadError,
    },
    /// The text is not a policy: bad JSON, an unknown key, a wrong type.
    #[error("policy is not valid JSON for the rule language: {message}")]
    Syntax {
        /// serde's error, with line and column.
        message: String,
    },
    /// The policy parsed but does not fit the registry or contradicts itself.
    #[error("policy has {} problem(s): {}", .problems.len(), crate::policy::join_problems(.problems))]
    Invalid {
        /// Every problem found.
        problems: Vec<LoadProblem>,
    },
}

/// The operating system's error reading a policy file; its [`source`](std::error::Error::source)
/// is the `std::io::Error`.
#[derive(Debug, Clone)]
pub struct ReadError(pub(super) Arc<std::io::Error>);

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// Equal when the kind and text agree (`std::io::Error` is not comparable).
impl PartialEq for ReadError {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for ReadError {}

impl From<PolicyMismatch> for PolicyLoadError {
    fn from(mismatch: PolicyMismatch) -> Self {
        Self::Invalid {
            problems: mismatch.problems,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    fn read_error(kind: ErrorKind, text: &str) -> ReadError {
        ReadError(Arc::new(Error::new(kind, text.to_owned())))
    }

    #[test]
    fn read_errors_are_equal_only_when_kind_and_text_both_agree() {
        assert_eq!(
            read_error(ErrorKind::NotFound, "a"),
            read_error(ErrorKind::NotFound, "a")
        );
        assert_ne!(
            read_error(ErrorKind::NotFound, "a"),
            read_error(ErrorKind::NotFound, "b")
        );
        assert_ne!(
            read_error(ErrorKind::NotFound, "a"),
            read_error(ErrorKind::Other, "a")
        );
    }
}
