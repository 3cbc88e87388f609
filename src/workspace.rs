//! File tools confined to one workspace directory with capability-based access (feature `cap-std`).
//!
//! A policy's path check is lexical: it cannot see symlinks. These handlers close that gap by
//! opening every path *through* a [`cap_std::fs::Dir`] handle: absolute paths, `..` past the
//! workspace and symlinks that lead outside it all fail inside the handler, whatever the policy
//! allowed.

use std::io::ErrorKind;
use std::sync::Arc;

use cap_std::fs::Dir;
use serde_json::{Value, json};

use crate::contract::ToolSpec;
use crate::definition::{DefinitionError, ToolDefinition, ToolError};

/// The most bytes `read_file` returns; longer files are refused rather than cut silently.
pub const MAX_READ_BYTES: u64 = 1 << 20;

/// `read_file`, `list_dir` and `write_file`, each confined to `workspace`. Paths in arguments are
/// relative to the workspace.
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
/// let registry = toolgate::ToolRegistry::new(toolgate::workspace_tools(workspace)?)?;
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
                let file = workspace
                    .open(path)
                    .map_err(|error| io_error(path, &error))?;
                let length = file
                    .metadata()
                    .map_err(|error| io_error(path, &error))?
                    .len();
                if length > MAX_READ_BYTES {
                    return Err(ToolError::new(format!(
                        "{path}: file has {length} bytes, more than the {MAX_READ_BYTES} read_file returns"
                    )));
                }
                let bytes =
                    std::io::read_to_string(file).map_err(|error| io_error(path, &error))?;
                Ok(bytes)
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
                let entries = workspace
                    .read_dir(path)
                    .map_err(|error| io_error(path, &error))?;
                let mut names = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(|error| io_error(path, &error))?;
                    let mut name = entry.file_name().to_string_lossy().into_owned();
                    if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                        name.push('/');
                    }
                    names.push(name);
                }
                names.sort();
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
            workspace
                .write(path, content)
                .map_err(|error| io_error(path, &error))?;
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

/// An I/O failure as the model should see it: the path it gave and what went wrong, without the
/// workspace's location on disk.
fn io_error(path: &str, error: &std::io::Error) -> ToolError {
    let what = match error.kind() {
        ErrorKind::NotFound => "not found".to_owned(),
        ErrorKind::PermissionDenied => {
            "outside the workspace or not permitted (absolute paths, `..` past the workspace and symlinks leading out are refused)".to_owned()
        }
        ErrorKind::IsADirectory => "is a directory".to_owned(),
        ErrorKind::NotADirectory => "is not a directory".to_owned(),
        ErrorKind::InvalidData => "is not UTF-8 text".to_owned(),
        _ => error.to_string(),
    };
    ToolError::new(format!("{path}: {what}"))
}
