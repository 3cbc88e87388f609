//! Audited calls per second from 8 threads on one node, every entry a call's run depends on
//! `fdatasync`ed before the call runs: the JSON Lines sink with group commit — appending (the
//! default), and writing over zeros it keeps reserved ahead (`with_reserve`) — beside a baseline
//! sink that writes and syncs each entry on its own under one lock (plain appends, one commit
//! each), and the gate without an audit log. Criterion reports each as elements (calls) per
//! second.
//!
//! Beside them, the disk's own bounds: one `fdatasync` per batch of 8 calls' entries (the bytes
//! the group-commit run writes per call, measured first) with nothing else done — the most calls
//! per second 8 threads can reach when each waits for its own entry to be durable — written over
//! zeros synced beforehand, as the reserving sink writes, and appended, as the default sink does
//! (each sync then also commits the file's new size). Each log's figure is best read as a
//! fraction of its bound, measured in the same run.
//!
//! `cargo bench --bench audit_throughput`; the files are written under `target/`.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::audit::{AuditError, AuditEvent, AuditSink, JsonlAuditSink};
use toolgate::{
    Outcome, ToolCall, ToolController, ToolDefinition, ToolError, ToolPolicy, ToolRegistry,
    ToolSpec,
};

const THREADS: usize = 8;
/// Calls each thread makes per round: threads live through many commits, as a server's do.
const CALLS_PER_THREAD: usize = 256;

fn controller() -> ToolController {
    let tool = ToolDefinition::new(
        ToolSpec::new(
            "read_file",
            "Read a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        |_: &Value| -> Result<String, ToolError> { Ok("contents".into()) },
    )
    .expect("schema compiles");
    ToolController::new(
        ToolRegistry::new([tool]).expect("one tool"),
        ToolPolicy::new(["read_file"], Vec::<String>::new()).expect("disjoint"),
    )
}

/// The baseline: each event one append and one `fdatasync`, under one lock — what a log that
/// commits every entry on its own does.
struct PlainFsyncSink(Mutex<File>);

impl AuditSink for PlainFsyncSink {
    fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        let mut line = serde_json::to_vec(event).map_err(|e| AuditError::caused_by("json", e))?;
        line.push(b'\n');
        let mut file = self.0.lock().expect("not poisoned");
        file.write_all(&line)
            .and_then(|()| file.sync_data())
            .map_err(|e| AuditError::caused_by("append", e))
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("audit_throughput");
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(dir.join(format!("{name}.salts")));
    path
}

/// Runs `iters` rounds of `THREADS` threads each making `CALLS_PER_THREAD` calls.
fn run(controller: &Arc<ToolController>, iters: u64) -> Duration {
    let start = Instant::now();
    for round in 0..iters {
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let controller = Arc::clone(controller);
                scope.spawn(move || {
                    for n in 0..CALLS_PER_THREAD {
                        let call = ToolCall::new(
                            format!("c{round}-{thread}-{n}"),
                            "read_file",
                            json!({"path": format!("/srv/data/{n}.txt")}),
                        );
                        match controller.handle(call) {
                            Outcome::Completed(result) => assert!(!result.is_error),
                            Outcome::PendingApproval(_) => panic!("allowed"),
                        }
                    }
                });
            }
        });
    }
    start.elapsed()
}

