//! `init --upstream NAME [--http ADDR] [--dir DIR] -- COMMAND [ARGS…]`: a first config, a starter
//! policy written from the upstream's own tools, and a client key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// What `init` writes, and for whom.
#[derive(Debug)]
pub struct Init<'a> {
    /// The directory written to.
    pub dir: &'a Path,
    /// The upstream's name (its tools' prefix).
    pub upstream: &'a str,
    /// The upstream's command and arguments.
    pub command: &'a [String],
    /// Serve Streamable HTTP here (loopback), with one client key; `None`: stdio only.
    pub http: Option<SocketAddr>,
    /// The client's principal id.
    pub client: &'a str,
    /// Overwrite files that exist.
    pub force: bool,
}

/// The most examples the starter policy holds: one per tool, for the first tools listed.
const MAX_EXAMPLES: usize = 8;

/// Writes `gateway.toml`, `policy.json` (every tool of the upstream asked for, with an example per
/// tool whose schema a call with empty values fits) and, with `http`, a client key printed once;
/// starts the upstream to read its tools, and stops it. Writes nothing that stays when something
/// fails.
pub async fn init(init: &Init<'_>) -> ExitCode {
    let config_path = init.dir.join("gateway.toml");
    let policy_path = init.dir.join("policy.json");
    if !valid_name(init.upstream) {
        eprintln!(
            "toolgate-mcp-gateway: --upstream {:?}: an upstream name is made of ASCII letters, digits, `_` and `-`, without `__`",
            init.upstream
        );
        return ExitCode::from(2);
    }
    if let Some(ip) = init.http.map(|address| address.ip())
        && !ip.is_loopback()
    {
        eprintln!(
            "toolgate-mcp-gateway: --http {ip}: init serves on a loopback address only (put TLS in front before serving further; see CONFIG.md)"
        );
        return ExitCode::from(2);
    }
    for path in [&config_path, &policy_path] {
        // A symbolic link counts as there, dangling or not: nothing is written through one.
        if std::fs::symlink_metadata(path).is_ok() && !init.force {
            eprintln!(
                "toolgate-mcp-gateway: {} exists; nothing was written (--force overwrites it)",
                path.display()
            );
            return ExitCode::FAILURE;
        }
    }
    if let Err(error) = std::fs::create_dir_all(init.dir) {
        eprintln!("toolgate-mcp-gateway: {}: {error}", init.dir.display());
        return ExitCode::FAILURE;
    }
    let key = match init.http.map(|_| new_key()).transpose() {
        Ok(key) => key,
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: no randomness from the OS: {error}");
            return ExitCode::FAILURE;
        }
    };
    // The upstream's tools are read through a config and a deny-all policy of their own, beside
    // the real ones: files that exist are not touched until everything worked.
    let scratch_config = init.dir.join(".init.gateway.toml");
    let scratch_policy = init.dir.join(".init.policy.json");
    let scratch = Written(vec![scratch_config.clone(), scratch_policy.clone()]);
    for path in &scratch.0 {
        // Left by an init that was killed: ours to remove (a link is removed, not followed).
        let _ = std::fs::remove_file(path);
    }
    for (path, text) in [
        (
            &scratch_config,
            config_text(init, key.as_deref(), ".init.policy.json"),
        ),
        (&scratch_policy, "{\"rules\": []}\n".to_owned()),
    ] {
        if let Err(error) = write_new(path, &text) {
            eprintln!("toolgate-mcp-gateway: {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    let Some((policy_text, tools, examples)) = starter_policy(&scratch_config, init.upstream).await
    else {
        return ExitCode::FAILURE;
    };
    drop(scratch);
    let config = config_text(init, key.as_deref(), "policy.json");
    // Without --force a file that appeared meanwhile is not overwritten, and a config written
    // before the policy failed is taken back.
    let mut created = Written(Vec::new());
    for (path, text) in [(&config_path, &config), (&policy_path, &policy_text)] {
        let written = if init.force {
            replace(path, text)
        } else {
            write_new(path, text).inspect(|()| created.0.push(path.clone()))
        };
        if let Err(error) = written {
            eprintln!("toolgate-mcp-gateway: {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    created.0.clear();
    println!(
        "Wrote {} and {} ({tools} tools of {:?}, each asked for; {examples} examples).",
        config_path.display(),
        policy_path.display(),
        init.upstream
    );
    if let Some(key) = key {
        println!(
            "\nThe key of client {:?} (shown once; only its SHA-256 is in the config):\n{key}",
            init.client
        );
    }
    println!(
        "\nNext:\n  toolgate-mcp-gateway tools --config {0}    # every tool and argument a rule can name\n  \
         (write rules in {1}: allow what is safe, keep asking for the rest)\n  \
         toolgate-mcp-gateway check --config {0}    # examples, dead and shadowed rules\n  \
         toolgate-mcp-gateway serve --config {0}",
        config_path.display(),
        policy_path.display()
    );
    ExitCode::SUCCESS
}

/// Scratch files, removed on drop: `init` leaves none behind.
struct Written(Vec<PathBuf>);

/// Writes `text` to a new file at `path`: fails if anything is there, a symbolic link included.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// Puts `text` at `path` in one step: written beside it, then renamed over it (a symbolic link
/// there is replaced, never written through).
fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|name| format!(".{}.new", name.to_string_lossy()))
        .unwrap_or_else(|| ".init.new".to_owned());
    let beside = path.with_file_name(name);
    let _ = std::fs::remove_file(&beside);
    write_new(&beside, text)?;
    std::fs::rename(&beside, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&beside);
    })
}

impl Drop for Written {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'))
}

fn new_key() -> Result<String, getrandom::Error> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)?;
    Ok(format!("tg_{}", crate::hex::encode(&secret)))
}

