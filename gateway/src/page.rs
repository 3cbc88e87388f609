//! The approval page on the admin listener: the library's page over the gateway's controller,
//! signing people in with the gateway's identities (`[[clients]]` keys, `[jwt]` tokens).

use std::sync::Arc;

use axum::Router;
use toolgate::approval_page::{ApprovalPage, JsonlAuditView};
use toolgate::audit::PostgresAuditSink;
use toolgate::{Principal, ToolController};

use crate::config::{AuditTarget, Config};
use crate::http::Keys;

/// The page's routes, if the config serves it.
pub fn router(config: &Config, controller: Arc<ToolController>) -> Option<Router> {
    let settings = config.approval_page?;
    let keys = Keys::new(&config.clients, config.jwt.clone());
    let sign_in = move |credential: &str| {
        keys.principal(credential)
            .map(|principal| Principal::clone(&principal))
    };
    // The same Host values the MCP listener accepts: a DNS-rebinding page reaches neither.
    let mut page = ApprovalPage::new(controller, sign_in)
        .with_allowed_hosts(config.listen.allowed_hosts.clone());
    if settings.secure_cookies {
        page = page.with_secure_cookies();
    }
    match &config.audit {
        Some(AuditTarget::Jsonl(path)) => page = page.with_audit(JsonlAuditView::new(path)),
        Some(AuditTarget::Postgres { url_env }) => {
            // A connection of the view's own; the page works without it (and says so).
            let view = std::env::var(url_env).ok().and_then(|url| {
                crate::blocking::off_runtime(|| PostgresAuditSink::connect(&url)).ok()
            });
            match view {
                Some(view) => page = page.with_audit(view),
                None => tracing::warn!(
                    "the approval page shows no audit events: audit.postgres_url_env ${url_env} could not be connected to"
                ),
            }
        }
        None => {}
    }
    Some(page.router())
}
