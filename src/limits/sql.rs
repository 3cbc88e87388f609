//! What the SQL stores (SQLite, PostgreSQL) share: how a take's times are written as SQL
//! integers, when a record counts and when it is deleted, and when a take's counters are written
//! together.

use super::{LONGEST_WINDOW_MS, Take};

/// Up to how many counters a take records with statements of their own; more, each once, are
/// written together over arrays (a result's values: a hundred counters and more). A decision's
/// few looks cost less one by one than planning statements over arrays.
pub(super) const FEW: usize = 4;

/// SQL integers are signed; times and weights past `i64::MAX` (292 million years in ms) are
/// clamped.
pub(super) fn as_sql(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// After when a record counts for `take` at `now_ms`: counted by the window in force now (a
/// replaced policy may have changed it; a time's own expiry only decides when it is deleted);
/// `None` for a session's, which counts every record.
pub(super) fn since_ms(take: &Take<'_>, now_ms: u64) -> Option<i64> {
    take.window_ms
        .map(|window| as_sql(now_ms.saturating_sub(window)))
}

/// How long past its expiry a record is kept: a clock stepped forward by up to this much, then
/// back, deletes nothing a window still counts (times later than now count, see
/// [`super::RateCounters`]). An independent attack stepped a clock two days ahead for one call:
/// every session's and node's times were deleted, and the caps began again when it was set back
/// (the memory counters, which drop only the times of the counters a take names, kept them).
pub(super) const KEPT_PAST_EXPIRY_MS: u64 = LONGEST_WINDOW_MS;

/// Up to when a take at `now_ms` deletes passed records: those expired [`KEPT_PAST_EXPIRY_MS`]
/// before it.
pub(super) fn swept_until(now_ms: u64) -> i64 {
    as_sql(now_ms.saturating_sub(KEPT_PAST_EXPIRY_MS))
}

/// When a record of `take` made at `now_ms` is deleted: kept for the longest window, whatever
/// this one (see [`LONGEST_WINDOW_MS`]); never, for a session's.
pub(super) fn expires_ms(take: &Take<'_>, now_ms: u64) -> Option<i64> {
    take.window_ms
        .map(|_| as_sql(now_ms.saturating_add(LONGEST_WINDOW_MS)))
}

/// Whether the takes of `buckets` (the ones that record) can be written together: more than
/// [`FEW`], and each counter once — a counter twice in one take list is written in order, the
/// second seeing the first.
pub(super) fn written_together<'a>(buckets: impl Iterator<Item = &'a str>) -> bool {
    let mut names: Vec<&str> = buckets.collect();
    if names.len() <= FEW {
        return false;
    }
    names.sort_unstable();
    names.windows(2).all(|pair| pair[0] != pair[1])
}
