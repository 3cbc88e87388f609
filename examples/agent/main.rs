//! An agent loop over toolgate: a scripted model (an OpenAI-format conversation replayed from
//! `examples/agent/conversation.json`) proposes tool calls; toolgate checks each against the
//! registry, the schemas and `examples/agent/policy.json`; file tools are confined to a workspace
//! directory with cap-std; a person approves or rejects each ask at the terminal.
//!
//! ```text
//! cargo run --features cap-std --example agent            # asks at the prompt (y/n)
//! cargo run --features cap-std --example agent -- --yes   # approves every ask
//! cargo run --features cap-std --example agent -- --no    # rejects every ask
//! ```

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde_json::Value;
use toolgate::providers::openai;
use toolgate::workspace::workspace_tools;
use toolgate::{
    ApprovalRequest, ApprovalResponse, Outcome, RulePolicy, ToolController, ToolRegistry,
    ToolResult,
};

#[derive(Clone, Copy, PartialEq)]
enum Answers {
    Prompt,
    Yes,
    No,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let answers = match std::env::args().nth(1).as_deref() {
        None => Answers::Prompt,
        Some("--yes") => Answers::Yes,
        Some("--no") => Answers::No,
        Some(other) => return Err(format!("unknown option {other:?}; use --yes or --no").into()),
    };
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agent");
    let workspace = Workspace::create()?;

    let dir = Dir::open_ambient_dir(&workspace.0, ambient_authority())?;
    let registry = ToolRegistry::new(workspace_tools(dir)?)?;
    let policy = RulePolicy::from_file(here.join("policy.json"), &registry)?;
    println!("policy {}", policy.digest());
    let tools = openai::tools(registry.specs(), false)?;
    println!(
        "model is shown {} tools: {}\n",
        tools.as_array().map_or(0, Vec::len),
        names(&tools)
    );
    let controller = ToolController::new(registry, policy);

    let conversation: Value =
        serde_json::from_str(&std::fs::read_to_string(here.join("conversation.json"))?)?;
    let mut history: Vec<Value> = Vec::new();
    // What each call did, for the model's last words: (call, ran?).
    let mut record: Vec<(String, bool)> = Vec::new();
    let mut stdin = std::io::stdin().lock();
    for turn in conversation["turns"].as_array().into_iter().flatten() {
        history.push(turn.clone());
        let calls = openai::tool_calls(turn)?;
        if calls.is_empty() {
            match turn["content"].as_str() {
                Some(text) => println!("model: {text}"),
                None => println!("model: {}", summary(&record)),
            }
            continue;
        }
        for parsed in calls {
            let result = match parsed {
                Err(result) => {
                    record.push((format!("call {} (unreadable)", result.call_id), false));
                    result
                }
                Ok(call) => {
                    println!(
                        "model calls {} {} ({})",
                        call.tool_name, call.arguments, call.call_id
                    );
                    let path = call.arguments["path"].as_str().unwrap_or_default();
                    record.push((format!("{} {path}", call.tool_name), false));
                    match controller.handle(call) {
                        Outcome::Completed(result) => result,
                        Outcome::PendingApproval(request) => {
                            let approve = ask(&request, answers, &mut stdin)?;
                            let response = if approve {
                                ApprovalResponse::approve(request.approval_id)
                            } else {
                                ApprovalResponse::reject(request.approval_id)
                            };
                            controller.resolve(response)?
                        }
                    }
                }
            };
            print_result(&result);
            if let Some((_, ran)) = record.last_mut() {
                *ran = !result.is_error;
            }
            history.push(openai::tool_message(&result));
        }
        println!();
    }
    println!(
        "transcript: {} messages; workspace files now:",
        history.len()
    );
    let mut entries: Vec<_> = std::fs::read_dir(&workspace.0)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let metadata = entry.metadata()?;
        let size = if metadata.is_dir() {
            "directory".to_owned()
        } else {
            format!("{} bytes", metadata.len())
        };
        println!("  {} ({size})", entry.file_name().to_string_lossy());
    }
    Ok(())
}

/// The model's last words, from what it was told: which calls ran and which did not.
fn summary(record: &[(String, bool)]) -> String {
    let list = |ran: bool| -> String {
        let calls: Vec<&str> = record
            .iter()
            .filter(|(_, r)| *r == ran)
            .map(|(call, _)| call.trim_end())
            .collect();
        if calls.is_empty() {
            "none".to_owned()
        } else {
            calls.join("; ")
        }
    };
    format!("These ran: {}. These did not: {}.", list(true), list(false))
}

fn ask(
    request: &ApprovalRequest,
    answers: Answers,
    stdin: &mut impl BufRead,
) -> Result<bool, std::io::Error> {
    println!(
        "  approval needed ({}): {} {}",
        request.reason, request.call.tool_name, request.call.arguments
    );
    let approve = match answers {
        Answers::Yes => true,
        Answers::No => false,
        Answers::Prompt => {
            print!("  approve? [y/N] ");
            std::io::stdout().flush()?;
            let mut line = String::new();
            stdin.read_line(&mut line)?;
            println!();
            matches!(line.trim(), "y" | "Y" | "yes")
        }
    };
    println!("  person {}", if approve { "approved" } else { "rejected" });
    Ok(approve)
}

fn print_result(result: &ToolResult) {
    let status = if result.is_error { "error" } else { "ok" };
    let content = result.content.trim_end().replace('\n', "\n      ");
    println!("  -> [{}] {status}: {content}", result.call_id);
}

fn names(tools: &Value) -> String {
    let names: Vec<&str> = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    names.join(", ")
}

/// A fresh workspace directory with a few files, removed when the example ends.
struct Workspace(PathBuf);

impl Workspace {
    fn create() -> std::io::Result<Self> {
        let root = std::env::temp_dir().join(format!("toolgate-agent-{}", std::process::id()));
        std::fs::create_dir_all(root.join("config"))?;
        std::fs::write(root.join("notes.txt"), "Meeting on Friday at 10.\n")?;
        std::fs::write(root.join("config/.env"), "API_KEY=sk-not-for-the-model\n")?;
        Ok(Self(root))
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
