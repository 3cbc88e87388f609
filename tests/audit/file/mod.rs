//! The hash-chained file: tampering, one spelling per line, torn tails, one writer, bounded ids.

use super::*;
use toolgate::audit::*;

mod call_ids;
mod chain;
mod commitments;
pub(crate) mod durable;
pub(crate) mod full_disk;
mod merkle;
mod reserve;
mod spellings;
pub(crate) mod torn;
pub(crate) mod writers;

/// A scratch file (and its side files) removed afterwards.
pub(super) struct TempFile(pub(super) std::path::PathBuf);

impl TempFile {
    pub(super) fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "toolgate-audit-{name}-{}.jsonl",
            std::process::id()
        ));
        let file = Self(path);
        file.remove_side_files();
        let _ = std::fs::remove_file(&file.0);
        file
    }

    pub(super) fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    pub(super) fn write_lines(&self, lines: &[String]) {
        std::fs::write(&self.0, lines.join("\n") + "\n").unwrap();
    }

    pub(super) fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.0).unwrap()
    }

    /// `<path>.torn-<offset>` files left by recoveries.
    pub(super) fn side_files(&self) -> Vec<std::path::PathBuf> {
        let name = self.0.file_name().unwrap().to_string_lossy().into_owned();
        let prefix = format!("{name}.torn-");
        std::fs::read_dir(self.0.parent().unwrap())
            .unwrap()
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                path.file_name()?
                    .to_string_lossy()
                    .starts_with(&prefix)
                    .then_some(path)
            })
            .collect()
    }

    pub(super) fn remove_side_files(&self) {
        for side in self.side_files() {
            let _ = std::fs::remove_file(side);
        }
        let _ = std::fs::remove_file(self.salts());
    }

    /// The call ids of the decisions in the log.
    pub(super) fn decided_calls(&self) -> std::collections::HashSet<String> {
        self.lines()
            .iter()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|entry| entry["event"]["kind"] == "decision")
            .map(|entry| entry["event"]["call_id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The salts side file, `<path>.salts`.
    pub(super) fn salts(&self) -> std::path::PathBuf {
        let mut name = self.0.clone().into_os_string();
        name.push(".salts");
        name.into()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.remove_side_files();
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Opens the log — recovering a torn tail if `recover` — waiting while another sink holds it. (A
/// child process that another test spawns shares the lock of a sink open at that moment until it
/// execs, so even a reopen right after `drop` may briefly find the file locked.)
pub(super) fn open_waiting(
    path: &std::path::Path,
    recover: bool,
) -> Result<JsonlAuditSink, AuditOpenError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let opened = if recover {
            JsonlAuditSink::open_recovering(path)
        } else {
            JsonlAuditSink::open(path)
        };
        match opened {
            Err(AuditOpenError::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            other => return other,
        }
    }
}

/// Three allowed calculator calls through a fresh sink on `file`: nine entries.
pub(super) fn write_some_events(file: &TempFile) {
    write_calls(file, "c", 3);
}

/// `count` allowed calls named `<prefix><i>`, three entries each, through one sink.
pub(super) fn write_calls(file: &TempFile, prefix: &str, count: usize) {
    let sink = open_waiting(&file.0, false).unwrap();
    write_calls_to(Arc::new(sink), prefix, count);
}

pub(super) fn write_calls_to(sink: Arc<JsonlAuditSink>, prefix: &str, count: usize) {
    let controller = audited(&Arc::default(), sink);
    for i in 0..count {
        let outcome = controller.handle(ToolCall::new(
            format!("{prefix}{i}"),
            "calculator",
            json!({"a": i, "b": 1}),
        ));
        assert!(
            matches!(
                outcome,
                Outcome::Completed(ToolResult {
                    is_error: false,
                    ..
                })
            ),
            "{outcome:?}"
        );
    }
}

/// The call ids of the file's entries, in order.
pub(super) fn call_ids(file: &TempFile) -> Vec<String> {
    file.lines()
        .iter()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            entry["event"]["call_id"].as_str().unwrap().to_owned()
        })
        .collect()
}
