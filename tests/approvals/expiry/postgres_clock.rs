//! PostgreSQL judges expiry by the server's clock, which the injected clock does not move.

use super::*;
use crate::postgres_support;

/// PostgreSQL judges expiry by the server's clock: the injected clock only sets the time to live
/// (`expires - now`), so moving it neither expires nor keeps alive a request there.
#[cfg(feature = "postgres")]
#[test]
fn postgres_store_expiry_ignores_the_injected_clock() {
    let Some(url) = postgres_support::server_url() else {
        return;
    };
    let db = postgres_support::Db::new(&url, "injected_clock");
    let runtime = runtime();
    let clock = ManualClock::new(0);
    let node = |ttl_ms| {
        let limits =
            ApprovalLimits::default().with_time_to_live(Some(Duration::from_millis(ttl_ms)));
        PendingApprovals::with_store(db.store("node"), limits).with_clock(clock.clone())
    };
    let (pending, short) = (node(10_000), node(300));
    let kept = pending
        .request(prepared(&runtime, "kept"), reason())
        .unwrap();
    clock.set(u64::MAX);
    assert_eq!(
        ids(&pending),
        ["kept"],
        "a clock jumping ahead expires nothing"
    );
    assert!(matches!(
        pending.answer(ApprovalResponse::approve(kept.approval_id)),
        Ok(Answered::Approved(_))
    ));

    clock.set(0);
    let lapsed = short
        .request(prepared(&runtime, "lapsed"), reason())
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert!(short.list().is_empty(), "the server's clock moved on");
    assert!(matches!(
        short.answer(ApprovalResponse::approve(lapsed.approval_id)),
        Ok(Answered::Expired(_))
    ));
}
