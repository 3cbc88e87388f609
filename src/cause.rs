//! The error that caused another, kept so `Error::source` reaches it (an SQLite, PostgreSQL or I/O
//! error), shared so the error stays `Clone`, and left out of comparisons.

use std::error::Error;
use std::sync::Arc;

/// An optional cause. Two causes always compare equal: errors compare by what they say.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cause(Option<Arc<dyn Error + Send + Sync>>);

impl Cause {
    /// `cause`, kept.
    pub(crate) fn of(cause: impl Error + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(cause)))
    }

    /// The cause, as `Error::source` returns it.
    pub(crate) fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0
            .as_deref()
            .map(|cause| cause as &(dyn Error + 'static))
    }
}

impl PartialEq for Cause {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Cause {}
