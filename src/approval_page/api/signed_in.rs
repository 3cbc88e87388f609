//! Who a request is: the session its cookie names (refused when the cookie came twice), its CSRF
//! token, and the pause after failed sign-ins.

use std::sync::PoisonError;

use axum::http::{HeaderMap, StatusCode, header};

use super::{CSRF_HEADER, Refusal, Shared};
use crate::approval_page::session::{COOKIE, HOST_COOKIE, Session, cookie_values, same_token};

/// Failed sign-ins allowed within `SIGN_IN_WINDOW`; past it every sign-in is refused with 429
/// until the oldest failure leaves the window, without asking the authenticator.
pub(super) const MAX_FAILED_SIGN_INS: usize = 10;
const SIGN_IN_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

/// The session the request's cookie names, with its id. A request carrying the cookie twice (a
/// page on another port of this host set one with a longer path, which the browser sends first)
/// is refused, and every session it names is ended: which one is the person's cannot be told.
pub(super) fn session_of(
    shared: &Shared,
    headers: &HeaderMap,
) -> Result<(String, Session), Refusal> {
    let name = shared.page.cookie_name();
    let headers = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok());
    let ids: Vec<&str> = cookie_values(headers, name).collect();
    match ids.as_slice() {
        [] => Err(not_signed_in()),
        [id] => {
            let session = shared.sessions.get(id).ok_or_else(not_signed_in)?;
            Ok(((*id).to_owned(), session))
        }
        tossed => {
            for id in tossed {
                shared.sessions.close(id);
            }
            let cleared = match name {
                HOST_COOKIE => vec![shared.page.cookie("", 0)],
                _ => COOKIE_PATHS
                    .iter()
                    .map(|path| {
                        format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path={path}; Max-Age=0")
                    })
                    .collect(),
            };
            Err(Refusal(
                StatusCode::UNAUTHORIZED,
                TOSSED.to_owned(),
                cleared,
            ))
        }
    }
}

/// What a person is told when the page's cookie came twice.
const TOSSED: &str = "signed out: this browser sent two session cookies for the page (another site on this host may have set one); both sessions are ended and their cookies cleared: sign in again";

/// The paths a cookie can be sent to this page's routes under: every prefix of a route that ends
/// a path segment. Expiring the cookie under each clears a tossed one whatever path it was given.
const COOKIE_PATHS: &[&str] = &[
    "/",
    "/approvals",
    "/approvals/",
    "/approvals/api",
    "/approvals/api/",
    "/approvals/api/session",
    "/approvals/api/login",
    "/approvals/api/logout",
    "/approvals/api/pending",
    "/approvals/api/answer",
    "/approvals/api/answered",
    "/approvals/api/audit",
];

pub(super) fn not_signed_in() -> Refusal {
    Refusal(
        StatusCode::UNAUTHORIZED,
        "sign in first".to_owned(),
        Vec::new(),
    )
}

/// The session, if the request carries its cookie and its CSRF token. Every route but `session`
/// and `login` asks for both, reads too: a page whose cookie was replaced under it (by another
/// site on this host) holds the old token, and is told instead of shown another person's view.
pub(super) fn checked(shared: &Shared, headers: &HeaderMap) -> Result<(String, Session), Refusal> {
    let (id, session) = session_of(shared, headers)?;
    let token = headers
        .get(CSRF_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    if !same_token(token, &session.csrf) {
        return Err(Refusal(
            StatusCode::FORBIDDEN,
            "refused: the request lacks this session's CSRF token; reload the page".to_owned(),
            Vec::new(),
        ));
    }
    Ok((id, session))
}

/// How long until a sign-in may be tried again, if too many failed lately.
pub(super) fn signing_in_paused(shared: &Shared) -> Option<std::time::Duration> {
    let now = std::time::Instant::now();
    let mut failed = shared
        .failed_sign_ins
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    while failed
        .front()
        .is_some_and(|at| now.duration_since(*at) >= SIGN_IN_WINDOW)
    {
        failed.pop_front();
    }
    (failed.len() >= MAX_FAILED_SIGN_INS).then(|| {
        failed.front().map_or(SIGN_IN_WINDOW, |oldest| {
            SIGN_IN_WINDOW - now.duration_since(*oldest)
        })
    })
}

pub(super) fn sign_in_failed(shared: &Shared) {
    let mut failed = shared
        .failed_sign_ins
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if failed.len() >= MAX_FAILED_SIGN_INS {
        failed.pop_front();
    }
    failed.push_back(std::time::Instant::now());
}
