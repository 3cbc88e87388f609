//! Whose calls stopped waiting on an upstream session lately: what the upstream sends that names
//! no call (a log line, a sampling or elicitation request) goes to the one call waiting only when
//! every call that ended within [`LATELY`] was that call's principal's (see
//! [`ProgressRoutes::alone_with`](super::progress::ProgressRoutes::alone_with)).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use toolgate::mcp::Downstream;

/// How long after another principal's call stopped waiting what names no call goes to nobody:
/// an upstream's trailing log line ("finished the request") comes within it. Past it, a message
/// goes to the one call waiting, as before: an upstream that speaks of a call it answered longer
/// ago cannot be told apart from one speaking of the call that waits.
pub const LATELY: Duration = Duration::from_secs(10);

/// How many callers the window holds before the oldest goes (and nobody is alone until its
/// window ends).
const MOST_KEPT: usize = 256;

/// Whose calls stopped waiting on this session lately (within [`LATELY`]): what names no call goes
/// to the one call waiting only if no other principal's call waited lately — an upstream logging
/// "finished alice's request" after answering it found bob's call the only one waiting, and bob
/// got alice's line (an independent attack). A request its caller gave up on counts again, as
/// nobody's, when the upstream answers it at last; and past [`MOST_KEPT`] callers within the
/// window, the oldest goes and nobody is alone until its window ends (a second attack flushed
/// alice's entry with 300 calls of bob's, and a given-up call's late line reached bob).
#[derive(Clone, Debug, Default)]
pub(super) struct RecentCallers(Arc<Mutex<Recent>>);

#[derive(Debug, Default)]
struct Recent {
    callers: std::collections::VecDeque<(Caller, Instant)>,
    /// Until when a caller let go of within its window leaves everyone not alone.
    nobody_alone_until: Option<Instant>,
}

impl RecentCallers {
    /// `caller`'s call stopped waiting, or was answered after its caller left.
    pub(super) fn push(&self, caller: Caller) {
        let mut recent = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        recent.callers.retain(|(_, when)| when.elapsed() <= LATELY);
        if recent.callers.len() >= MOST_KEPT
            && let Some((_, when)) = recent.callers.pop_front()
        {
            let until = when + LATELY;
            recent.nobody_alone_until = Some(
                recent
                    .nobody_alone_until
                    .map_or(until, |was| was.max(until)),
            );
        }
        recent.callers.push_back((caller, Instant::now()));
    }

    /// Whether every caller within the window is `caller`.
    pub(super) fn alone(&self, caller: &Caller) -> bool {
        let mut recent = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if recent
            .nobody_alone_until
            .is_some_and(|until| Instant::now() < until)
        {
            return false;
        }
        recent.callers.retain(|(_, when)| when.elapsed() <= LATELY);
        // Nobody's (`Unknown`) matches nobody, itself included.
        recent
            .callers
            .iter()
            .all(|(other, _)| matches!(other, Caller::Known(_)) && other == caller)
    }
}

/// Who a call was for: `Known(None)` a client without a principal, `Unknown` a call no client
/// request waits for (one a person approved on the page, say), which matches nobody.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Caller {
    Known(Option<String>),
    Unknown,
}

impl Caller {
    pub(super) fn of(client: Option<&Downstream>) -> Self {
        match client {
            Some(client) => Self::Known(client.principal().map(|principal| principal.id.clone())),
            None => Self::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Caller, MOST_KEPT, RecentCallers};

    fn known(id: &str) -> Caller {
        Caller::Known(Some(id.to_owned()))
    }

    #[test]
    fn a_caller_is_alone_only_when_every_recent_call_was_its_own() {
        let recent = RecentCallers::default();
        assert!(recent.alone(&known("bob")), "nobody's call ended lately");
        recent.push(known("bob"));
        assert!(recent.alone(&known("bob")));
        recent.push(known("alice"));
        assert!(!recent.alone(&known("bob")));
        assert!(!recent.alone(&known("alice")));
        // A call given up and answered later is nobody's, and nobody is alone beside it.
        let late = RecentCallers::default();
        late.push(Caller::Unknown);
        assert!(!late.alone(&Caller::Unknown));
        assert!(!late.alone(&known("bob")));
    }

    #[test]
    fn flushing_the_window_with_ones_own_calls_leaves_nobody_alone() {
        // Alice's call ended; bob's calls push it out of the window's room: bob is not alone
        // until alice's entry would have passed (an independent attack: 300 calls sufficed).
        let recent = RecentCallers::default();
        recent.push(known("alice"));
        for _ in 0..MOST_KEPT + 44 {
            recent.push(known("bob"));
        }
        assert!(!recent.alone(&known("bob")));
        // Fewer than the room: alice's entry stays, and bob is not alone for it either.
        let room = RecentCallers::default();
        room.push(known("alice"));
        for _ in 0..MOST_KEPT - 1 {
            room.push(known("bob"));
        }
        assert!(!room.alone(&known("bob")));
    }
}
