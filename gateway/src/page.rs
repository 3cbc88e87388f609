//! The approval page on the admin listener: the library's page over the gateway's controller,
//! signing people in with the gateway's identities (`[[clients]]` keys, `[oauth]` and `[jwt]`
//! tokens).

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use toolgate::approval_page::{ApprovalPage, Authenticate, JsonlAuditView};
use toolgate::audit::PostgresAuditSink;
use toolgate::{Principal, ToolController};

use crate::config::{AuditTarget, Config};
use crate::identities::Keys;
use crate::oauth::page_sign_in::{PageSignIn as OAuthPageSignIn, START_PATH};

/// Which upstream a served name comes from: the one whose prefix it carries (upstream names
/// never hold the separator), else the one serving its tools under their own names.
fn upstream_of(config: &Config) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    let config = config.clone();
    move |tool: &str| {
        config
            .owner_of(tool)
            .map(|(upstream, _)| upstream.to_owned())
    }
}

/// Signs people in to the page with the gateway's identities; a session opened with a token ends
/// when the token does.
struct PageSignIn {
    keys: Keys,
    metrics: Arc<crate::metrics::Metrics>,
}

impl Authenticate for PageSignIn {
    fn authenticate(&self, credential: &str) -> Option<Principal> {
        self.authenticate_until(credential)
            .map(|(principal, _)| principal)
    }

    fn authenticate_until(&self, credential: &str) -> Option<(Principal, Option<SystemTime>)> {
        let signed_in = self.keys.principal_until(credential);
        if signed_in.is_none() {
            // Never the credential: it may be a real key with a typo.
            tracing::warn!(
                "a sign-in to the approval page was refused: an unknown key, a refused token, or a client that may not sign in"
            );
            self.metrics.sign_in_refused("page");
        }
        signed_in.map(|(principal, ends)| (Principal::clone(&principal), ends))
    }
}

/// The page's routes, if the config serves it.
pub fn router(
    config: &Config,
    controller: Arc<ToolController>,
    metrics: &Arc<crate::metrics::Metrics>,
    oauth: Option<Arc<crate::oauth::OAuth>>,
) -> Result<Option<Router>, String> {
    let Some(settings) = config.approval_page else {
        return Ok(None);
    };
    let sign_in = PageSignIn {
        keys: Keys::for_the_page(&config.clients, config.jwt.clone(), oauth.clone()),
        metrics: Arc::clone(metrics),
    };
    // The same Host values the MCP listener accepts: a DNS-rebinding page reaches neither.
    let mut page = ApprovalPage::new(controller, sign_in)
        .with_allowed_hosts(config.listen.allowed_hosts.clone())
        .with_upstream_of(upstream_of(config));
    if settings.secure_cookies {
        page = page.with_secure_cookies();
    }
    match &config.audit {
        Some(AuditTarget::Jsonl(path)) => page = page.with_audit(JsonlAuditView::new(path)),
        Some(AuditTarget::Postgres { url_env }) => {
            // A connection of the view's own; the page works without it (and says so).
            let view = std::env::var(url_env).ok().and_then(|url| {
                crate::blocking::off_runtime(|| PostgresAuditSink::connect(&url))
                    .ok()
                    .map(crate::blocking::OffRuntime::new)
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
    // Approvers sign in at the identity provider, if `[oauth.page]` says so.
    let through_provider = oauth.and_then(|oauth| {
        let settings = oauth.settings.page.clone()?;
        Some((oauth, settings))
    });
    let Some((oauth, provider)) = through_provider else {
        return Ok(Some(page.router()));
    };
    page = page.with_sign_in_link(provider.label.clone(), START_PATH);
    if !provider.credential_sign_in {
        page = page.without_credential_sign_in();
    }
    let (router, sessions) = page.router_and_sessions();
    let client_ids = config
        .clients
        .iter()
        .map(|client| client.principal.id.clone())
        .collect();
    let sign_in = OAuthPageSignIn::new(
        oauth,
        provider,
        sessions,
        settings.secure_cookies,
        client_ids,
    )?;
    Ok(Some(router.merge(Arc::new(sign_in).routes())))
}

#[cfg(test)]
mod tests {
    use super::upstream_of;

    fn config(separator: &str) -> crate::config::Config {
        let text = format!(
            "[gateway]\n{separator}\n[upstreams.files]\ncommand = \"a\"\n[upstreams.git-hub]\ncommand = \"b\"\n[policy]\nlayers = [\"p.json\"]\n"
        );
        crate::config::parse(std::path::Path::new("/etc/gw/gw.toml"), &text).expect("loads")
    }

    #[test]
    fn a_served_name_names_its_upstream_and_nothing_else_does() {
        let of = upstream_of(&config(""));
        assert_eq!(of("files__read").as_deref(), Some("files"));
        assert_eq!(of("git-hub__issue__create").as_deref(), Some("git-hub"));
        assert_eq!(of("other__read"), None);
        assert_eq!(of("read"), None);
        let of = upstream_of(&config("separator = \".\""));
        assert_eq!(of("git-hub.a__b").as_deref(), Some("git-hub"));
        assert_eq!(of("files__read"), None);
    }
}