use super::key::toml_string;

/// The commented `gateway.toml`.
fn config_text(init: &Init<'_>, key: Option<&str>, policy: &str) -> String {
    let (command, args) = init
        .command
        .split_first()
        .map_or(("", &[][..]), |(c, a)| (c.as_str(), a));
    let args: Vec<String> = args.iter().map(|arg| toml_string(arg)).collect();
    let mut text = format!(
        "# Written by `toolgate-mcp-gateway init`; every key is described in CONFIG.md.\n\
         \n\
         # The MCP server put behind the gateway. Its tools are served as {name}__<tool>.\n\
         [upstreams.{name}]\n\
         command = {command}\n\
         args = [{args}]\n\
         \n\
         # Policy files, highest layer first: a deny in any layer wins, and a call no rule\n\
         # allows is denied. policy.json starts by asking a person about every call.\n\
         [policy]\n\
         layers = [{policy}]\n\
         \n\
         # An append-only, hash-chained record of every decision (`audit verify` checks it).\n\
         [audit]\n\
         jsonl = \"audit.jsonl\"\n",
        name = init.upstream,
        policy = toml_string(policy),
        command = toml_string(command),
        args = args.join(", "),
    );
    match (init.http, key) {
        (Some(address), Some(key)) => {
            let hash = crate::hex::encode(&Sha256::digest(key.as_bytes()));
            text.push_str(&format!(
                "\n# Streamable HTTP at http://{address}/mcp (stdio is off when http is set), and\n\
                 # the approval page at http://127.0.0.1:{admin}/approvals for people who sign in\n\
                 # with a client's key.\n\
                 [listen]\n\
                 http = \"{address}\"\n\
                 admin = \"127.0.0.1:{admin}\"\n\
                 \n\
                 # Each client sends `Authorization: Bearer <its key>`; only the key's SHA-256 is\n\
                 # kept here. `toolgate-mcp-gateway key --id NAME` makes another.\n\
                 [[clients]]\n\
                 id = {id}\n\
                 api_key_sha256 = \"{hash}\"\n",
                admin = address.port().checked_add(1).unwrap_or(address.port() - 1),
                id = toml_string(init.client),
            ));
        }
        _ => text.push_str(
            "\n# Served over stdio to the MCP client that starts the gateway. To serve over HTTP,\n\
             # with a key per client (`toolgate-mcp-gateway key --id NAME` makes one):\n\
             # [listen]\n\
             # http = \"127.0.0.1:8080\"\n\
             # [[clients]]\n\
             # id = \"me\"\n\
             # api_key_sha256 = \"…\"\n",
        ),
    }
    text
}

