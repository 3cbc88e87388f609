//! The workspace file tools judge the real file: what a lexical policy check cannot see — symlinks,
//! hard links, named pipes, sockets, devices, files past the size cap — the handler refuses, and
//! promptly (every call runs on a thread the test abandons after a few seconds).
#![cfg(all(feature = "cap-std", unix))]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde_json::{Value, json};
use toolgate::workspace::{MAX_READ_BYTES, workspace_tools};
use toolgate::*;

/// Longer than any handler may take; a handler that blocks fails the test instead of hanging it.
const PROMPTLY: Duration = Duration::from_secs(5);

/// Contents that must never reach the model.
const SECRETS: [&str; 2] = ["TOP SECRET", "hunter2"];

/// A fresh directory holding `workspace/` and, beside it, `outside/secret.txt`, with every kind of
/// link and special file an attacker with access to the workspace could plant.
struct Sandbox {
    root: PathBuf,
    // Keeps the socket bound while the tests knock on it.
    _socket: std::os::unix::net::UnixListener,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!("toolgate-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let ws = root.join("workspace");
        for dir in [ws.join("sub"), ws.join("config"), root.join("outside")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let write = |path: PathBuf, content: &str| std::fs::write(path, content).unwrap();
        write(root.join("outside/secret.txt"), "TOP SECRET");
        write(ws.join("config/.env"), "API_KEY=hunter2");
        write(ws.join("notes.txt"), "hello");
        write(ws.join("draft.txt"), "a longer first draft");
        write(ws.join("sub/inner.txt"), "inner");
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, ws.join(name)).unwrap();
        };
        link(&root.join("outside"), "link_to_outside_dir");
        link(&root.join("outside/secret.txt"), "link_to_secret");
        link(
            Path::new("../outside/secret.txt"),
            "relative_link_to_secret",
        );
        link(Path::new("sub/inner.txt"), "link_inside");
        link(Path::new("config/.env"), "notes_alias");
        link(Path::new("sub"), "sub_alias");
        link(Path::new("chain_b"), "chain_a");
        link(Path::new("sub/inner.txt"), "chain_b");
        link(Path::new("nowhere.txt"), "dangling");
        link(Path::new("../outside/planted.txt"), "dangling_out");
        link(Path::new("notes.txt"), "out.txt");
        link(Path::new(".."), "sub/up");
        std::fs::hard_link(root.join("outside/secret.txt"), ws.join("hard_secret.txt")).unwrap();
        std::fs::hard_link(ws.join("config/.env"), ws.join("hard_env")).unwrap();
        let mkfifo = std::process::Command::new("mkfifo")
            .arg(ws.join("pipe"))
            .status()
            .unwrap();
        assert!(mkfifo.success(), "mkfifo failed");
        let socket = std::os::unix::net::UnixListener::bind(ws.join("sock")).unwrap();
        Self {
            root,
            _socket: socket,
        }
    }

    fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }

    /// Allows every path lexically inside the workspace, except `config/*` for reading and writing.
    fn controller(&self) -> Arc<ToolController> {
        let workspace = Dir::open_ambient_dir(self.workspace(), ambient_authority()).unwrap();
        let registry = ToolRegistry::new(workspace_tools(workspace).unwrap()).unwrap();
        let policy = RulePolicy::from_json(
            r#"{"paths": {"working_directory": "/workspace"}, "rules": [
              {"id": "read-ws", "tool": "read_file", "action": "allow", "reason": "inside the workspace",
               "when": {"path_within": {"pointer": "/path", "roots": ["/workspace"]}}},
              {"id": "list-ws", "tool": "list_dir", "action": "allow", "reason": "inside the workspace",
               "when": {"path_within": {"pointer": "/path", "roots": ["/workspace"]}}},
              {"id": "write-ws", "tool": "write_file", "action": "allow", "reason": "inside the workspace",
               "when": {"path_within": {"pointer": "/path", "roots": ["/workspace"]}}},
              {"id": "no-config-read", "tool": "read_file", "action": "deny", "reason": "config holds secrets",
               "when": {"path_glob": {"pointer": "/path", "pattern": "/workspace/config/**"}}},
              {"id": "no-config-write", "tool": "write_file", "action": "deny", "reason": "config holds secrets",
               "when": {"path_glob": {"pointer": "/path", "pattern": "/workspace/config/**"}}}
            ]}"#,
            &registry,
        )
        .unwrap();
        Arc::new(ToolController::new(registry, policy))
    }

    fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.root.join(relative)).unwrap()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A controller over `dir` whose policy allows everything, to reach the handler directly.
