//! A write the filesystem refuses (the file-size limit, failing the way a full disk does): the
//! batch is cut off, the log still verifies, the sink refuses every later record instead of
//! chaining onto lost lines, and a sink reopened without the limit continues the chain. A real
//! child process under `ulimit -f`, with SIGXFSZ ignored so that the write fails with EFBIG
//! instead of killing the process.

use std::path::Path;
use std::process::Command;

use super::*;

/// The child's file-size limit, in the shell's 512-byte blocks.
const LIMIT_BLOCKS: u64 = 24;

/// Child role: allowed calls through one sink until one is refused, then one more call and one
/// direct record.
pub(crate) fn child_limited_writer(path: &Path, name: &str) {
    let sink = Arc::new(JsonlAuditSink::open(path).unwrap());
    let controller = audited(&Arc::default(), Arc::clone(&sink) as Arc<dyn AuditSink>);
    let call = |i: u64| {
        controller.handle(ToolCall::new(
            format!("{name}-{i}"),
            "calculator",
            json!({"a": i, "b": 1}),
        ))
    };
    let refused = (0..10_000)
        .find(|i| matches!(call(*i), Outcome::Completed(ref r) if r.is_error))
        .expect("the limit refuses a write");
    println!("CHILD REFUSED {refused}");
    if matches!(call(refused + 1), Outcome::Completed(ref r) if r.is_error) {
        println!("CHILD REFUSED AGAIN");
    }
    let event: AuditEvent = serde_json::from_value(
        json!({"call_id": "direct", "kind": "call_received", "time_ms": 1, "tool": "t"}),
    )
    .unwrap();
    match sink.record_deferred(&event) {
        Ok(()) => println!("CHILD RECORDED AFTER THE FAILURE"),
        Err(error) => println!("CHILD RECORD REFUSED: {error}"),
    }
}

#[test]
fn a_write_the_filesystem_refuses_is_cut_off_and_the_sink_refuses_until_reopened() {
    let file = TempFile::new("size-limit");
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {LIMIT_BLOCKS} && exec \"$0\" --exact child_process_role --nocapture --test-threads=1"
        ))
        .arg(std::env::current_exe().unwrap())
        .env("TOOLGATE_AUDIT_CHILD_ROLE", "limited_writer")
        .env("TOOLGATE_AUDIT_FILE", &file.0)
        .env("TOOLGATE_AUDIT_NAME", "limited")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let refused: u64 = stdout
        .lines()
        .find_map(|line| line.split("CHILD REFUSED ").nth(1)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(refused > 0, "the limit leaves room for some calls");
    assert!(stdout.contains("CHILD REFUSED AGAIN"), "{stdout}");
    assert!(
        stdout.contains("CHILD RECORD REFUSED") && stdout.contains("reopen the log"),
        "{stdout}"
    );

    // The log ends in whole entries within the limit, and holds the decision of every call
    // before the refused one.
    let bytes = file.bytes().len() as u64;
    assert!(bytes <= LIMIT_BLOCKS * 512, "{bytes} bytes");
    let tip = verify_audit_file(&file.0).unwrap();
    let decided = file.decided_calls();
    for i in 0..refused {
        assert!(decided.contains(&format!("limited-{i}")), "call {i}");
    }

    // Without the limit, a reopened sink continues the chain.
    write_calls(&file, "after", 2);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, tip.entries + 6);
}
