//! An approval page for people: any [`ToolController`]'s waiting calls, shown whole, approved or
//! rejected in a browser, with a JSON API under it (feature `approval-page`).
//!
//! [`ApprovalPage::router`] is an [axum](https://docs.rs/axum) router serving everything under
//! `/approvals`; merge it into the router of a listener *apart from* the one models reach (an
//! admin listener). The MCP gateway serves it on its admin listener.
//!
//! # Guarantees
//!
//! - **Who answers is authenticated.** A person signs in with a credential your [`Authenticate`]
//!   turns into a [`Principal`] (the gateway's: an API key or a JSON Web Token), or through a
//!   route of yours the page links to ([`with_sign_in_link`](ApprovalPage::with_sign_in_link):
//!   the gateway's OpenID Connect sign-in) that opens the session with [`PageSessions`]; typed
//!   credentials can be turned off
//!   ([`without_credential_sign_in`](ApprovalPage::without_credential_sign_in)). The session is a
//!   random 256-bit id in an `HttpOnly; SameSite=Strict` cookie (with
//!   [`with_secure_cookies`](ApprovalPage::with_secure_cookies): `__Host-` prefixed, `Secure`,
//!   `Path=/`). A request carrying the cookie twice (tossed by a page on another port of the same
//!   host) is refused, both sessions end and the cookie is cleared under every path; every route
//!   but `session`, `sign-in` and `login` needs the session's CSRF token, reads too, and the page pins its
//!   session's token in the tab's storage, so a cookie replaced under it signs it out instead of
//!   making it act as someone else. Every answer names that
//!   principal, with its groups, so a rule's [`Approvers`](crate::decision::Approvers) and four
//!   eyes judge it; the approver and the note go into the audit log.
//! - **What is approved is what was shown.** The page lists every waiting call with its tool, the
//!   upstream it comes from ([`with_upstream_of`](ApprovalPage::with_upstream_of)), the
//!   principal who asked, the reason, the time left, the digest and the *whole* canonical
//!   arguments (the form the digest covers), pretty-printed and never cut. An answer carries the digest the page showed; one
//!   for a request that is no longer waiting (answered in another tab, by the command line,
//!   expired) or whose digest differs is refused with 409, and nothing runs. An approved call runs
//!   once, through [`ToolController::resolve_async`], and its outcome is shown.
//! - **Web security.** The page is static; everything a model, an upstream or a config controls
//!   reaches it as JSON and is put in the page as text (`textContent`), never as markup. A strict
//!   Content-Security-Policy (`default-src 'none'`, scripts and styles from the page's own
//!   origin only, no framing); state changes are `POST` only, with a JSON body, the session's
//!   CSRF token in a header, and an `Origin` (when sent) of the page's own host. No argument
//!   value is put in a URL, a header or a log line.
//!
//! # Examples
//!
//! ```no_run
//! # async fn serve(controller: std::sync::Arc<toolgate::ToolController>) -> std::io::Result<()> {
//! use toolgate::Principal;
//! use toolgate::approval_page::ApprovalPage;
//!
//! // Who a credential names: here one fixed key for one person in the "security" group.
//! let page = ApprovalPage::new(controller, |credential: &str| {
//!     (credential == "s3cret-key").then(|| Principal::new("sam", ["security"]))
//! });
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
//! axum::serve(listener, page.router()).await
//! # }
//! ```

mod api;
mod assets;
mod audit_view;
mod origin;
mod session;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use audit_view::{AuditSnapshot, AuditView, JsonlAuditView};
pub use origin::host_is;

use crate::contract::Principal;
use crate::controller::ToolController;

/// Turns a credential a person typed (an API key, a token) into the principal it names.
/// Closures `Fn(&str) -> Option<Principal> + Send + Sync` are authenticators.
pub trait Authenticate: Send + Sync + 'static {
    /// The principal `credential` names, or `None` if it names nobody.
    fn authenticate(&self, credential: &str) -> Option<Principal>;

    /// The principal `credential` names and when the credential itself stops being valid (a
    /// token's `exp`; `None`: it has no end of its own, as an API key). A page session never
    /// outlives the credential that opened it: its lifetime is the page's, cut at this instant.
    /// By default, [`authenticate`](Self::authenticate) with no end.
    fn authenticate_until(&self, credential: &str) -> Option<(Principal, Option<SystemTime>)> {
        self.authenticate(credential)
            .map(|principal| (principal, None))
    }
}

impl<F> Authenticate for F
where
    F: Fn(&str) -> Option<Principal> + Send + Sync + 'static,
{
    fn authenticate(&self, credential: &str) -> Option<Principal> {
        self(credential)
    }
}

/// Names the upstream a served tool comes from.
type UpstreamOf = dyn Fn(&str) -> Option<String> + Send + Sync;

/// The approval page and its JSON API for one controller (see the [module](self) docs).
pub struct ApprovalPage {
    controller: Arc<ToolController>,
    authenticate: Arc<dyn Authenticate>,
    audit: Option<Arc<dyn AuditView>>,
    upstream_of: Option<Arc<UpstreamOf>>,
    secure_cookies: bool,
    allowed_hosts: Option<Vec<String>>,
    session_time_to_live: Duration,
    /// Ways to sign in run by routes outside the page: (label, path).
    sign_in_links: Vec<(String, String)>,
    /// Whether a person may sign in by typing a credential.
    credential_sign_in: bool,
}

impl std::fmt::Debug for ApprovalPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalPage")
            .field("controller", &self.controller)
            .field("secure_cookies", &self.secure_cookies)
            .field("allowed_hosts", &self.allowed_hosts)
            .finish_non_exhaustive()
    }
}

