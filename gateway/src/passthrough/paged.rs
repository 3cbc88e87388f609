//! An upstream's resources, resource templates and prompts, read page by page within the bounds
//! its tools are listed within: at most `limits.max_list_pages` pages (the same cursor twice ends
//! the list), the whole within `limits.list_timeout_ms` (the caller's), each page within
//! `limits.max_message_bytes` (the transport's).

use std::future::Future;

use rmcp::ServiceError;
use rmcp::model::{PaginatedRequestParams, Prompt, Resource, ResourceTemplate};
use rmcp::service::{Peer, RoleClient};

use crate::config::Limits;

/// Why a list was not read whole.
#[derive(Debug, thiserror::Error)]
pub enum PagedError {
    #[error("{0}")]
    Upstream(#[from] ServiceError),
    #[error("it lists more than {0} pages (limits.max_list_pages)")]
    TooManyPages(usize),
}

/// Every item `page` returns, following cursors within `limits`.
async fn paged<T, F, Fut>(limits: &Limits, page: F) -> Result<Vec<T>, PagedError>
where
    F: Fn(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..limits.max_list_pages {
        let params = cursor
            .clone()
            .map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
        let (more, next) = page(params).await?;
        items.extend(more);
        match next {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            _ => return Ok(items),
        }
    }
    Err(PagedError::TooManyPages(limits.max_list_pages))
}

pub async fn resources(
    peer: &Peer<RoleClient>,
    limits: &Limits,
) -> Result<Vec<Resource>, PagedError> {
    paged(limits, |params| async move {
        let page = peer.list_resources(params).await?;
        Ok((page.resources, page.next_cursor))
    })
    .await
}

pub async fn templates(
    peer: &Peer<RoleClient>,
    limits: &Limits,
) -> Result<Vec<ResourceTemplate>, PagedError> {
    paged(limits, |params| async move {
        let page = peer.list_resource_templates(params).await?;
        Ok((page.resource_templates, page.next_cursor))
    })
    .await
}

pub async fn prompts(peer: &Peer<RoleClient>, limits: &Limits) -> Result<Vec<Prompt>, PagedError> {
    paged(limits, |params| async move {
        let page = peer.list_prompts(params).await?;
        Ok((page.prompts, page.next_cursor))
    })
    .await
}
