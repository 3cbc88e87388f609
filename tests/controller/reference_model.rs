//! Model-based test of the whole lifecycle: random sequences of handle, approve, reject, revoke,
//! answers with unknown or used ids, policy and registry replacement, expiry and panicking handlers,
//! checked after every step against a small reference model. Invariants: a handler runs only for
//! an Allow or for an approval consumed once whose re-check passed; no approval runs twice; every
//! result carries its call's id; a waiting request is never lost.
//!
//! Cases: `TOOLGATE_MODEL_CASES` (default 10,000).

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolgate::approvals::ApprovalError;
use toolgate::approvals::ApprovalId;

use crate::common::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::approvals::ApprovalLimits;
use toolgate::*;

#[derive(Debug, Clone)]
enum Op {
    Handle(Kind),
    Approve(usize),
    Reject(usize),
    Revoke(usize),
    AnswerUnknown,
    AnswerUsed(usize),
    SetPolicy(u8),
    SetRegistry(u8),
    /// Hold a call on the controller whose requests expire at once.
    HandleExpiring,
    /// Answer one of those expired requests (then answer it again).
    AnswerExpired(usize),
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Allowed,
    Asked,
    Denied,
    Unknown,
    Invalid,
    Panicking,
}

fn op() -> impl Strategy<Value = Op> {
    let kind = prop_oneof![
        Just(Kind::Allowed),
        Just(Kind::Asked),
        Just(Kind::Asked),
        Just(Kind::Denied),
        Just(Kind::Unknown),
        Just(Kind::Invalid),
        Just(Kind::Panicking),
    ];
    prop_oneof![
        4 => kind.prop_map(Op::Handle),
        3 => any::<usize>().prop_map(Op::Approve),
        1 => any::<usize>().prop_map(Op::Reject),
        1 => any::<usize>().prop_map(Op::Revoke),
        1 => Just(Op::AnswerUnknown),
        1 => any::<usize>().prop_map(Op::AnswerUsed),
        1 => (0_u8..3).prop_map(Op::SetPolicy),
        1 => (0_u8..3).prop_map(Op::SetRegistry),
        1 => Just(Op::HandleExpiring),
        1 => any::<usize>().prop_map(Op::AnswerExpired),
    ]
}

/// The real system under test, and the handler run counters it increments.
struct System {
    controller: ToolController,
    // Same tools and policy, but every request expires as soon as it is made.
    expiring: ToolController,
    runs: [Arc<AtomicUsize>; 3], // allowed, asked, denied
}

fn tool(name: &str, schema: Value, runs: &Arc<AtomicUsize>) -> ToolDefinition {
    counted(name, schema, runs)
}

fn object() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
}

/// Registry variants: 0 all tools; 1 without `asked`; 2 `asked` with a changed definition.
fn registry_variant(variant: u8, runs: &[Arc<AtomicUsize>; 3]) -> ToolRegistry {
    let mut tools = vec![
        tool("allowed", object(), &runs[0]),
        tool("denied", object(), &runs[2]),
        panicking("boom"),
    ];
    match variant {
        0 => tools.push(tool("asked", object(), &runs[1])),
        1 => {}
        _ => tools.push(tool(
            "asked",
            json!({"type": "object", "properties": {"n": {"type": "integer"}, "note": {"type": "string"}}, "required": ["n"]}),
            &runs[1],
        )),
    }
    registry(tools)
}

/// Policy variants: 0 allow allowed+boom, ask asked; 1 deny everything; 2 allow asked too.
fn policy_variant(variant: u8) -> ToolPolicy {
    match variant {
        0 => policy(&["allowed", "boom"], &["asked"]),
        1 => policy(&[], &[]),
        _ => policy(&["allowed", "boom", "asked"], &[]),
    }
}

/// What the reference model knows.
#[derive(Debug, Default)]
struct Model {
    policy: u8,
    registry: u8,
    // (approval id, call id, registry variant when held)
    pending: Vec<(ApprovalId, String, u8)>,
    used: Vec<ApprovalId>,
    // Requests held on the expiring controller: (approval id, call id).
    expired: Vec<(ApprovalId, String)>,
    runs: [usize; 3],
    next_call: usize,
}

impl Model {
    fn asked_present(&self) -> bool {
        self.registry != 1
    }
}

