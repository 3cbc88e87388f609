//! What the gateway's integration tests share: a work directory with a config and policy, the
//! built binary, and an MCP client (the official Rust SDK) that starts it.
#![allow(dead_code)] // each test binary uses its own part

pub mod oidc;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;

/// The reason [`Work::asking_config`]'s policy gives.
pub const ASKS_BECAUSE: &str = "a person checks each echo";

pub const GATEWAY: &str = env!("CARGO_BIN_EXE_toolgate-mcp-gateway");

/// A fresh directory for one test, under Cargo's per-target temporary directory.
pub struct Work {
    pub dir: PathBuf,
}

impl Work {
    pub fn new(name: &str) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work dir");
        Self { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// The calls the hostile upstream received, by tool name.
    pub fn recorded(&self) -> Vec<String> {
        self.read("record.jsonl")
            .lines()
            .map(|line| {
                let entry: serde_json::Value = serde_json::from_str(line).expect("record");
                entry["tool"].as_str().expect("tool").to_owned()
            })
            .collect()
    }

    /// [`hostile_config`](Self::hostile_config) serving `h__echo` only, and asking a person
    /// about every call ([`ASKS_BECAUSE`] the reason).
    pub fn asking_config(&self, extra: &str) -> PathBuf {
        let config = self.hostile_config("serve", extra);
        self.write(
            "policy.json",
            &format!(
                r#"{{"rules": [{{"id": "echo-asks", "tool": "h__echo", "action": "ask", "reason": "{ASKS_BECAUSE}"}}]}}"#
            ),
        );
        config
    }

    /// A config with one hostile upstream `h` in `mode`, the policy allowing its tools, and
    /// `extra` TOML appended.
    pub fn hostile_config(&self, mode: &str, extra: &str) -> PathBuf {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/hostile_upstream.py");
        self.write(
            "policy.json",
            r#"{"rules": [
              {"id": "echo", "tool": "h__echo", "action": "allow", "reason": "harmless"},
              {"id": "huge", "tool": "h__huge", "action": "allow", "reason": "test"},
              {"id": "crash", "tool": "h__crash", "action": "allow", "reason": "test"},
              {"id": "mutate", "tool": "h__mutate", "action": "allow", "reason": "test"},
              {"id": "write", "tool": "h__write", "action": "allow", "reason": "test"}
            ]}"#,
        );
        let record = self.path("record.jsonl");
        self.write(
            "gateway.toml",
            &format!(
                "[upstreams.h]\ncommand = \"python3\"\nargs = [{script:?}, {mode:?}, {record:?}]\n\
                 [policy]\nlayers = [\"policy.json\"]\n{extra}"
            ),
        )
    }
}

/// Runs the gateway with `args` to completion.
pub fn run(args: &[&str]) -> Output {
    Command::new(GATEWAY)
        .args(args)
        .output()
        .expect("the gateway runs")
}

pub fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// An MCP session with `toolgate-mcp-gateway serve --config CONFIG`.
pub async fn serve(config: &Path) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(GATEWAY);
    command.arg("serve").arg("--config").arg(config);
    let transport = TokioChildProcess::new(command).expect("spawn the gateway");
    tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
        .await
        .expect("the gateway answers the handshake in time")
        .expect("handshake")
}

/// Calls `tool` with `arguments`; the result's text and whether it is an error.
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: serde_json::Value,
) -> (String, bool) {
    let serde_json::Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let result: CallToolResult =
        tokio::time::timeout(Duration::from_secs(30), client.call_tool(request))
            .await
            .expect("the gateway answers in time")
            .expect("a result, not a protocol error");
    let text = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (text, result.is_error == Some(true))
}

/// The Python with the official MCP SDK (`TOOLGATE_MCP_PYTHON`); with `CI` set a missing one
/// fails the test, otherwise the test says on stderr that it was skipped.
pub fn python() -> Option<std::ffi::OsString> {
    use std::io::Write as _;
    let python = std::env::var_os("TOOLGATE_MCP_PYTHON").filter(|path| !path.is_empty());
    if python.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the Python SDK tests: export TOOLGATE_MCP_PYTHON=\"$(.ci/python-mcp)\""
        );
        let _ = writeln!(
            std::io::stderr(),
            "note: TOOLGATE_MCP_PYTHON is unset: the HTTP tests with the Python SDK were SKIPPED, not run"
        );
    }
    python
}