fn audit_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("audited_calls_8_threads");
    group.throughput(Throughput::Elements((THREADS * CALLS_PER_THREAD) as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));

    let none = Arc::new(controller());
    group.bench_function("no_audit", |b| b.iter_custom(|iters| run(&none, iters)));

    let path = scratch("plain.jsonl");
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("baseline file");
    let plain = Arc::new(controller().with_audit_sink(PlainFsyncSink(Mutex::new(file))));
    group.bench_function("baseline_fsync_each_entry", |b| {
        b.iter_custom(|iters| run(&plain, iters))
    });

    let path = scratch("group.jsonl");
    let sink = JsonlAuditSink::open(&path).expect("audit file");
    let grouped = Arc::new(controller().with_audit_sink(sink));
    group.bench_function("jsonl_group_commit", |b| {
        b.iter_custom(|iters| run(&grouped, iters))
    });
    drop(grouped);

    // Lines written over 16 MiB of zeros kept ahead (`with_reserve`), as the reserved bound.
    let path = scratch("reserved.jsonl");
    let sink = JsonlAuditSink::open(&path)
        .expect("audit file")
        .with_reserve(16 << 20);
    let reserved = Arc::new(controller().with_audit_sink(sink));
    group.bench_function("jsonl_group_commit_reserved", |b| {
        b.iter_custom(|iters| run(&reserved, iters))
    });
    drop(reserved);

    let batch = vec![b'x'; THREADS * log_bytes_per_call()];
    // As the sink writes: over zeros written and synced beforehand (cycling through them).
    let path = scratch("bound.bin");
    let region = 64 << 20;
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .expect("bound file");
    file.write_all(&vec![0; region]).expect("zeros");
    file.sync_all().expect("fsync");
    let mut at = 0;
    group.throughput(Throughput::Elements(THREADS as u64));
    group.bench_function("disk_bound_8_calls_per_fdatasync", |b| {
        b.iter(|| {
            if at + batch.len() > region {
                at = 0;
            }
            file.write_all_at(&batch, at as u64).expect("write");
            file.sync_data().expect("fdatasync");
            at += batch.len();
        })
    });
    // The same, appending: each sync also commits the file's new size.
    let path = scratch("bound-appending.bin");
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("bound file");
    group.bench_function("disk_bound_appending", |b| {
        b.iter(|| {
            file.write_all(&batch).expect("append");
            file.sync_data().expect("fdatasync");
        })
    });
    group.finish();
}

/// The bytes one call adds to a JSON Lines log (its three entries), from a log of 64 calls.
fn log_bytes_per_call() -> usize {
    let path = scratch("per_call.jsonl");
    let sink = JsonlAuditSink::open(&path).expect("audit file");
    let controller = controller().with_audit_sink(sink);
    run(&Arc::new(controller), 1);
    let calls = THREADS * CALLS_PER_THREAD;
    let bytes = std::fs::metadata(&path).expect("log written").len() as usize;
    bytes / calls
}

/// Verifying one entry's receipt in a log of 1,000,000 entries: the inclusion proof (20 hashes)
/// against the tree head, from the entry's line alone. The whole receipt check
/// (`Receipt::verify`: leaf hash, proof, root comparison) and the bare proof check.
fn inclusion_proof_in_a_million(c: &mut Criterion) {
    use toolgate::audit::merkle::{MerkleTree, leaf_hash, verify_inclusion};
    const SIZE: u64 = 1_000_000;
    let line = |index: u64| {
        format!(
            "{{\"seq\":{index},\"prev\":\"sha256:00\",\"event\":{{\"kind\":\"decision\"}},\"hash\":\"sha256:11\"}}"
        )
    };
    let mut tree = MerkleTree::new();
    for index in 0..SIZE {
        tree.push(leaf_hash(line(index).as_bytes()));
    }
    let index = 777_777;
    let proof = tree.inclusion_proof(index, SIZE).expect("in the tree");
    let root = tree.root(SIZE).expect("a root");
    let entry = line(index);
    let mut group = c.benchmark_group("inclusion_proof_1m_entries");
    group.bench_function("verify_entry_line", |b| {
        b.iter(|| {
            let leaf = leaf_hash(std::hint::black_box(entry.as_bytes()));
            assert!(verify_inclusion(index, SIZE, &leaf, &proof, &root));
        })
    });
    group.finish();
}

criterion_group!(benches, audit_throughput, inclusion_proof_in_a_million);
criterion_main!(benches);
