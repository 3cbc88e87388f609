//! What the gate costs, each figure paired in the same run with its floor: the work a call must do
//! anyway (the compiled schema validating the arguments, the handler, building the result).
//!
//! `scripts/bench-report` runs these and prints the table of ratios; see the README's Performance section.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::approvals::{Answered, PendingApprovals};
use toolgate::providers::openai;
use toolgate::{
    ApprovalResponse, Outcome, Policy, Reason, ToolCall, ToolController, ToolDefinition, ToolError,
    ToolPolicy, ToolRegistry, ToolResult, ToolRuntime, ToolSpec,
};

fn calculator_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": false
    })
}

fn add(args: &Value) -> Result<String, ToolError> {
    let (a, b) = (
        args["a"].as_i64().unwrap_or(0),
        args["b"].as_i64().unwrap_or(0),
    );
    Ok((a + b).to_string())
}

fn calculator(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        ToolSpec::new(name, "Add a and b.", calculator_schema()),
        add,
    )
    .expect("schema compiles")
}

fn controller(extra_tools: usize, allowed: &[&str], asked: &[&str]) -> ToolController {
    let tools = std::iter::once(calculator("calculator"))
        .chain((0..extra_tools).map(|i| calculator(&format!("tool_{i:05}"))));
    let registry = ToolRegistry::new(tools).expect("distinct names");
    let policy = ToolPolicy::new(allowed.iter().copied(), asked.iter().copied()).expect("disjoint");
    ToolController::new(registry, policy)
}

fn call(tool: &str, arguments: Value) -> ToolCall {
    ToolCall::new("call_1", tool, arguments)
}

fn completed(outcome: Outcome) -> ToolResult {
    match outcome {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(_) => panic!("bench expected a result"),
    }
}

fn gate(c: &mut Criterion) {
    let mut group = c.benchmark_group("gate");
    let floor_validator = jsonschema::options()
        .offline()
        .build(&calculator_schema())
        .expect("schema compiles");
    let valid = json!({"a": 40, "b": 2});

    // The floor: validate with the compiled schema, run the handler, build the result.
    group.bench_function("floor_allow", |b| {
        b.iter_batched(
            || call("calculator", valid.clone()),
            |call| {
                assert!(floor_validator.is_valid(&call.arguments));
                let content = add(&call.arguments).expect("adds");
                ToolResult::ok(call.call_id, content)
            },
            BatchSize::SmallInput,
        )
    });
    let allow = controller(0, &["calculator"], &[]);
    group.bench_function("allow", |b| {
        b.iter_batched(
            || call("calculator", valid.clone()),
            |call| completed(allow.handle(call)),
            BatchSize::SmallInput,
        )
    });

    // Failures: the floor is the same validation (it must run to know), without a handler.
    group.bench_function("unknown_tool", |b| {
        b.iter_batched(
            || call("delete_everything", valid.clone()),
            |call| completed(allow.handle(call)),
            BatchSize::SmallInput,
        )
    });
    let invalid = json!({"a": "forty", "c": 1});
    group.bench_function("floor_invalid", |b| {
        b.iter_batched(
            || call("calculator", invalid.clone()),
            |call| {
                let listing: Vec<String> = floor_validator
                    .iter_errors(&call.arguments)
                    .map(|error| error.to_string())
                    .collect();
                ToolResult::error(call.call_id, listing.join("; "))
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("invalid_arguments", |b| {
        b.iter_batched(
            || call("calculator", invalid.clone()),
            |call| completed(allow.handle(call)),
            BatchSize::SmallInput,
        )
    });
    let deny = controller(0, &[], &[]);
    group.bench_function("deny", |b| {
        b.iter_batched(
            || call("calculator", valid.clone()),
            |call| completed(deny.handle(call)),
            BatchSize::SmallInput,
        )
    });

    // Ask → approve → execute, against the allow path above.
    let ask = controller(0, &[], &["calculator"]);
    group.bench_function("ask_approve_execute", |b| {
        b.iter_batched(
            || call("calculator", valid.clone()),
            |call| {
                let Outcome::PendingApproval(request) = ask.handle(call) else {
                    panic!("calculator asks");
                };
                ask.resolve(ApprovalResponse::approve(request.approval_id))
                    .expect("pending")
            },
            BatchSize::SmallInput,
        )
    });

    // Resolution must not grow with the registry.
    let large = controller(9_999, &["calculator"], &[]);
    group.bench_function("allow_10000_tools", |b| {
        b.iter_batched(
            || call("calculator", valid.clone()),
            |call| completed(large.handle(call)),
            BatchSize::SmallInput,
        )
    });

    // Provider parsing: an OpenAI assistant message with three calls.
    let message = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": "{\"a\":1,\"b\":2}"}},
        {"id": "call_2", "type": "function", "function": {"name": "calculator", "arguments": "{\"a\":3,\"b\":4}"}},
        {"id": "call_3", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}}
    ]});
    group.bench_function("openai_parse_3_calls", |b| {
        b.iter(|| openai::tool_calls(black_box(&message)).expect("well-formed"))
    });
    group.finish();
}