impl ApprovalPage {
    /// A page answering `controller`'s waiting calls, for people `authenticate` names.
    pub fn new(controller: Arc<ToolController>, authenticate: impl Authenticate) -> Self {
        Self {
            controller,
            authenticate: Arc::new(authenticate),
            audit: None,
            upstream_of: None,
            secure_cookies: false,
            allowed_hosts: None,
            session_time_to_live: Duration::from_secs(8 * 60 * 60),
            sign_in_links: Vec::new(),
            credential_sign_in: true,
        }
    }

    /// The same page, offering a way to sign in that a route of yours runs — an OpenID Connect
    /// sign-in, say: the page links to `path` (a path on the page's own host, starting with `/`)
    /// under `label`; that route ends by opening a session with the [`PageSessions`] that
    /// [`router_and_sessions`](Self::router_and_sessions) returns.
    ///
    /// # Panics
    ///
    /// `path` does not start with a single `/` (a link to another host is not a sign-in of this
    /// page's).
    #[must_use]
    pub fn with_sign_in_link(mut self, label: impl Into<String>, path: impl Into<String>) -> Self {
        let path = path.into();
        assert!(
            path.starts_with('/') && !path.starts_with("//") && !path.contains('\\'),
            "a sign-in link is a path on the page's own host"
        );
        self.sign_in_links.push((label.into(), path));
        self
    }

    /// The same page, taking no typed credential: `login` answers 403 and the page offers only
    /// its sign-in links.
    #[must_use]
    pub fn without_credential_sign_in(mut self) -> Self {
        self.credential_sign_in = false;
        self
    }

    /// The same page, also showing recent audit events and whether their chain verifies.
    #[must_use]
    pub fn with_audit(mut self, audit: impl AuditView) -> Self {
        self.audit = Some(Arc::new(audit));
        self
    }

    /// The same page, naming for each waiting call the upstream (server) its tool comes from, as
    /// `upstream_of` names it (`None`: shown as no upstream) — a gateway serving several servers'
    /// tools under one name space says whose tool would run.
    #[must_use]
    pub fn with_upstream_of(
        mut self,
        upstream_of: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.upstream_of = Some(Arc::new(upstream_of));
        self
    }

    /// The same page, marking its session cookie `Secure`: set it when people reach the page over
    /// HTTPS (through a proxy terminating TLS, say); a browser keeps no `Secure` cookie sent over
    /// plain HTTP to another host than `localhost`.
    #[must_use]
    pub fn with_secure_cookies(mut self) -> Self {
        self.secure_cookies = true;
        self
    }

    /// The same page, answering only requests whose `Host` header is one of `hosts` (`host:port`
    /// exactly, or `host` with any port; `::1` for `[::1]:…`): a defence against DNS rebinding.
    /// Without it every host is served.
    #[must_use]
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The same page, with sessions lasting `time_to_live` from sign-in (8 hours unless set), or
    /// until the credential that opened them expires if that is sooner
    /// ([`Authenticate::authenticate_until`]).
    #[must_use]
    pub fn with_session_time_to_live(mut self, time_to_live: Duration) -> Self {
        self.session_time_to_live = time_to_live;
        self
    }

    /// The session cookie's name: `__Host-toolgate_approvals` with secure cookies (the browser
    /// then refuses it unless `Secure`, `Path=/` and host-only), else `toolgate_approvals`.
    fn cookie_name(&self) -> &'static str {
        if self.secure_cookies {
            session::HOST_COOKIE
        } else {
            session::COOKIE
        }
    }

    /// The `Set-Cookie` value holding session `id` for `max_age_s` seconds (0: cleared).
    fn cookie(&self, id: &str, max_age_s: u64) -> String {
        let name = self.cookie_name();
        if self.secure_cookies {
            format!("{name}={id}; HttpOnly; SameSite=Strict; Secure; Path=/; Max-Age={max_age_s}")
        } else {
            format!("{name}={id}; HttpOnly; SameSite=Strict; Path=/approvals; Max-Age={max_age_s}")
        }
    }

    /// The routes, all under `/approvals`: the page (`GET /approvals`), its script and style,
    /// and the JSON API under `/approvals/api/` (`session`, `sign-in`, `login`, `logout`,
    /// `pending`, `answer`, `answered`, `audit`).
    pub fn router(self) -> axum::Router {
        api::router(self).0
    }

    /// The routes, and a handle that opens sessions for people signed in elsewhere (the route a
    /// [sign-in link](Self::with_sign_in_link) leads to).
    pub fn router_and_sessions(self) -> (axum::Router, PageSessions) {
        api::router(self)
    }
}

/// Opens sessions of an [`ApprovalPage`] for people a route outside the page signed in; the same
/// sessions, cookies and lifetime as a typed credential's.
#[derive(Clone)]
pub struct PageSessions(Arc<api::Shared>);

impl std::fmt::Debug for PageSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageSessions").finish_non_exhaustive()
    }
}

impl PageSessions {
    /// A session for `principal`, lasting the page's lifetime cut at `ends` (when what signed the
    /// person in ends: a token's expiry): the `Set-Cookie` header value to send with the response
    /// that brings the person to the page. `None` when `ends` has passed or the operating system
    /// has no randomness.
    pub fn open(&self, principal: Principal, ends: Option<SystemTime>) -> Option<String> {
        api::open_session(&self.0, principal, ends)
            .ok()
            .map(|(_, cookie)| cookie)
    }
}
