//! Starting one stdio upstream: the child process, its bounded stdout, its stderr kept and shown,
//! and the MCP handshake under a deadline.

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt as _;
use tokio::io::AsyncBufReadExt as _;
use tokio::process::{Child, Command};

use super::client::GatewayClient;
pub use super::started::{StartError, Started};
use crate::config::{Limits, UpstreamConfig, UpstreamTransport};
use toolgate::mcp::frames;

/// The last stderr lines an upstream wrote, for the message when it fails.
const STDERR_LINES_KEPT: usize = 20;
/// A longer stderr line is cut here (an upstream may write anything).
const STDERR_LINE_BYTES: usize = 512;

/// The stderr lines an upstream wrote last, shared with the task that reads them.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() == STDERR_LINES_KEPT {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub fn lines(&self) -> Vec<String> {
        let lines = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        lines.iter().cloned().collect()
    }
}

/// The command line as the operator wrote it, for messages.
pub fn command_line(upstream: &UpstreamConfig) -> String {
    let (command, args) = match &upstream.transport {
        UpstreamTransport::Stdio { command, args, .. } => (command, args),
        UpstreamTransport::Http { url, .. } => return url.clone(),
    };
    std::iter::once(command)
        .chain(args)
        .map(|part| {
            if part.contains(' ') || part.is_empty() {
                format!("{part:?}")
            } else {
                part.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Starts `upstream` and completes the handshake within `limits.startup_timeout`.
pub async fn start(
    upstream: &UpstreamConfig,
    limits: &Limits,
    tail: &StderrTail,
    signals: super::client::Signals,
) -> Result<Started, StartError> {
    let (command, args, env, cwd) = match &upstream.transport {
        UpstreamTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => (command, args, env, cwd),
        // `start_any` sends a remote upstream to `remote::start`; refusing is the safe answer.
        UpstreamTransport::Http { .. } => {
            return Err(StartError {
                name: upstream.name.clone(),
                command: command_line(upstream),
                what: "is not a child process".to_owned(),
                tail: None,
            });
        }
    };
    let failed = |what: String, tail: &StderrTail| StartError {
        name: upstream.name.clone(),
        command: command_line(upstream),
        what,
        tail: Some(tail.lines()),
    };
    let mut process = Command::new(command);
    process
        .args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        if !cwd.is_dir() {
            return Err(failed(
                format!(
                    "could not be started: its working directory {} is not a directory",
                    cwd.display()
                ),
                tail,
            ));
        }
        process.current_dir(cwd);
    }
    let mut child = process
        .spawn()
        .map_err(|error| failed(format!("could not be started: {error}"), tail))?;
    let (stdin, stdout, stderr) = (
        child.stdin.take().expect("piped"),
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    tokio::spawn(follow_stderr(upstream.name.clone(), stderr, tail.clone()));
    // The SDK reads the bounded copy; the pump ends when the child's stdout closes.
    let (bounded, sdk_side) = tokio::io::duplex(64 * 1024);
    tokio::spawn(frames::pump(stdout, bounded, limits.max_message_bytes));
    let progress = super::progress::ProgressRoutes::default();
    let transport = super::ordered::Ordered::new(
        rmcp::transport::async_rw::AsyncRwTransport::new_client(sdk_side, stdin),
        progress.clone(),
    );
    let handshake = GatewayClient::new(
        upstream.name.clone(),
        signals,
        upstream.forwarded.clone(),
        progress,
    )
    .serve(transport);
    match tokio::time::timeout(limits.startup_timeout, handshake).await {
        Ok(Ok(service)) => Ok(Started {
            service,
            child: Some(child),
        }),
        Ok(Err(_)) => {
            // The SDK's error is about the pipe; what the operator needs is why the child went.
            let status = exit_status(&mut child, Duration::from_secs(2)).await;
            Err(failed(
                match status {
                    Some(status) => format!("exited with {} before completing the MCP handshake", describe(status)),
                    None => "closed its stdout or answered the MCP handshake with something that is not MCP".to_owned(),
                },
                tail,
            ))
        }
        Err(_) => {
            let _ = child.start_kill();
            Err(failed(
                format!(
                    "did not answer the MCP handshake within {} ms (limits.startup_timeout_ms); it was stopped",
                    limits.startup_timeout.as_millis()
                ),
                tail,
            ))
        }
    }
}

/// The child's exit status if it ends within `wait`.
async fn exit_status(child: &mut Child, wait: Duration) -> Option<ExitStatus> {
    tokio::time::timeout(wait, child.wait()).await.ok()?.ok()
}

/// `exit status 3`, `signal 9`.
pub fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(signal) = status.signal() {
            return format!("signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => status.to_string(),
    }
}

/// Shows each stderr line of upstream `name` in the gateway's log and keeps the last ones. A line
/// is cut at `STDERR_LINE_BYTES` as it is read, so no stderr output is held whole.
async fn follow_stderr(name: String, stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(chunk) => chunk,
        };
        let (part, ends) = match chunk.iter().position(|&byte| byte == b'\n') {
            Some(at) => (&chunk[..at], true),
            None => (chunk, false),
        };
        let room = STDERR_LINE_BYTES.saturating_sub(line.len());
        cut |= part.len() > room;
        line.extend_from_slice(&part[..part.len().min(room)]);
        let consumed = part.len() + usize::from(ends);
        reader.consume(consumed);
        if ends {
            emit(&name, &tail, &line, cut);
            line.clear();
            cut = false;
        }
    }
    if !line.is_empty() {
        emit(&name, &tail, &line, cut);
    }
}

fn emit(name: &str, tail: &StderrTail, line: &[u8], cut: bool) {
    // What shows nothing (a bidi override, a zero-width or control character) is spelled out:
    // an upstream must not reorder or hide what an operator reads.
    let mut line = crate::shown::escape_invisible(String::from_utf8_lossy(line).trim_end());
    if cut {
        line.push_str(" …");
    }
    tracing::info!(target: "upstream", upstream = %name, "{line}");
    tail.push(line);
}