fn permissive(dir: &Path) -> Arc<ToolController> {
    let workspace = Dir::open_ambient_dir(dir, ambient_authority()).unwrap();
    let registry = ToolRegistry::new(workspace_tools(workspace).unwrap()).unwrap();
    let allow_all =
        |_: &PreparedToolCall| PolicyDecision::allow(Reason::from_static("test: allow all"));
    Arc::new(ToolController::new(registry, allow_all))
}

/// Runs the call on its own thread; an error if no result arrives within [`PROMPTLY`]. A blocked
/// handler thread is abandoned, never joined.
fn try_run(
    controller: &Arc<ToolController>,
    tool: &str,
    arguments: Value,
) -> Result<ToolResult, String> {
    let (sender, receiver) = mpsc::channel();
    let worker = Arc::clone(controller);
    let call = ToolCall::new("c", tool, arguments);
    std::thread::spawn(move || {
        let _ = sender.send(worker.handle(call));
    });
    match receiver.recv_timeout(PROMPTLY) {
        Ok(Outcome::Completed(result)) => Ok(result),
        Ok(other) => Err(format!("expected a result, got {other:?}")),
        Err(RecvTimeoutError::Timeout) => Err(format!("no answer within {PROMPTLY:?}")),
        Err(RecvTimeoutError::Disconnected) => Err("the handler panicked".to_owned()),
    }
}

fn run(controller: &Arc<ToolController>, tool: &str, arguments: Value) -> ToolResult {
    try_run(controller, tool, arguments).unwrap_or_else(|problem| panic!("{tool}: {problem}"))
}

