//! The approval page on the admin listener: the library's page over the gateway's controller,
//! signing people in with the gateway's identities (`[[clients]]` keys, `[jwt]` tokens).

use std::sync::Arc;

use axum::Router;
use toolgate::approval_page::{ApprovalPage, JsonlAuditView};
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
    if let Some(AuditTarget::Jsonl(path)) = &config.audit {
        page = page.with_audit(JsonlAuditView::new(path));
    }
    Some(page.router())
}