/// Starts the upstream of the config at `config_path` and writes a policy asking for each of its
/// tools, with the examples a registry of them accepts; the policy's text, how many tools and
/// how many examples. `None` (the problem printed) when the upstream does not start or list.
async fn starter_policy(config_path: &Path, upstream: &str) -> Option<(String, usize, usize)> {
    let config = super::config_or_report(config_path)?;
    let pins = super::pins_or_report(&config)?;
    let started = super::start_or_report(&config, &pins).await?;
    let specs: Vec<toolgate::ToolSpec> = started
        .served
        .iter()
        .map(|served| served.spec.clone())
        .collect();
    let definitions = std::mem::take(
        &mut *started
            .definitions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let registry = match toolgate::ToolRegistry::new(definitions) {
        Ok(registry) => registry,
        Err(error) => {
            eprintln!("toolgate-mcp-gateway: the upstream's tools: {error}");
            return None;
        }
    };
    if specs.is_empty() {
        return Some(("{\"rules\": []}\n".to_owned(), 0, 0));
    }
    let rule = json!({
        "id": format!("ask-{upstream}"),
        "tool": format!("{upstream}__*"),
        "action": "ask",
        "reason": format!("a person confirms each call of {upstream}'s tools until rules allow what is safe"),
    });
    let loads = |examples: &[Value]| {
        let policy = json!({"rules": [rule], "examples": examples});
        toolgate::RulePolicy::from_json(&policy.to_string(), &registry).is_ok()
    };
    // One example per tool whose schema a call with empty values fits: each kept only if the
    // policy loads with it (its arguments valid, its decision as written).
    let examples: Vec<Value> = specs
        .iter()
        .filter_map(|spec| {
            let example = json!({
                "name": format!("any call of {} is asked for", spec.name),
                "tool": spec.name,
                "arguments": empty_values(&spec.input_schema),
                "expect": "ask",
            });
            loads(std::slice::from_ref(&example)).then_some(example)
        })
        .take(MAX_EXAMPLES)
        .collect();
    let policy = json!({"rules": [rule], "examples": examples});
    if !loads(&examples) {
        eprintln!(
            "toolgate-mcp-gateway: the starter policy does not load against the upstream's tools"
        );
        return None;
    }
    // Rules first, then examples (a JSON object's keys are written sorted otherwise).
    let part = |value: &Value| {
        serde_json::to_string_pretty(value)
            .unwrap_or_default()
            .replace('\n', "\n  ")
    };
    let text = format!(
        "{{\n  \"rules\": {},\n  \"examples\": {}\n}}\n",
        part(&policy["rules"]),
        part(&policy["examples"])
    );
    Some((text, specs.len(), examples.len()))
}

/// Arguments for `schema` with an empty value for every required field: `""`, `0`, `false`,
/// `[]`, `{}` (or the first of an `enum`, the `const`).
fn empty_values(schema: &Value) -> Value {
    let mut arguments = serde_json::Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let field = &schema["properties"][name];
        let value = if let Some(constant) = field.get("const") {
            constant.clone()
        } else if let Some(first) = field["enum"].as_array().and_then(|values| values.first()) {
            first.clone()
        } else {
            match field["type"].as_str() {
                Some("integer" | "number") => json!(0),
                Some("boolean") => json!(false),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!(""),
            }
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