enum Expect {
    /// An error result whose text holds this fragment.
    Refused(&'static str),
    /// A success whose text is exactly this.
    Ok(&'static str),
}

#[test]
fn catalogue_links_and_special_files_are_refused_promptly() {
    use Expect::{Ok, Refused};
    let sandbox = Sandbox::new("catalogue");
    let controller = sandbox.controller();
    let symlink = "symbolic link";
    let write = |path: &str| json!({"path": path, "content": "x"});
    let path = |path: &str| json!({ "path": path });
    #[rustfmt::skip]
    let cases: Vec<(&str, &str, Value, Expect)> = vec![
        // Reading through symlinks, whatever they point at.
        ("policy denies the file by name", "read_file", path("config/.env"), Refused("config holds secrets")),
        ("symlink to a denied file", "read_file", path("notes_alias"), Refused(symlink)),
        ("symlink in a middle component", "read_file", path("sub_alias/inner.txt"), Refused(symlink)),
        ("symlink to the parent in a middle component", "read_file", path("sub/up/notes.txt"), Refused(symlink)),
        ("symlink chain", "read_file", path("chain_a"), Refused(symlink)),
        ("absolute symlink to a file outside", "read_file", path("link_to_secret"), Refused(symlink)),
        ("relative symlink to a file outside", "read_file", path("relative_link_to_secret"), Refused(symlink)),
        ("symlink to a directory outside", "read_file", path("link_to_outside_dir/secret.txt"), Refused(symlink)),
        ("symlink inside the workspace", "read_file", path("link_inside"), Refused(symlink)),
        ("dangling symlink", "read_file", path("dangling"), Refused(symlink)),
        // Listing through symlinks.
        ("list a symlinked directory inside", "list_dir", path("sub_alias"), Refused(symlink)),
        ("list a symlinked directory outside", "list_dir", path("link_to_outside_dir"), Refused(symlink)),
        // Hard links.
        ("hard link to a file outside", "read_file", path("hard_secret.txt"), Refused("hard link")),
        ("hard link to a denied file", "read_file", path("hard_env"), Refused("hard link")),
        ("write through a hard link to a file outside", "write_file", write("hard_secret.txt"), Refused("hard link")),
        ("write through a hard link to a denied file", "write_file", write("hard_env"), Refused("hard link")),
        // Special files: refused without blocking.
        ("read a named pipe", "read_file", path("pipe"), Refused("named pipe")),
        ("write a named pipe", "write_file", write("pipe"), Refused("named pipe")),
        ("list a named pipe", "list_dir", path("pipe"), Refused("not a directory")),
        ("read a socket", "read_file", path("sock"), Refused("socket")),
        ("write a socket", "write_file", write("sock"), Refused("socket")),
        ("read a directory", "read_file", path("sub"), Refused("is a directory")),
        // Writing through symlinks.
        ("write through a final symlink inside", "write_file", write("out.txt"), Refused(symlink)),
        ("write through a dangling symlink", "write_file", write("dangling"), Refused(symlink)),
        ("write through a dangling symlink out", "write_file", write("dangling_out"), Refused(symlink)),
        ("write through a symlink to a denied file", "write_file", write("notes_alias"), Refused(symlink)),
        ("write through a directory symlink out", "write_file", write("link_to_outside_dir/planted.txt"), Refused(symlink)),
        // Spellings the lexical check passes but the kernel reads differently.
        ("`..` that stays inside", "read_file", path("sub/../notes.txt"), Refused("`..`")),
        ("trailing slash on a file", "read_file", path("notes.txt/"), Refused("ends with `/`")),
        // What stays allowed.
        ("normal read", "read_file", path("notes.txt"), Ok("hello")),
        ("read with `.` and doubled `/`", "read_file", path("./sub//inner.txt"), Ok("inner")),
        ("list a directory", "list_dir", path("sub"), Ok("inner.txt\nup")),
        ("write a new file", "write_file", json!({"path": "sub/new.txt", "content": "abc"}), Ok("wrote 3 bytes to sub/new.txt")),
        ("replace a regular file", "write_file", json!({"path": "draft.txt", "content": "final"}), Ok("wrote 5 bytes to draft.txt")),
    ];
    // Every case runs, so a regression names all the classes it reopens.
    let mut failures = Vec::new();
    for (attack, tool, arguments, expect) in cases {
        let result = match try_run(&controller, tool, arguments) {
            Result::Ok(result) => result,
            Err(problem) => {
                failures.push(format!("{attack}: {problem}"));
                continue;
            }
        };
        if SECRETS.iter().any(|secret| result.content.contains(secret)) {
            failures.push(format!("{attack}: leaked a secret"));
            continue;
        }
        let held = match expect {
            Refused(fragment) => result.is_error && result.content.contains(fragment),
            Ok(content) => !result.is_error && result.content == content,
        };
        if !held {
            failures.push(format!("{attack}: got {:?}", result.content));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // Nothing refused left a trace; what was allowed landed.
    assert_eq!(sandbox.read("outside/secret.txt"), "TOP SECRET");
    assert_eq!(sandbox.read("workspace/config/.env"), "API_KEY=hunter2");
    assert_eq!(sandbox.read("workspace/notes.txt"), "hello");
    assert!(!sandbox.root.join("outside/planted.txt").exists());
    assert!(!sandbox.workspace().join("nowhere.txt").exists());
    assert_eq!(sandbox.read("workspace/sub/new.txt"), "abc");
    assert_eq!(sandbox.read("workspace/draft.txt"), "final");
}

#[test]
fn devices_are_refused_without_being_read() {
    // /dev/zero never ends and reports length 0: read whole, it would exhaust memory.
    let dev = permissive(Path::new("/dev"));
    for (tool, arguments) in [
        ("read_file", json!({"path": "zero"})),
        ("read_file", json!({"path": "null"})),
        ("read_file", json!({"path": "urandom"})),
        ("write_file", json!({"path": "null", "content": "x"})),
    ] {
        let result = run(&dev, tool, arguments);
        assert!(
            result.is_error && result.content.contains("character device"),
            "{tool}: {}",
            result.content
        );
    }
}

#[test]
fn size_cap_holds_at_the_boundary_and_for_a_growing_file() {
    let sandbox = Sandbox::new("cap");
    let controller = permissive(&sandbox.workspace());
    let cap = usize::try_from(MAX_READ_BYTES).unwrap();
    std::fs::write(sandbox.workspace().join("at_cap.txt"), "a".repeat(cap)).unwrap();
    std::fs::write(
        sandbox.workspace().join("past_cap.txt"),
        "a".repeat(cap + 1),
    )
    .unwrap();
    let at_cap = run(&controller, "read_file", json!({"path": "at_cap.txt"}));
    assert!(!at_cap.is_error && at_cap.content.len() == cap);
    let past_cap = run(&controller, "read_file", json!({"path": "past_cap.txt"}));
    assert!(
        past_cap.is_error && past_cap.content.contains("more than"),
        "{}",
        past_cap.content
    );

    // A file that grows while being read never yields more than the cap.
    let growing = sandbox.workspace().join("growing.txt");
    std::fs::write(&growing, "").unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(growing)
            .unwrap();
        for _ in 0..32 {
            file.write_all(&[b'g'; 1 << 16]).unwrap();
        }
    });
    while !writer.is_finished() {
        let result = run(&controller, "read_file", json!({"path": "growing.txt"}));
        assert!(result.is_error || result.content.len() <= cap);
    }
    writer.join().unwrap();
    let grown = run(&controller, "read_file", json!({"path": "growing.txt"}));
    assert!(grown.is_error && grown.content.contains("more than"));
}

#[test]
fn dotdot_and_absolute_paths_are_stopped_twice() {
    let sandbox = Sandbox::new("dotdot");
    let controller = sandbox.controller();
    // The policy refuses these lexically (default deny) ...
    for path in ["../outside/secret.txt", "sub/../../outside/secret.txt"] {
        let result = run(&controller, "read_file", json!({ "path": path }));
        assert!(
            result.content.contains("default deny"),
            "{path}: {}",
            result.content
        );
    }
    // ... and the handler would too, had a permissive policy let them through.
    let open = permissive(&sandbox.workspace());
    let secret = sandbox
        .root
        .join("outside/secret.txt")
        .display()
        .to_string();
    for path in ["../outside/secret.txt", secret.as_str()] {
        for tool in ["read_file", "list_dir"] {
            let result = run(&open, tool, json!({ "path": path }));
            assert!(
                result.is_error && result.content.contains("absolute paths and `..`"),
                "{tool} {path}: {}",
                result.content
            );
        }
    }
    assert_eq!(sandbox.read("outside/secret.txt"), "TOP SECRET");
}

#[test]
fn missing_files_are_an_error_result() {
    let sandbox = Sandbox::new("missing");
    let controller = sandbox.controller();
    assert_eq!(
        run(&controller, "read_file", json!({"path": "nope.txt"})),
        ToolResult::error("c", "nope.txt: not found")
    );
}

#[test]
fn listing_marks_directories_but_not_links_to_them() {
    let sandbox = Sandbox::new("listing");
    let controller = sandbox.controller();
    let listing = run(&controller, "list_dir", json!({"path": "."}));
    let lines: Vec<&str> = listing.content.lines().collect();
    assert!(
        lines.contains(&"sub/") && lines.contains(&"config/"),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"sub_alias") && lines.contains(&"link_to_outside_dir"),
        "{lines:?}"
    );
}

#[test]
fn swapping_a_name_under_the_handlers_never_leaks_blocks_or_writes_through() {
    // An attacker with access to the workspace renames links and special files over `target`
    // while the model reads and writes it: the check-then-open window must not let any through.
    const ROUNDS: usize = 150;
    let sandbox = Sandbox::new("swap");
    let ws = sandbox.workspace();
    let fifos: Vec<PathBuf> = (0..ROUNDS).map(|i| ws.join(format!("fifo{i}"))).collect();
    assert!(
        std::process::Command::new("mkfifo")
            .args(&fifos)
            .status()
            .unwrap()
            .success()
    );
    for i in 0..ROUNDS {
        std::os::unix::fs::symlink("config/.env", ws.join(format!("link{i}"))).unwrap();
        std::fs::hard_link(
            sandbox.root.join("outside/secret.txt"),
            ws.join(format!("hard{i}")),
        )
        .unwrap();
    }
    std::fs::write(ws.join("target"), "decoy").unwrap();
    let controller = permissive(&ws);
    let attacker = {
        let ws = ws.clone();
        std::thread::spawn(move || {
            let decoy = |i: usize| {
                let staged = ws.join(format!("decoy{i}"));
                std::fs::write(&staged, "decoy").unwrap();
                std::fs::rename(staged, ws.join("target")).unwrap();
            };
            for i in 0..ROUNDS {
                for planted in [format!("link{i}"), format!("hard{i}"), format!("fifo{i}")] {
                    std::fs::rename(ws.join(planted), ws.join("target")).unwrap();
                    decoy(i);
                }
            }
        })
    };
    loop {
        let read = run(&controller, "read_file", json!({"path": "target"}));
        assert!(
            !SECRETS.iter().any(|secret| read.content.contains(secret)),
            "leaked"
        );
        // Only the attacker's decoy or what this loop wrote into it may come back.
        assert!(
            read.is_error || read.content == "decoy" || read.content == "x",
            "{}",
            read.content
        );
        run(
            &controller,
            "write_file",
            json!({"path": "target", "content": "x"}),
        );
        if attacker.is_finished() {
            break;
        }
    }
    attacker.join().unwrap();
    assert_eq!(sandbox.read("outside/secret.txt"), "TOP SECRET");
    assert_eq!(sandbox.read("workspace/config/.env"), "API_KEY=hunter2");
}