fn run_case(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let runs: [Arc<AtomicUsize>; 3] = Default::default();
    let system = System {
        controller: ToolController::new(registry_variant(0, &runs), policy_variant(0)),
        expiring: ToolController::new(registry_variant(0, &runs), policy_variant(0))
            .with_approval_limits(
                ApprovalLimits::default().with_time_to_live(Some(std::time::Duration::ZERO)),
            ),
        runs: runs.clone(),
    };
    let mut model = Model::default();
    for op in ops {
        step(&system, &mut model, &runs, op)?;
        // Invariants after every step.
        let actual: Vec<usize> = system
            .runs
            .iter()
            .map(|r| r.load(Ordering::SeqCst))
            .collect();
        prop_assert_eq!(
            &actual[..],
            &model.runs[..],
            "handler runs diverged from the model"
        );
        let waiting: HashSet<ApprovalId> = system
            .controller
            .pending()
            .iter()
            .map(|r| r.approval_id)
            .collect();
        let expected: HashSet<ApprovalId> = model.pending.iter().map(|p| p.0).collect();
        prop_assert_eq!(waiting, expected, "a waiting request was lost or invented");
        prop_assert!(
            system.expiring.pending().is_empty(),
            "an expired request was listed"
        );
    }
    Ok(())
}

fn step(
    system: &System,
    model: &mut Model,
    runs: &[Arc<AtomicUsize>; 3],
    op: Op,
) -> Result<(), TestCaseError> {
    let controller = &system.controller;
    match op {
        Op::Handle(kind) => {
            model.next_call += 1;
            let call_id = format!("call-{}", model.next_call);
            let (tool, arguments) = match kind {
                Kind::Allowed => ("allowed", json!({"n": 1})),
                Kind::Asked => ("asked", json!({"n": 2})),
                Kind::Denied => ("denied", json!({"n": 3})),
                Kind::Unknown => ("missing", json!({"n": 4})),
                Kind::Invalid => ("allowed", json!({"n": "not a number"})),
                Kind::Panicking => ("boom", json!({})),
            };
            let call = ToolCall::new(call_id.clone(), tool, arguments);
            let outcome = catch_unwind(AssertUnwindSafe(|| controller.handle(call)));
            let allowed = |name: &str| match model.policy {
                0 => name == "allowed" || name == "boom",
                1 => false,
                _ => name != "denied",
            };
            match kind {
                Kind::Panicking => {
                    prop_assert_eq!(
                        outcome.is_err(),
                        allowed("boom"),
                        "a panic reaches the caller iff boom ran"
                    );
                }
                _ => {
                    let outcome = outcome.map_err(|_| TestCaseError::fail("unexpected panic"))?;
                    match (kind, outcome) {
                        (Kind::Asked, Outcome::PendingApproval(request)) => {
                            prop_assert!(model.policy == 0 && model.asked_present());
                            prop_assert_eq!(&request.call.call_id, &call_id);
                            model
                                .pending
                                .push((request.approval_id, call_id, model.registry));
                        }
                        (_, Outcome::PendingApproval(_)) => {
                            return Err(TestCaseError::fail("only asked asks"));
                        }
                        (kind, Outcome::Completed(result)) => {
                            prop_assert_eq!(&result.call_id, &call_id);
                            let ran = match kind {
                                Kind::Allowed => allowed("allowed"),
                                Kind::Asked => model.asked_present() && model.policy == 2,
                                _ => false,
                            };
                            prop_assert_eq!(!result.is_error, ran, "result {:?}", result);
                            if ran {
                                let index = if matches!(kind, Kind::Allowed) { 0 } else { 1 };
                                model.runs[index] += 1;
                            }
                        }
                    }
                }
            }
        }
        Op::Approve(index) | Op::Reject(index) | Op::Revoke(index) => {
            if model.pending.is_empty() {
                return Ok(());
            }
            let (id, call_id, held_under) = model.pending.remove(index % model.pending.len());
            model.used.push(id);
            let result = match op {
                Op::Approve(_) => controller.resolve(ApprovalResponse::approve(id)),
                Op::Reject(_) => controller.resolve(ApprovalResponse::reject(id)),
                _ => controller.revoke(id),
            }
            .map_err(|error| {
                TestCaseError::fail(format!("a pending request was not answerable: {error}"))
            })?;
            prop_assert_eq!(&result.call_id, &call_id);
            // Re-check: same definition as when held (variants 0 and 2 differ), not denied now.
            let ran = matches!(op, Op::Approve(_))
                && model.asked_present()
                && held_under == model.registry
                && model.policy != 1;
            prop_assert_eq!(!result.is_error, ran, "result {:?}", result);
            if ran {
                model.runs[1] += 1;
            }
        }
        Op::AnswerUnknown => {
            let id = ApprovalId::random().unwrap();
            let answered = controller.resolve(ApprovalResponse::approve(id));
            let refused = matches!(answered, Err(ApprovalError::NotPending { .. }));
            prop_assert!(refused, "an unknown id was answered");
        }
        Op::AnswerUsed(index) => {
            if model.used.is_empty() {
                return Ok(());
            }
            let id = model.used[index % model.used.len()];
            let answered = controller.resolve(ApprovalResponse::approve(id));
            let refused = matches!(answered, Err(ApprovalError::NotPending { .. }));
            prop_assert!(refused, "a used id was answered twice");
        }
        Op::SetPolicy(variant) => {
            controller
                .replace_policy(policy_variant(variant))
                .expect("name-only policies fit every registry");
            system
                .expiring
                .replace_policy(policy_variant(variant))
                .expect("name-only policies fit every registry");
            model.policy = variant;
        }
        Op::SetRegistry(variant) => {
            controller
                .replace_registry(registry_variant(variant, runs))
                .expect("name-only policies fit every registry");
            system
                .expiring
                .replace_registry(registry_variant(variant, runs))
                .expect("name-only policies fit every registry");
            model.registry = variant;
        }
        Op::HandleExpiring => {
            model.next_call += 1;
            let call_id = format!("call-{}", model.next_call);
            let outcome =
                system
                    .expiring
                    .handle(ToolCall::new(call_id.clone(), "asked", json!({"n": 5})));
            match outcome {
                Outcome::PendingApproval(request) => {
                    prop_assert!(model.policy == 0 && model.asked_present());
                    model.expired.push((request.approval_id, call_id));
                }
                Outcome::Completed(result) => {
                    prop_assert_eq!(&result.call_id, &call_id);
                    let ran = model.asked_present() && model.policy == 2;
                    prop_assert_eq!(!result.is_error, ran, "result {:?}", result);
                    if ran {
                        model.runs[1] += 1;
                    }
                }
            }
        }
        Op::AnswerExpired(index) => {
            if model.expired.is_empty() {
                return Ok(());
            }
            let (id, call_id) = model.expired.remove(index % model.expired.len());
            let result = system
                .expiring
                .resolve(ApprovalResponse::approve(id))
                .map_err(|error| {
                    TestCaseError::fail(format!("an expired request was lost: {error}"))
                })?;
            prop_assert_eq!(&result.call_id, &call_id);
            prop_assert!(
                result.is_error && result.content.contains("expired"),
                "{:?}",
                result
            );
            let again = system.expiring.resolve(ApprovalResponse::approve(id));
            let refused = matches!(again, Err(ApprovalError::NotPending { .. }));
            prop_assert!(refused, "an expired request was answered twice");
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("TOOLGATE_MODEL_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(10_000)
}

/// The model's cases run in `SHARDS` tests, each a quarter of them from its own random seed, so
/// the test harness runs them on every core at once (one run of 10,000 took 50 s of CI).
const SHARDS: u32 = 4;

/// The threads running the model: `boom` panics on purpose there, and those panics are not shown.
static MODEL_THREADS: std::sync::Mutex<Vec<std::thread::ThreadId>> =
    std::sync::Mutex::new(Vec::new());

fn run_shard() {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        // Only the model's threads are silenced: the other tests of this binary run on other
        // threads at the same time, and theirs are shown.
        let shown = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = MODEL_THREADS
                .lock()
                .is_ok_and(|threads| threads.contains(&std::thread::current().id()));
            if !quiet {
                shown(info);
            }
        }));
    });
    let me = std::thread::current().id();
    MODEL_THREADS.lock().unwrap().push(me);
    let config = ProptestConfig {
        cases: cases().div_ceil(SHARDS),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&proptest::collection::vec(op(), 1..40), run_case);
    MODEL_THREADS.lock().unwrap().retain(|thread| *thread != me);
    if let Err(error) = result {
        panic!("{error}");
    }
    println!(
        "model-based lifecycle: {} cases passed",
        cases().div_ceil(SHARDS)
    );
}

#[test]
fn the_lifecycle_matches_the_reference_model_1() {
    run_shard();
}

#[test]
fn the_lifecycle_matches_the_reference_model_2() {
    run_shard();
}

#[test]
fn the_lifecycle_matches_the_reference_model_3() {
    run_shard();
}

#[test]
fn the_lifecycle_matches_the_reference_model_4() {
    run_shard();
}
