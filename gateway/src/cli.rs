//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const ABOUT: &str = "Put toolgate in front of MCP servers: every tool call resolved by exact name, \
its arguments validated against the tool's schema, decided by your policy (allow / ask / deny, \
default deny), held for a person when the policy asks, and recorded in an audit log.";

const AFTER_HELP: &str = "\
A first session (`init` writes steps 1 and 3 for one upstream, asking about every call):
  1. Write a config naming your upstream servers (see gateway/CONFIG.md):
       [upstreams.files]
       command = \"npx\"
       args = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/srv\"]
       [policy]
       layers = [\"policy.json\"]
  2. See what they offer, with every argument field a rule can name:
       toolgate-mcp-gateway tools --config gateway.toml
  3. Write policy.json against those names (files__read_file, /path, ...), with \"examples\" of
     calls and the decision each must get, then check (examples, dead and shadowed rules):
       toolgate-mcp-gateway check --config gateway.toml
     Before changing it, see every call the change decides differently:
       toolgate-mcp-gateway policy diff policy.json policy.new.json --config gateway.toml
  4. Serve it to your MCP client over stdio:
       toolgate-mcp-gateway serve --config gateway.toml
     or over Streamable HTTP, each client with its own key (`key` makes one):
       [listen]
       http = \"127.0.0.1:8080\"
       [[clients]]
       id = \"alice\"
       api_key_sha256 = \"…\"
  5. Answer calls the policy holds for a person (they wait in gateway.approvals.sqlite, across
     restarts) from a client that asks you, in the approval page the admin listener serves to
     people who sign in with a client's key:
       [listen]
       admin = \"127.0.0.1:9090\"      # then open http://127.0.0.1:9090/approvals
     or from a shell, as the principal your key names:
       toolgate-mcp-gateway approvals list --config gateway.toml
       toolgate-mcp-gateway approvals approve ID --key-env MY_KEY --config gateway.toml
     A rule can say who may answer: \"approvers\": {\"groups\": [\"security\"], \"four_eyes\": true}

The one-upstream form of earlier versions still works, tool names unchanged:
  toolgate-mcp-gateway --policy policy.json [--audit audit.jsonl] -- COMMAND [ARGS...]

Logs go to stderr (TOOLGATE_LOG=debug for more of the gateway's own lines; the MCP SDK stays at
warn unless named; TOOLGATE_LOG_FORMAT=json for JSON lines); in stdio mode stdout is the protocol.
Exit status: 0 success, 1 a problem named on stderr, 2 a usage error.";

#[derive(Debug, Parser)]
#[command(
    name = "toolgate-mcp-gateway",
    version,
    about = ABOUT,
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// One-upstream form: the policy file (JSON rules) for the server after `--`.
    #[arg(long, value_name = "POLICY.json", requires = "upstream")]
    pub policy: Option<PathBuf>,

    /// One-upstream form: append an audit event per call to this JSON Lines file.
    #[arg(long, value_name = "AUDIT.jsonl", requires = "policy")]
    pub audit: Option<PathBuf>,

    /// One-upstream form: the MCP server's command and arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND", requires = "policy")]
    pub upstream: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the config's upstreams, gated, to MCP clients: over stdio, and over Streamable HTTP
    /// at /mcp when `listen.http` is set (with /metrics, /healthz and the approval page on
    /// `listen.admin`). Stops on SIGINT or SIGTERM, or when the stdio client disconnects.
    Serve {
        /// The gateway's config file (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Start the upstreams and print their tools as JSON: the names they are served under and
    /// every argument field as a JSON Pointer with its type — what a policy rule can name.
    Tools {
        /// The gateway's config file (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Load everything the config names (upstreams, tools, policy layers, audit, approvals)
    /// without serving. Exit 0 with a summary, or 1 with every problem found.
    Check {
        /// The gateway's config file (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Start here: write a commented gateway.toml for one upstream command, a starter
    /// policy.json that asks a person about every call of its tools (with an example per tool,
    /// which `check` runs), and — with --http — a client key, printed once. Starts the upstream
    /// to read its tools, then stops it; writes nothing if that fails, and overwrites nothing
    /// without --force.
    #[command(after_help = "Example:
  toolgate-mcp-gateway init --upstream files -- npx -y @modelcontextprotocol/server-filesystem /srv
  toolgate-mcp-gateway init --upstream files --http 127.0.0.1:8080 --dir /etc/toolgate -- npx -y @modelcontextprotocol/server-filesystem /srv")]
    Init {
        /// The upstream's name: its tools are served as NAME__tool.
        #[arg(long, value_name = "NAME")]
        upstream: String,
        /// Serve Streamable HTTP at this loopback address (and the approval page on the next
        /// port), with one client key; without it, stdio only.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Where to write gateway.toml and policy.json.
        #[arg(long, value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        /// The principal id of the client the key is for.
        #[arg(long, value_name = "ID", default_value = "me")]
        client: String,
        /// Overwrite gateway.toml and policy.json if they exist.
        #[arg(long)]
        force: bool,
        /// The upstream MCP server's command and arguments, after `--`.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Make a new API key for an HTTP client: prints the key (give it to the client, once) and
    /// the `[[clients]]` entry holding only its SHA-256 (put it in the config).
    Key {
        /// The client's principal id, as rules and audit events name it.
        #[arg(long)]
        id: String,
        /// A group the client is in (repeat for more).
        #[arg(long = "group", value_name = "GROUP")]
        groups: Vec<String>,
    },
    /// Start the upstreams and pin every tool definition they offer now, accepting changes: a
    /// tool whose description or schema changed since it was pinned is not served until this
    /// runs. Prints what changed.
    Pin {
        /// The gateway's config file (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Work with an audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Answer the calls waiting for a person, from a shell: against the approval store the
    /// config names (SQLite or PostgreSQL; not one kept in a gateway's memory).
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
    /// Prove what a policy allows: compare two policies over the config's tools, or explain a
    /// decision.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Work with the request-state key file (what seals the state of a call held for approval).
    StateKey {
        #[command(subcommand)]
        command: StateKeyCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Compare two policies on every tool of the config's upstreams (read from the pins file
    /// when it keeps every upstream's definitions — nothing is started —, else started once to
    /// list them). One JSON line per tool: `same` (every valid call is decided alike: proven, not
    /// sampled), `differs` with witnesses (valid calls the two decide differently, one per pair of
    /// decisions), or `unknown` with the reason (conditions the analysis cannot cut into classes:
    /// globs, commands, list elements; flow rules and rate limits, which are not compared: when
    /// they differ every tool is unknown). Exit 0 when every tool is the same, 3 when one differs
    /// or is unknown, 1 on a problem.
    #[command(
        after_help = "Example, before putting a change to policy.json in force:
  toolgate-mcp-gateway policy diff policy.json policy.new.json --config gateway.toml
A stack of layers is files separated by commas, highest first: org.json,project.json"
    )]
    Diff {
        /// The policy in force (a JSON policy file, or layers separated by commas).
        old: String,
        /// The policy to compare it with.
        new: String,
        /// The gateway's config file (TOML): its upstreams' tools are compared.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Explain how the config's policy layers decide one call: the rule, its layer (file) or
    /// the default deny, for a call not allowed one change that would be allowed (an argument,
    /// or the caller), and the flow rules, provenance conditions and limits a session still
    /// judges it by (`in_session`) — never quoting an argument value.
    #[command(after_help = "Example:
  toolgate-mcp-gateway policy explain files__read_file '{\"path\": \"/etc/passwd\"}' --config gateway.toml
  {\"decision\": {\"action\": \"deny\", ...}, \"summary\": \"denied: no rule allows this call (default deny)\",
   \"allowed_if\": \"allowed if /path were under /srv\", \"in_session\": []}")]
    Explain {
        /// The served tool name.
        tool: String,
        /// The arguments, as JSON.
        arguments: String,
        /// The caller's principal id (absent: a call made for no principal, as over stdio).
        #[arg(long = "as", value_name = "ID")]
        principal: Option<String>,
        /// A group of the caller (repeat for more).
        #[arg(long = "group", value_name = "GROUP", requires = "principal")]
        groups: Vec<String>,
        /// The gateway's config file (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum StateKeyCommand {
    /// Put a fresh key first in the config's key file and keep the previous one (states it
    /// sealed in the last 15 minutes still open); older keys are dropped. Restart the gateway
    /// (every instance sharing the file) for it to seal with the new key.
    Rotate {
        /// The gateway's config file (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check an audit log's hash chain entry by entry (a JSON Lines file, or the PostgreSQL log
    /// with --postgres-env); print its length, last hash and Merkle tree head (RFC 9162). Keep
    /// the tree head elsewhere: with --head, a later log must extend it (no entry cut off or
    /// rewritten).
    Verify {
        #[command(flatten)]
        log: AuditLogArgs,
        /// A tree head printed earlier (`size N root sha256:…`) that the log must extend.
        #[arg(long, value_name = "HEAD")]
        head: Option<String>,
    },
    /// Make a checkpoint signing key (Ed25519, C2SP note format): the private key is written to
    /// FILE (mode 600, refused if FILE exists), the verifier key printed — give it to whoever
    /// checks the log.
    Key {
        /// The key's name, e.g. audit.example.com/gateway (no spaces or '+').
        #[arg(long)]
        name: String,
        /// Where to write the private key.
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
    },
    /// Print the log's checkpoint (C2SP tlog-checkpoint: origin, size, root hash) signed with
    /// the key in --key-file. Keep it, publish it, or have a witness cosign it.
    Checkpoint {
        /// The audit log.
        file: PathBuf,
        /// The private key file `audit key` wrote.
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
        /// The log's origin line (its unique name), e.g. audit.example.com/gateway.
        #[arg(long)]
        origin: String,
    },
    /// Check the log against a signed checkpoint taken earlier: the signature verifies with
    /// --key, the origin matches, and no entry before the checkpoint's size was cut off or
    /// rewritten.
    VerifyCheckpoint {
        /// The audit log.
        file: PathBuf,
        /// The signed checkpoint (a file).
        #[arg(long, value_name = "FILE")]
        checkpoint: PathBuf,
        /// The log's verifier key (`name+id+key`, as `audit key` printed it): it must have
        /// signed the checkpoint.
        #[arg(long = "key", value_name = "KEY")]
        key: String,
        /// A witness's verifier key whose cosignature is required; repeat for each witness
        /// (every one named must have cosigned).
        #[arg(long = "witness", value_name = "KEY")]
        witnesses: Vec<String>,
        /// The origin the checkpoint must name.
        #[arg(long)]
        origin: String,
    },
    /// Print the receipt of one entry: its index, the tree size and the inclusion proof, with
    /// the tree head — verifiable from the entry's line alone (toolgate::audit::Receipt::verify).
    Prove {
        #[command(flatten)]
        log: AuditLogArgs,
        /// The entry's `seq` (entries are numbered from 0).
        #[arg(long)]
        index: u64,
    },
    /// Show that given arguments are the ones an entry commits to: the entry's salted
    /// commitment is opened with its salt (kept apart, in FILE.salts). Exit 0 when they are, 3
    /// when the entry commits to other arguments or its salt was erased. The log is verified
    /// first.
    Disclose {
        #[command(flatten)]
        log: AuditLogArgs,
        /// The entry's `seq` (entries are numbered from 0).
        #[arg(long)]
        index: u64,
        /// The arguments, as JSON (any spelling of the same value).
        #[arg(long, value_name = "JSON")]
        arguments: String,
    },
    /// Erase one entry's salt (a person's data erased): nothing can be confirmed about its
    /// arguments any more, and every hash, proof and checkpoint still verifies. Stop the gateway
    /// writing a file log first (the log's lock is taken); the PostgreSQL log needs no stop.
    Forget {
        #[command(flatten)]
        log: AuditLogArgs,
        /// The entry's `seq` (entries are numbered from 0).
        #[arg(long)]
        index: u64,
    },
    /// Write the PostgreSQL audit log out as a JSON Lines file, verified as it is written: every
    /// command above then reads the file (checkpoints, proofs, an outside RFC 9162 verifier) and
    /// finds the tree head `audit verify --postgres-env` prints. Salts stay in the database.
    Export {
        /// The environment variable holding the PostgreSQL URL (as `audit.postgres_url_env`
        /// names it).
        #[arg(long, value_name = "VAR")]
        postgres_env: String,
        /// The file to write (refused if it exists; removed again if the export fails).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// Which audit log a command reads: a JSON Lines file, or the PostgreSQL log.
#[derive(Debug, Args)]
pub struct AuditLogArgs {
    /// The audit log, a JSON Lines file.
    #[arg(
        value_name = "FILE",
        required_unless_present = "postgres_env",
        conflicts_with = "postgres_env"
    )]
    file: Option<PathBuf>,
    /// Instead of FILE: the PostgreSQL audit log whose URL is in this environment variable (as
    /// `audit.postgres_url_env` names it).
    #[arg(long, value_name = "VAR")]
    postgres_env: Option<String>,
}

/// The audit log a command was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditLog {
    /// A JSON Lines file.
    File(PathBuf),
    /// The PostgreSQL log whose URL is in this environment variable.
    Postgres(String),
}

impl AuditLogArgs {
    /// The log named (clap has made sure exactly one of FILE and --postgres-env was given).
    pub fn log(self) -> AuditLog {
        match (self.file, self.postgres_env) {
            (_, Some(env)) => AuditLog::Postgres(env),
            (Some(file), None) => AuditLog::File(file),
            (None, None) => unreachable!("clap requires FILE unless --postgres-env is given"),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// The calls waiting: id, tool, who asked, why.
    List {
        /// The gateway's config file (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// One waiting call in full: its whole arguments (canonical JSON, pretty-printed, never
    /// cut) and the digests the approval is bound to.
    Show {
        /// The approval's id, as `list` prints it.
        id: String,
        /// The gateway's config file (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Approve one waiting call: it is decided again by the policy in force and, if still
    /// allowed, runs here once (this command starts the upstreams); its result is printed and
    /// the audit log names you as the approver.
    Approve {
        /// The approval's id.
        id: String,
        #[command(flatten)]
        answer: AnswerArgs,
    },
    /// Reject one waiting call: nothing runs; the audit log names you.
    Reject {
        /// The approval's id.
        id: String,
        #[command(flatten)]
        answer: AnswerArgs,
    },
}

/// Who answers, and how they prove it.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The gateway's config file (TOML).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The environment variable holding your API key (one of the config's `[[clients]]`) or
    /// token (one its `[oauth]` or `[jwt]` accepts): you answer as the principal it names, with its
    /// groups.
    /// Required when the config names identities.
    #[arg(long, value_name = "VAR")]
    pub key_env: Option<String>,
    /// Your name, for a config that names no identities (a stdio-only gateway); with
    /// identities, it must be the name your key proves, if given.
    #[arg(long = "as", value_name = "APPROVER")]
    pub approver: Option<String>,
    /// A note for the audit log.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// The call's digest, as `approvals show` prints it ("arguments digest"): the answer is for
    /// that call only, checked in the same step that takes it — if the id holds another call,
    /// nothing is answered and it keeps waiting. Without it the answer is for whatever the id
    /// holds.
    #[arg(long, value_name = "DIGEST")]
    pub digest: Option<String>,
}