pub fn sha256(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A plain HTTP/1.1 GET, the whole response as text.
pub fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// A port nothing listens on now, and no other call of this process gets: below the kernel's
/// ephemeral range (32768–60999 on Linux), so an outgoing connection of a test running beside
/// this one cannot take it before the server this port is for binds it (a port the kernel hands
/// out for `:0` can be), each call the next port of a run starting where this process's id
/// points.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id() % 12_000;
    loop {
        let taken = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(taken < 12_000, "no free port left between 20000 and 32000");
        let port = 20_000 + u16::try_from((start + taken) % 12_000).expect("below 12,000");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Waits until something listens on `port`.
pub fn wait_for_port(port: u16) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A gateway process, killed on drop.
pub struct Served {
    pub child: std::process::Child,
    pub mcp: u16,
    pub admin: u16,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve` over HTTP (and an admin listener) in front of the hostile upstream, with `auth` (TOML:
/// `[[clients]]`, `[jwt]`) and `tests/mcp`'s HTTP policy: `h__echo` allowed for group ops,
/// `h__write` asked, `h__crash` denied.
pub fn serve_http(work: &Work, auth: &str) -> Served {
    serve_http_at(work, free_port(), free_port(), auth)
}

/// `serve_http` on the given ports (a config that names its own URL needs the port first).
pub fn serve_http_at(work: &Work, mcp: u16, admin: u16, auth: &str) -> Served {
    serve_http_with(work, mcp, admin, auth, &[])
}

/// `serve_http_at` with variables set for the gateway (a secret a config names by variable).
pub fn serve_http_with(
    work: &Work,
    mcp: u16,
    admin: u16,
    auth: &str,
    env: &[(&str, &str)],
) -> Served {
    let extra = format!(
        "[audit]\njsonl = \"audit.jsonl\"\n\
         [listen]\nhttp = \"127.0.0.1:{mcp}\"\nadmin = \"127.0.0.1:{admin}\"\n{auth}"
    );
    let config = work.hostile_config("serve", &extra);
    work.write(
        "policy.json",
        r#"{"rules": [
          {"id": "ops-echo", "tool": "h__echo", "action": "allow", "reason": "ops may echo",
           "principals": {"groups": ["ops"]}},
          {"id": "write", "tool": "h__write", "action": "ask", "reason": "a person confirms writes"},
          {"id": "crash", "tool": "h__crash", "action": "deny", "reason": "not through the gateway"}
        ]}"#,
    );
    let mut command = std::process::Command::new(GATEWAY);
    command
        .args(["serve", "--config"])
        .arg(&config)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null());
    // A test that sets the log level reads the log: it goes to `gateway.log`.
    if env.iter().any(|(name, _)| *name == "TOOLGATE_LOG") {
        command.stderr(std::fs::File::create(work.path("gateway.log")).expect("the log file"));
    }
    let child = command.spawn().expect("the gateway starts");
    wait_for_port(mcp);
    Served { child, mcp, admin }
}

/// The directory `.ci/node-mcp` printed (`TOOLGATE_MCP_NODE`): the TypeScript SDK and the OpenID
/// provider under its `node_modules`. With `CI` set a missing one fails the test, otherwise the
/// test says on stderr that it was skipped.
pub fn node_dir() -> Option<PathBuf> {
    use std::io::Write as _;
    let dir = std::env::var_os("TOOLGATE_MCP_NODE").filter(|dir| !dir.is_empty());
    if dir.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the TypeScript SDK tests: export TOOLGATE_MCP_NODE=\"$(.ci/node-mcp)\""
        );
        let _ = writeln!(
            std::io::stderr(),
            "note: TOOLGATE_MCP_NODE is unset: the TypeScript SDK tests were SKIPPED, not run"
        );
    }
    dir.map(PathBuf::from)
}
