//! The same checks against the SQLite ledger, and a controller that keeps its clock when given a
//! ledger after it.

use super::*;
use toolgate::approvals::SqliteApprovalStore;

/// A fresh ledger file, removed when the test ends.
struct Ledger(std::path::PathBuf);

impl Ledger {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("toolgate-expiry-{name}-{}.db", std::process::id()));
        let ledger = Self(path);
        ledger.remove();
        ledger
    }

    fn store(&self) -> SqliteApprovalStore {
        SqliteApprovalStore::open(&self.0).unwrap()
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        self.remove();
    }
}

#[test]
fn sqlite_store_boundary_is_ttl_minus_one_answerable_ttl_expired() {
    let ledger = Ledger::new("boundary");
    boundary_is_ttl_minus_one_answerable_ttl_expired(ledger.store());
}

#[test]
fn sqlite_store_listing_excludes_each_request_from_its_own_expiry() {
    let ledger = Ledger::new("listing");
    listing_excludes_each_request_from_its_own_expiry(ledger.store());
}

#[test]
fn sqlite_store_a_clock_stepped_back_revives_no_taken_request() {
    let ledger = Ledger::new("stepped");
    a_clock_stepped_back_revives_no_taken_request(ledger.store());
}

#[test]
fn sqlite_store_expired_requests_do_not_count_against_the_cap() {
    let ledger = Ledger::new("cap");
    expired_requests_do_not_count_against_the_cap(ledger.store());
}

#[test]
fn sqlite_store_without_a_time_to_live_nothing_expires() {
    let ledger = Ledger::new("forever");
    without_a_time_to_live_nothing_expires(ledger.store());
}

#[test]
fn sqlite_store_a_real_time_to_live_expires_after_it_passes() {
    let ledger = Ledger::new("real");
    a_real_time_to_live_expires_after_it_passes(ledger.store());
}

#[test]
fn sqlite_store_a_real_time_to_live_leaves_the_request_answerable_before_it() {
    let ledger = Ledger::new("before");
    a_real_time_to_live_leaves_the_request_answerable_before_it(ledger.store());
}

#[test]
fn controller_keeps_its_clock_when_given_a_store_after_it() {
    let ledger = Ledger::new("controller");
    let clock = ManualClock::new(T0);
    let controller = ToolController::new(
        ToolRegistry::new([crate::common::calculator()]).unwrap(),
        ToolPolicy::new(Vec::<String>::new(), ["calculator"]).unwrap(),
    )
    .with_approval_limits(ttl())
    .with_clock(clock.clone())
    .with_approval_store(ledger.store());
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c1", "calculator", json!({"a": 1, "b": 2})))
    else {
        panic!("calculator needs confirmation");
    };
    clock.advance(Duration::from_millis(TTL_MS));
    assert!(controller.pending().is_empty());
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert!(result.is_error);
    assert_eq!(
        controller.approval_state(request.approval_id).unwrap(),
        Some(ApprovalState::Expired)
    );
}
