//! Opening a session: its lifetime, the page's cut at the end of what signed the person in, and
//! its cookie — for a typed credential (`login`) and for a route outside the page alike
//! ([`PageSessions`](super::super::PageSessions)).

use std::time::{Duration, SystemTime};

use axum::http::StatusCode;

use super::signed_in::sign_in_failed;
use super::{Refusal, Shared};
use crate::approval_page::session::Session;

/// Opens a session for `principal` lasting the page's lifetime, cut at `ends`: the session and
/// its `Set-Cookie` value.
pub(in crate::approval_page) fn open_session(
    shared: &Shared,
    principal: crate::contract::Principal,
    ends: Option<SystemTime>,
) -> Result<(Session, String), Refusal> {
    let Some(time_to_live) = session_lifetime(shared.page.session_time_to_live, ends) else {
        sign_in_failed(shared);
        return Err(Refusal(
            StatusCode::UNAUTHORIZED,
            "this credential has expired: sign in with a fresh one".to_owned(),
            Vec::new(),
        ));
    };
    let Some((id, session)) = shared.sessions.open(principal, time_to_live) else {
        return Err(Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "the operating system's random generator is unavailable".to_owned(),
            Vec::new(),
        ));
    };
    // Max-Age is whole seconds, rounded up: the server's own expiry is the exact one.
    let cookie = shared.page.cookie(
        &id,
        time_to_live.as_secs() + u64::from(time_to_live.subsec_nanos() > 0),
    );
    Ok((session, cookie))
}

/// How long a session opened now may last: the page's lifetime, cut at the instant the
/// credential ends; `None` if that instant has passed (a token accepted within its leeway).
fn session_lifetime(page: Duration, credential_ends: Option<SystemTime>) -> Option<Duration> {
    let Some(ends) = credential_ends else {
        return Some(page);
    };
    let left = ends.duration_since(SystemTime::now()).ok()?;
    (!left.is_zero()).then(|| page.min(left))
}
