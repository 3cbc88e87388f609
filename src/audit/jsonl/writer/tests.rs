//! The writer's promises a test can see: what is synced when, and what forgetting a salt leaves.

use std::path::PathBuf;

use super::super::JsonlAuditSink;
use crate::audit::{AuditEvent, AuditSink as _, verify_audit_file};

/// A log file (and its salts) of this process, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "toolgate-writer-{name}-{}.jsonl",
            std::process::id()
        ));
        let scratch = Self(path);
        scratch.remove();
        scratch
    }

    fn salts(&self) -> PathBuf {
        super::salts::salts_path(&self.0)
    }

    fn remove(&self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.salts());
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.remove();
    }
}

fn event() -> AuditEvent {
    serde_json::from_value(
        serde_json::json!({"call_id": "c", "kind": "call_received", "time_ms": 1, "tool": "t"}),
    )
    .unwrap()
}

#[test]
fn sync_and_drop_leave_no_entry_waiting_for_its_fdatasync() {
    let file = Scratch::new("sync");
    let sink = JsonlAuditSink::open(&file.0).unwrap();
    for _ in 0..5 {
        sink.record_deferred(&event()).unwrap();
    }
    sink.sync().unwrap();
    assert!(!sink.inner.group.behind(), "synced");
    let inner = std::sync::Arc::clone(&sink.inner);
    sink.record_deferred(&event()).unwrap();
    drop(sink);
    assert!(!inner.group.behind(), "synced when dropped");
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 6);
}

#[test]
fn a_salt_forgotten_while_its_entry_waits_for_its_commit_stays_forgotten() {
    let file = Scratch::new("forget");
    let mut event = event();
    event.salt = crate::audit::HeldSalt(crate::audit::ArgumentSalt::random());
    let sink = JsonlAuditSink::open(&file.0).unwrap();
    // Joins the chain and is left for the commit its writer would wait for: not written yet.
    let ticket = sink.inner.write(&event, true).unwrap();
    assert!(
        sink.inner.forget_salt(0).unwrap(),
        "written first, then forgotten"
    );
    sink.inner.wait_durable(ticket).unwrap();
    drop(sink);
    assert_eq!(std::fs::read_to_string(file.salts()).unwrap(), "");
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 1);
}

#[test]
fn an_entry_recorded_without_waiting_is_synced_by_the_background_thread() {
    let file = Scratch::new("tick");
    let sink = JsonlAuditSink::open(&file.0).unwrap();
    sink.record_deferred(&event()).unwrap();
    // Nothing else happens on this sink: only the background thread can sync it (within 50 ms;
    // allowed far longer here, for a loaded machine).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while sink.inner.group.behind() {
        assert!(std::time::Instant::now() < deadline, "never synced");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