/// The parts of an ask → approve → execute round trip that the design requires besides the one
/// allow path's work (prepare, decide, run): the second prepare and decision after the answer
/// (G6), holding the call (a fresh id, the approval digest, the store's copy) and taking the
/// answer, and the re-check of the digest at answer time. Their sum against `gate/allow` says how
/// near 4x the round trip can come with these steps, however the controller joins them.
fn round_trip_parts(c: &mut Criterion) {
    let mut group = c.benchmark_group("round_trip_parts");
    let valid = json!({"a": 40, "b": 2});
    let runtime =
        ToolRuntime::new(ToolRegistry::new([calculator("calculator")]).expect("one tool"));
    let policy = ToolPolicy::new(Vec::<String>::new(), ["calculator"]).expect("disjoint");
    group.bench_function("prepare_and_decide", |b| {
        b.iter_batched(
            || call("calculator", valid.clone()),
            |call| {
                let prepared = runtime.prepare(call).expect("valid");
                black_box(policy.decide(&prepared));
                // Dropped here, as in the round trip (an output would be dropped untimed).
                drop(prepared);
            },
            BatchSize::SmallInput,
        )
    });
    let pending = PendingApprovals::new();
    let reason = Reason::new("bench").expect("not empty");
    group.bench_function("hold_and_answer", |b| {
        b.iter_batched(
            || {
                runtime
                    .prepare(call("calculator", valid.clone()))
                    .expect("valid")
            },
            |prepared| {
                let request = pending.request(prepared, reason.clone()).expect("held");
                let answered = pending
                    .answer(ApprovalResponse::approve(request.approval_id))
                    .expect("pending");
                assert!(matches!(answered, Answered::Approved(_)));
                drop((request, answered));
            },
            BatchSize::SmallInput,
        )
    });
    let prepared = runtime
        .prepare(call("calculator", valid.clone()))
        .expect("valid");
    let request = pending.request(prepared, reason.clone()).expect("held");
    group.bench_function("recheck_digest", |b| {
        b.iter(|| assert!(black_box(&request).digest_matches()))
    });
    group.finish();
}

/// Allow-path throughput on 1 and 2 threads: the same number of calls per thread, timed together.
fn throughput(c: &mut Criterion) {
    const CALLS_PER_THREAD: u64 = 2_000;
    let controller = Arc::new(controller(0, &["calculator"], &[]));
    let mut group = c.benchmark_group("throughput");
    group.measurement_time(Duration::from_secs(4));
    for threads in [1_u64, 2] {
        group.bench_function(format!("allow_{threads}_threads"), |b| {
            b.iter_custom(|iterations| {
                let start = Instant::now();
                std::thread::scope(|scope| {
                    for _ in 0..threads {
                        let controller = Arc::clone(&controller);
                        scope.spawn(move || {
                            for i in 0..iterations * CALLS_PER_THREAD {
                                let call =
                                    ToolCall::new("c", "calculator", json!({"a": i, "b": 1}));
                                black_box(completed(controller.handle(call)));
                            }
                        });
                    }
                });
                // Time per call *per thread*: equal figures mean throughput doubled.
                start.elapsed() / CALLS_PER_THREAD as u32
            })
        });
    }
    group.finish();
}

/// The same round trip with the durable SQLite ledger (feature `sqlite`): two fsync'd
/// transactions per approval (hold, consume) plus the outcome.
#[cfg(feature = "sqlite")]
fn durable(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("toolgate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ledger =
        toolgate::approvals::SqliteApprovalStore::open(dir.join("approvals.db")).expect("ledger");
    let ask = controller(0, &[], &["calculator"]).with_approval_store(ledger);
    let valid = json!({"a": 40, "b": 2});
    let mut group = c.benchmark_group("gate");
    group.sample_size(20);
    group.bench_function("ask_approve_execute_sqlite", |b| {
        b.iter_batched(
            || call("calculator", valid.clone()),
            |call| {
                let Outcome::PendingApproval(request) = ask.handle(call) else {
                    panic!("calculator asks");
                };
                ask.resolve(ApprovalResponse::approve(request.approval_id))
                    .expect("pending")
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(not(feature = "sqlite"))]
fn durable(_: &mut Criterion) {}

criterion_group!(benches, gate, round_trip_parts, throughput, durable);
criterion_main!(benches);
