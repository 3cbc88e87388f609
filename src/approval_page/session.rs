//! Signed-in people: random session ids (the cookie) and their CSRF tokens, kept in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::contract::Principal;

/// The cookie's name.
pub(super) const COOKIE: &str = "toolgate_approvals";

/// Sessions kept at most; past it the oldest is dropped (its person signs in again).
const MAX_SESSIONS: usize = 1_024;

/// One signed-in person.
#[derive(Debug, Clone)]
pub(super) struct Session {
    pub(super) principal: Arc<Principal>,
    /// Sent back in a header with every state change; never in a cookie or a URL.
    pub(super) csrf: String,
    expires: Instant,
}

/// The sessions by id. The lock is held only to read or change the map, never across an await.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
}

/// 32 bytes from the OS, as 64 hex digits.
fn token() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(crate::canonical::hex_lower(&bytes))
}

impl Sessions {
    /// A new session for `principal`: its id and the session. `None` if the OS has no randomness.
    pub(super) fn open(
        &self,
        principal: Principal,
        time_to_live: Duration,
    ) -> Option<(String, Session)> {
        let id = token()?;
        let session = Session {
            principal: Arc::new(principal),
            csrf: token()?,
            expires: Instant::now() + time_to_live,
        };
        let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        by_id.retain(|_, session| session.expires > now);
        if by_id.len() >= MAX_SESSIONS
            && let Some(oldest) = by_id
                .iter()
                .min_by_key(|(_, session)| session.expires)
                .map(|(id, _)| id.clone())
        {
            by_id.remove(&oldest);
        }
        by_id.insert(id.clone(), session.clone());
        Some((id, session))
    }

    /// The live session with this id.
    pub(super) fn get(&self, id: &str) -> Option<Session> {
        let by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        by_id
            .get(id)
            .filter(|session| session.expires > Instant::now())
            .cloned()
    }

    /// Ends the session with this id.
    pub(super) fn close(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// The cookie's name over HTTPS: the `__Host-` prefix makes the browser refuse it unless it is
/// `Secure`, has `Path=/` and no `Domain`, so no other host (a sibling subdomain) can set it.
pub(super) const HOST_COOKIE: &str = "__Host-toolgate_approvals";

/// The values of every cookie named `name` in `Cookie` headers, in order.
pub(super) fn cookie_values<'a>(
    headers: impl IntoIterator<Item = &'a str>,
    name: &'a str,
) -> impl Iterator<Item = &'a str> {
    headers.into_iter().flat_map(move |header| {
        header.split(';').filter_map(move |pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key.trim() == name).then_some(value.trim())
        })
    })
}

/// The session id in a `Cookie` header, if it holds this page's cookie (`name`) exactly once.
#[cfg(test)]
pub(super) fn cookie_value(header: &str) -> Option<&str> {
    let mut values = cookie_values([header], COOKIE);
    let first = values.next()?;
    values.next().is_none().then_some(first)
}

/// Whether two tokens are equal, in time independent of where they differ.
pub(super) fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |differ, (x, y)| differ | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_opens_with_fresh_tokens_and_expires() {
        let sessions = Sessions::default();
        let alice = Principal::new("alice", ["security"]);
        let (id, session) = sessions
            .open(alice.clone(), Duration::from_secs(60))
            .unwrap();
        let (other, _) = sessions
            .open(alice.clone(), Duration::from_secs(60))
            .unwrap();
        assert_eq!((id.len(), session.csrf.len()), (64, 64));
        assert_ne!(id, other);
        assert_ne!(id, session.csrf);
        assert_eq!(sessions.get(&id).unwrap().principal.id, "alice");
        sessions.close(&id);
        assert!(sessions.get(&id).is_none());
        let (gone, _) = sessions.open(alice, Duration::ZERO).unwrap();
        assert!(sessions.get(&gone).is_none(), "expired at once");
    }

    #[test]
    fn the_cookie_is_found_among_others_and_tokens_compare_exactly() {
        assert_eq!(
            cookie_value("a=1; toolgate_approvals=abc; b=2"),
            Some("abc")
        );
        assert_eq!(cookie_value("xtoolgate_approvals=abc"), None);
        // Tossed: a second cookie of the name (another path, another port of the host).
        assert_eq!(
            cookie_value("toolgate_approvals=abc; toolgate_approvals=eve"),
            None
        );
        assert_eq!(
            cookie_values(["toolgate_approvals=a", " toolgate_approvals = b "], COOKIE)
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(same_token("abcd", "abcd"));
        assert!(!same_token("abcd", "abce"));
        assert!(!same_token("abcd", "abc"));
    }

    #[test]
    fn past_the_cap_the_oldest_session_goes() {
        let sessions = Sessions::default();
        let first = sessions
            .open(
                Principal::new("p0", Vec::<String>::new()),
                Duration::from_secs(10),
            )
            .unwrap()
            .0;
        for index in 1..=MAX_SESSIONS {
            let principal = Principal::new(format!("p{index}"), Vec::<String>::new());
            sessions.open(principal, Duration::from_secs(60)).unwrap();
        }
        assert!(sessions.get(&first).is_none());
        assert_eq!(sessions.by_id.lock().unwrap().len(), MAX_SESSIONS);
    }
}
