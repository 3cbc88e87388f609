//! The `[limits]` table: how much an upstream may send, and how long it may take.

use std::time::Duration;

use super::super::{Limits, LimitsSection};

/// `[limits]`, and the policy poll interval (`gateway.policy_poll_ms`), a duration checked with
/// them: its problem keeps its place among theirs, under its own key.
pub(super) fn limits(
    section: LimitsSection,
    policy_poll_ms: Option<u64>,
    problem: &mut dyn FnMut(&str, String),
) -> (Limits, Duration) {
    let defaults = Limits::default();
    let startup_timeout = positive(
        "limits.startup_timeout_ms",
        section.startup_timeout_ms,
        defaults.startup_timeout,
        problem,
    );
    let call_timeout = positive(
        "limits.call_timeout_ms",
        section.call_timeout_ms,
        defaults.call_timeout,
        problem,
    );
    let list_timeout = positive(
        "limits.list_timeout_ms",
        section.list_timeout_ms,
        defaults.list_timeout,
        problem,
    );
    let policy_poll = positive(
        "gateway.policy_poll_ms",
        policy_poll_ms,
        Duration::from_secs(1),
        problem,
    );
    let max_message_bytes = section
        .max_message_bytes
        .unwrap_or(defaults.max_message_bytes);
    if max_message_bytes < 1024 {
        problem(
            "limits.max_message_bytes",
            "must be at least 1024".to_owned(),
        );
    }
    let max_list_pages = section.max_list_pages.unwrap_or(defaults.max_list_pages);
    if max_list_pages == 0 {
        problem("limits.max_list_pages", "must be above 0".to_owned());
    }
    let limits = Limits {
        max_message_bytes,
        startup_timeout,
        call_timeout,
        max_list_pages,
        list_timeout,
    };
    (limits, policy_poll)
}

/// The duration the key names in milliseconds, `default` when unset or 0 (refused).
fn positive(
    key: &str,
    value: Option<u64>,
    default: Duration,
    problem: &mut dyn FnMut(&str, String),
) -> Duration {
    match value {
        Some(0) => {
            problem(key, "must be above 0".to_owned());
            default
        }
        Some(ms) => Duration::from_millis(ms),
        None => default,
    }
}
