//! The workspace file tools: what a lexical policy check cannot see (symlinks), the handler's
//! capability-based confinement refuses.
#![cfg(all(feature = "cap-std", unix))]

use std::path::PathBuf;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde_json::json;
use toolgate::*;

/// A fresh directory holding `workspace/` and, beside it, `outside/secret.txt`.
struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!("toolgate-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("workspace/sub")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(root.join("outside/secret.txt"), "TOP SECRET").unwrap();
        std::fs::write(root.join("workspace/notes.txt"), "hello").unwrap();
        std::fs::write(root.join("workspace/sub/inner.txt"), "inner").unwrap();
        let link = |target: PathBuf, name: &str| {
            std::os::unix::fs::symlink(target, root.join("workspace").join(name)).unwrap();
        };
        link(root.join("outside"), "link_to_outside_dir");
        link(root.join("outside/secret.txt"), "link_to_secret");
        link(
            PathBuf::from("../outside/secret.txt"),
            "relative_link_to_secret",
        );
        link(PathBuf::from("sub/inner.txt"), "link_inside");
        Self { root }
    }

    fn controller(&self) -> ToolController {
        let workspace =
            Dir::open_ambient_dir(self.root.join("workspace"), ambient_authority()).unwrap();
        let registry = ToolRegistry::new(workspace_tools(workspace).unwrap()).unwrap();
        // The policy allows every path that is lexically inside the workspace.
        let policy = RulePolicy::from_json(
            r#"{"rules": [
              {"id": "read-ws", "tool": "read_file", "action": "allow", "reason": "inside the workspace",
               "when": {"path_within": {"pointer": "/path", "roots": ["/workspace"]}}},
              {"id": "list-ws", "tool": "list_dir", "action": "allow", "reason": "inside the workspace",
               "when": {"path_within": {"pointer": "/path", "roots": ["/workspace"]}}},
              {"id": "write-ws", "tool": "write_file", "action": "allow", "reason": "inside the workspace",
               "when": {"path_within": {"pointer": "/path", "roots": ["/workspace"]}}}
            ]}"#,
            &registry,
        )
        .unwrap();
        ToolController::new(registry, policy)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn run(controller: &ToolController, tool: &str, arguments: serde_json::Value) -> ToolResult {
    match controller.handle(ToolCall::new("c", tool, arguments)) {
        Outcome::Completed(result) => result,
        other => panic!("expected a result, got {other:?}"),
    }
}

#[test]
fn files_inside_the_workspace_are_read_listed_and_written() {
    let sandbox = Sandbox::new("inside");
    let controller = sandbox.controller();
    assert_eq!(
        run(&controller, "read_file", json!({"path": "notes.txt"})),
        ToolResult::ok("c", "hello")
    );
    assert_eq!(
        run(&controller, "read_file", json!({"path": "link_inside"})).content,
        "inner"
    );
    let listing = run(&controller, "list_dir", json!({"path": "."}));
    assert!(
        listing.content.lines().any(|line| line == "sub/"),
        "{}",
        listing.content
    );
    let written = run(
        &controller,
        "write_file",
        json!({"path": "sub/new.txt", "content": "abc"}),
    );
    assert!(!written.is_error, "{}", written.content);
    assert_eq!(
        std::fs::read_to_string(sandbox.root.join("workspace/sub/new.txt")).unwrap(),
        "abc"
    );
}

#[test]
fn symlink_to_a_directory_outside_is_not_followed() {
    let sandbox = Sandbox::new("dirlink");
    let controller = sandbox.controller();
    // Lexically inside the workspace, so the policy allows it; the handler refuses.
    let result = run(
        &controller,
        "read_file",
        json!({"path": "link_to_outside_dir/secret.txt"}),
    );
    assert!(result.is_error, "{}", result.content);
    assert!(!result.content.contains("TOP SECRET"));
    let listing = run(
        &controller,
        "list_dir",
        json!({"path": "link_to_outside_dir"}),
    );
    assert!(listing.is_error, "{}", listing.content);
}

#[test]
fn symlink_to_a_file_outside_is_not_followed() {
    let sandbox = Sandbox::new("filelink");
    let controller = sandbox.controller();
    for link in ["link_to_secret", "relative_link_to_secret"] {
        let result = run(&controller, "read_file", json!({"path": link}));
        assert!(result.is_error, "{link}: {}", result.content);
        assert!(!result.content.contains("TOP SECRET"), "{link}");
    }
}

#[test]
fn writing_through_a_symlink_out_is_refused() {
    let sandbox = Sandbox::new("writelink");
    let controller = sandbox.controller();
    let result = run(
        &controller,
        "write_file",
        json!({"path": "link_to_outside_dir/planted.txt", "content": "x"}),
    );
    assert!(result.is_error, "{}", result.content);
    assert!(!sandbox.root.join("outside/planted.txt").exists());
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
    let workspace =
        Dir::open_ambient_dir(sandbox.root.join("workspace"), ambient_authority()).unwrap();
    let registry = ToolRegistry::new(workspace_tools(workspace).unwrap()).unwrap();
    let permissive =
        |_: &PreparedToolCall| PolicyDecision::allow(Reason::from_static("test: allow all"));
    let open = ToolController::new(registry, permissive);
    let secret = sandbox
        .root
        .join("outside/secret.txt")
        .display()
        .to_string();
    for path in ["../outside/secret.txt", secret.as_str()] {
        let result = run(&open, "read_file", json!({ "path": path }));
        assert!(
            result.is_error && !result.content.contains("TOP SECRET"),
            "{path}: {}",
            result.content
        );
    }
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
