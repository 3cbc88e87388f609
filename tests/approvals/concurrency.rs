//! Many threads answering, rejecting and revoking the same and different approvals: every request
//! is settled exactly once and runs at most once. The figures are printed (run with
//! `--nocapture`) and asserted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use toolgate::approvals::ApprovalError;

use crate::common::*;
use serde_json::json;
use toolgate::approvals::ApprovalLimits;
use toolgate::*;

const THREADS: usize = 8;
const REQUESTS: usize = 200;

fn storm(controller: Arc<ToolController>, runs: &Arc<AtomicUsize>, label: &str, expiring: bool) {
    let requests: Vec<ApprovalRequest> = (0..REQUESTS)
        .map(|i| {
            match controller.handle(ToolCall::new(
                format!("c{i}"),
                "apply_patch",
                json!({"patch": "+"}),
            )) {
                Outcome::PendingApproval(request) => request,
                other => panic!("{other:?}"),
            }
        })
        .collect();
    let requests = Arc::new(requests);
    let barrier = Arc::new(Barrier::new(THREADS));
    let refused_count = AtomicUsize::new(0);
    let refused = &refused_count; // shared by reference with the scoped threads
    let settled_by_thread: Vec<Vec<(usize, &'static str)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (controller, requests, barrier) = (
                    Arc::clone(&controller),
                    Arc::clone(&requests),
                    Arc::clone(&barrier),
                );
                scope.spawn(move || {
                    barrier.wait();
                    let mut settled = Vec::new();
                    // Every thread goes over every request, each with its own mix of answers, in
                    // its own order: the same ids contended, and different ones interleaved.
                    for step in 0..REQUESTS {
                        let index = (step * 7 + thread * 13) % REQUESTS;
                        let id = requests[index].approval_id;
                        let (kind, answer) = match (thread + step) % 4 {
                            0 => ("reject", controller.resolve(ApprovalResponse::reject(id))),
                            1 => ("revoke", controller.revoke(id)),
                            _ => ("approve", controller.resolve(ApprovalResponse::approve(id))),
                        };
                        match answer {
                            Ok(result) => {
                                assert_eq!(result.call_id, format!("c{index}"));
                                settled.push((index, kind));
                            }
                            Err(ApprovalError::NotPending { .. }) => {
                                refused.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(other) => panic!("{other}"),
                        }
                    }
                    settled
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("no panic"))
            .collect()
    });
    let mut per_request = vec![0_usize; REQUESTS];
    let mut approved = 0;
    for (index, kind) in settled_by_thread.iter().flatten() {
        per_request[*index] += 1;
        approved += usize::from(*kind == "approve");
    }
    assert!(
        per_request.iter().all(|count| *count == 1),
        "{label}: {per_request:?}"
    );
    // Expired requests are settled by the first answer too, and never run.
    let expected_runs = if expiring { 0 } else { approved };
    assert_eq!(
        runs.load(Ordering::SeqCst),
        expected_runs,
        "{label}: runs == approvals that won"
    );
    assert!(controller.pending().is_empty());
    let refused = refused_count.load(Ordering::SeqCst);
    assert_eq!(
        refused,
        THREADS * REQUESTS - REQUESTS,
        "{label}: every other answer refused"
    );
    println!(
        "{label}: {THREADS} threads × {REQUESTS} answers each over {REQUESTS} requests → {REQUESTS} settled exactly once, {expected_runs} ran once each, {refused} answers refused as already settled"
    );
}

#[test]
fn memory_store_settles_each_request_exactly_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    );
    storm(Arc::new(controller), &runs, "memory", false);
}

#[test]
fn expired_requests_are_settled_exactly_once_and_never_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    )
    .with_approval_limits(
        ApprovalLimits::default().with_time_to_live(Some(std::time::Duration::ZERO)),
    );
    storm(Arc::new(controller), &runs, "memory, all expired", true);
}

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_store_settles_each_request_exactly_once() {
    let dir = std::env::temp_dir().join(format!("toolgate-storm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    )
    .with_approval_store(
        toolgate::approvals::SqliteApprovalStore::open(dir.join("approvals.db")).unwrap(),
    );
    storm(Arc::new(controller), &runs, "sqlite", false);
    let _ = std::fs::remove_dir_all(&dir);
}
