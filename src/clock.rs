//! Time as toolgate reads it: approval expiry and rate-limit windows ask a [`Clock`], so tests (and
//! simulations) can move time by hand with a [`ManualClock`] instead of sleeping.
//!
//! Times are milliseconds since the Unix epoch: expiry and windows survive restarts and are
//! compared across processes sharing a store, so they are wall-clock time, not a monotonic count.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + Debug {
    /// The current time, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
}

/// The system's wall clock. A clock set before 1970 reads as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, duration_ms)
    }
}

/// A clock that moves only when told to. Clones share one time, so a test keeps a clone and
/// advances the time the gate reads.
///
/// ```
/// use std::time::Duration;
/// use toolgate::clock::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_000);
/// let seen_by_the_gate = clock.clone();
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(seen_by_the_gate.now_ms(), 61_000);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now_ms: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Self {
            now_ms: Arc::new(AtomicU64::new(now_ms)),
        }
    }

    /// Moves the time forward by `by` (saturating at `u64::MAX` milliseconds).
    pub fn advance(&self, by: Duration) {
        let by = duration_ms(by);
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .now_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by))
            });
    }

    /// Sets the time, forward or back (a clock stepped back by NTP is a case worth testing).
    pub fn set(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_clones_share_one_time_and_saturate() {
        let clock = ManualClock::new(5);
        let other = clock.clone();
        clock.advance(Duration::from_millis(7));
        assert_eq!(other.now_ms(), 12);
        other.set(3);
        assert_eq!(clock.now_ms(), 3);
        clock.advance(Duration::MAX);
        assert_eq!(clock.now_ms(), u64::MAX);
    }

    #[test]
    fn system_clock_reads_after_2020() {
        // 2020-01-01 in ms: a clock returning a constant 0 or 1 fails here.
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
        let shared: Arc<dyn Clock> = Arc::new(ManualClock::new(42));
        assert_eq!(shared.now_ms(), 42);
    }
}
