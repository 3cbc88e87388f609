//! File tools confined to one workspace directory with capability-based access (feature `cap-std`,
//! Unix only).
//!
//! A policy's path check is lexical: it judges the path the model wrote, and cannot see what the
//! file system puts behind it. These handlers make the object they touch the one that path names
//! lexically, or refuse:
//!
//! - **Every path is relative and free of `..`.** Absolute paths and any `..` component are
//!   refused, even one that would stay inside.
//! - **No symbolic link is followed, at any component.** A symlink in the middle of a path, at its
//!   end, in a chain, dangling, or pointing inside the workspace is refused by `read_file`,
//!   `list_dir` and `write_file` alike: `notes.txt -> config/.env` cannot read what a rule denying
//!   `config/*` protects.
//! - **Only regular files with one hard link are read or written.** A hard link shares its file
//!   with another name, perhaps outside the workspace or under a denied path; it is refused for
//!   reading and writing. Named pipes, sockets and devices are refused without blocking: opens
//!   carry `O_NONBLOCK`, and the type is checked before the open and again on the opened handle.
//! - **Checks and use cannot be split by a swap.** Each name is inspected without being followed,
//!   opened, and the handle must be the same object (device and inode); what changed in between is
//!   refused. Hard links and file types are judged on the opened handle. An existing file is
//!   truncated only after its handle passed these checks; a new one is created with `O_EXCL`,
//!   which never follows a link.
//! - **Reads are bounded while reading**: at most [`MAX_READ_BYTES`] bytes come back, and a file
//!   that has more (whatever its metadata claims, or grown since) is refused, never cut.
//! - **Underneath, cap-std confines every open to the workspace directory**, so no bug in the
//!   checks above can reach a file outside it through a path.
//!
//! Errors name the path the model gave and what was refused, never file contents or where the
//! workspace is on disk.
//!
//! Not covered: the workspace directory itself is trusted (it is the handle you pass); mount
//! points inside it are crossed like directories; a special file swapped in between check and open
//! is opened (non-blocking, `O_NOCTTY`) before it is refused, which some devices notice.

#[cfg(not(unix))]
compile_error!(
    "the `cap-std` feature (workspace_tools) needs Unix: hard-link counts and file types are \
     judged through Unix metadata"
);

mod confine;

use std::sync::Arc;

use cap_std::fs::Dir;
use serde_json::{Value, json};

use crate::contract::ToolSpec;
use crate::definition::{DefinitionError, ToolDefinition, ToolError};

/// The most bytes `read_file` returns; longer files are refused rather than cut silently.
pub const MAX_READ_BYTES: u64 = 1 << 20;

/// `read_file`, `list_dir` and `write_file`, each confined to `workspace`. Paths in arguments are
/// relative to the workspace. Unix only (feature `cap-std`).
///
/// # Guarantees
///
/// A policy's path check is lexical. These handlers touch the object the path names lexically,
/// or refuse, so that check judges the real file:
///
/// - absolute paths and any `..` component are refused, even a `..` that stays inside;
/// - no symbolic link is followed, in any component: in the middle or at the end of a path, in a
///   chain, dangling, or pointing inside the workspace (`notes.txt -> config/.env` cannot read
///   what a rule denying `config/*` protects); `list_dir` does not enter a linked directory;
/// - `read_file` and `write_file` touch only regular files with exactly one hard link, so a hard
///   link to a file outside the workspace or under a denied path is refused for both;
/// - named pipes, sockets and devices are refused without blocking: their type is checked before
///   the open and on the opened handle, and opens carry `O_NONBLOCK` and `O_NOCTTY`;
/// - each name is checked without being followed and then opened, and the handle must be the same
///   object (device and inode): a swap in between is refused as a change;
/// - `write_file` creates a new file with `O_EXCL` (which never follows a link) or replaces the
///   contents of a checked existing file, truncating only after the checks passed;
/// - `read_file` returns at most [`MAX_READ_BYTES`] bytes, counted while reading: a file that
///   has more, whatever its metadata says, is refused, never cut;
/// - underneath, cap-std confines every open to `workspace`;
/// - errors name the path the model gave and what was refused, never file contents or the
///   workspace's location on disk.
///
/// Not covered: the `workspace` directory itself is trusted; mount points inside it are entered
/// like directories; a special file swapped in between a check and its open is opened
/// (non-blocking) before it is refused, which some devices notice.
///
/// # Errors
///
/// Never in practice: the schemas are fixed. The `Result` surfaces a [`DefinitionError`] if one
/// ever failed to compile.
///
/// # Examples
///
/// ```no_run
/// use cap_std::{ambient_authority, fs::Dir};
///
/// let workspace = Dir::open_ambient_dir("/srv/agent-workspace", ambient_authority())?;
/// let registry = toolgate::ToolRegistry::new(toolgate::workspace::workspace_tools(workspace)?)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn workspace_tools(workspace: Dir) -> Result<Vec<ToolDefinition>, DefinitionError> {
    let workspace = Arc::new(workspace);
    let read = {
        let workspace = Arc::clone(&workspace);
        ToolDefinition::new(
            ToolSpec::new(
                "read_file",
                "Read a UTF-8 text file in the workspace.",
                path_only_schema(),
            ),
            move |args: &Value| -> Result<String, ToolError> {
                let path = path_argument(args)?;
                confine::read_text(&workspace, path).map_err(|refusal| refused(path, &refusal))
            },
        )?
    };
    let list = {
        let workspace = Arc::clone(&workspace);
        ToolDefinition::new(
            ToolSpec::new(
                "list_dir",
                "List the entries of a directory in the workspace (\".\" is the workspace).",
                path_only_schema(),
            ),
            move |args: &Value| -> Result<String, ToolError> {
                let path = path_argument(args)?;
                let names = confine::list_names(&workspace, path)
                    .map_err(|refusal| refused(path, &refusal))?;
                Ok(names.join("\n"))
            },
        )?
    };
    let write = ToolDefinition::new(
        ToolSpec::new(
            "write_file",
            "Create or replace a UTF-8 text file in the workspace.",
            json!({
                "type": "object",
                "properties": {"path": path_schema(), "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        ),
        move |args: &Value| -> Result<String, ToolError> {
            let path = path_argument(args)?;
            let content = args["content"].as_str().unwrap_or_default();
            confine::write_text(&workspace, path, content)
                .map_err(|refusal| refused(path, &refusal))?;
            Ok(format!("wrote {} bytes to {path}", content.len()))
        },
    )?;
    Ok(vec![read, list, write])
}

fn path_schema() -> Value {
    json!({"type": "string", "minLength": 1, "description": "A path relative to the workspace."})
}

fn path_only_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"path": path_schema()},
        "required": ["path"],
        "additionalProperties": false
    })
}

fn path_argument(args: &Value) -> Result<&str, ToolError> {
    // The schema already requires a string; this guards a handler reused outside the gate.
    args["path"]
        .as_str()
        .ok_or_else(|| ToolError::new("path must be a string"))
}

/// A refusal as the model should see it: the path it gave and what was refused, without the
/// workspace's location on disk or any file contents.
fn refused(path: &str, refusal: &confine::Refusal) -> ToolError {
    ToolError::new(format!("{path}: {refusal}"))
}
