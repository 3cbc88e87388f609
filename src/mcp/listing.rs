//! `tools/list` against an upstream, bounded in pages and in time: an upstream whose cursor never
//! ends, or that stops answering mid-list, cannot keep its client waiting.

use std::time::Duration;

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};

/// Why an upstream's tools could not be listed. No tool of such a listing is used: a partial list
/// is not the upstream's list.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// More pages than the bound.
    #[error("its tools/list gave more than {pages} pages")]
    TooManyPages {
        /// The bound.
        pages: usize,
    },
    /// The pages took longer than the bound together.
    #[error("its tools/list took longer than {} ms", .timeout.as_millis())]
    TooSlow {
        /// The bound.
        timeout: Duration,
    },
    /// The upstream answered with an error, or the session closed.
    #[error("its tools/list failed: {0}")]
    Failed(String),
    /// The same cursor came back: the list would never end.
    #[error("its tools/list returned the same cursor twice")]
    CursorRepeated,
}

/// Every tool the upstream lists, following cursors up to `max_pages` pages within `timeout`.
///
/// # Errors
///
/// [`ListError`] when a bound is passed or the upstream fails.
pub async fn list_tools(
    peer: &Peer<RoleClient>,
    max_pages: usize,
    timeout: Duration,
) -> Result<Vec<Tool>, ListError> {
    let pages = async {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..max_pages {
            let params = cursor
                .take()
                .map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
            let page = peer
                .list_tools(params)
                .await
                .map_err(|error| ListError::Failed(error.to_string()))?;
            tools.extend(page.tools);
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) if !seen.insert(next.clone()) => return Err(ListError::CursorRepeated),
                Some(next) => cursor = Some(next),
            }
        }
        Err(ListError::TooManyPages { pages: max_pages })
    };
    tokio::time::timeout(timeout, pages)
        .await
        .unwrap_or(Err(ListError::TooSlow { timeout }))
}
