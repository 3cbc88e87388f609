//! The gateway's config file (TOML): what it serves, under which policy, recorded where.
//!
//! Every key is documented in `gateway/CONFIG.md`. Unknown keys are refused, and every error
//! names the file and the key (`gateway.toml: upstreams.files.comand: unknown key …`), so a typo
//! never silently drops a setting. Relative paths are read relative to the config file's
//! directory, not the working directory, so a config means the same wherever it is started.

mod checkpoints;
mod listen;
mod load;
mod names;
mod written_identities;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

pub use load::load;
#[cfg(test)]
pub(crate) use load::parse;

/// The separator between an upstream's name and its tool's in a served name, by default.
pub const DEFAULT_SEPARATOR: &str = "__";

/// A loaded, checked config: paths resolved, exactly one transport per upstream.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it was read from (for messages).
    pub file: PathBuf,
    /// Served names are `<upstream><separator><tool>`; `None` serves tool names unchanged (the
    /// legacy command-line form, one upstream).
    pub separator: Option<String>,
    /// The upstreams, by name, in name order.
    pub upstreams: Vec<UpstreamConfig>,
    /// Policy files, highest layer first.
    pub policy_layers: Vec<PathBuf>,
    /// Where the audit log goes, if anywhere.
    pub audit: Option<AuditTarget>,
    /// Bytes of zeros a JSON Lines audit log keeps written ahead of its lines
    /// (`audit.jsonl_reserve_mib`; 0: it appends).
    pub audit_jsonl_reserve: u64,
    /// Signed checkpoints of a JSON Lines audit log, written on a schedule.
    pub checkpoints: Option<CheckpointConfig>,
    /// Where pending approvals are kept.
    pub approvals: ApprovalStoreConfig,
    /// Where each call held for a person is announced, if anywhere.
    pub approvals_webhook: Option<WebhookConfig>,
    /// The approval page on the admin listener, if served (`listen.admin` set, someone able to
    /// sign in, and `approvals.page` not false).
    pub approval_page: Option<ApprovalPageConfig>,
    /// The bounds on what upstreams may send and how long they may take.
    pub limits: Limits,
    /// How often the policy files are read again.
    pub policy_poll: Duration,
    /// Where clients reach the gateway.
    pub listen: Listen,
    /// The clients allowed over HTTP, each with its API key's hash and its principal.
    pub clients: Vec<ApiClient>,
    /// Callers identified by JSON Web Tokens, if configured.
    pub jwt: Option<crate::jwt::JwtConfig>,
    /// The gateway as an OAuth resource server (`[oauth]`), if configured.
    pub oauth: Option<crate::oauth::settings::OAuthSettings>,
    /// The tool pins file (`gateway.pins.json` beside `gateway.toml`); `None`: no pinning.
    pub pins: Option<PathBuf>,
    /// Where the request-state keys come from.
    pub state_key: StateKeySource,
    /// Rate-limit counters shared by instances in PostgreSQL, if configured (otherwise each
    /// instance counts alone, in memory).
    pub shared_counters: Option<SharedCounters>,
    /// Where OpenTelemetry spans go (`[traces]`); `None`: nowhere.
    pub traces: Option<crate::traces::TracesConfig>,
    /// The named tool sets, each served at its own path (`[tool_sets.NAME]`), in name order.
    pub tool_sets: Vec<crate::tool_sets::ToolSetConfig>,
}

/// `[rate_limits]` with PostgreSQL: where the counters are and whose they are.
#[derive(Debug, Clone)]
pub struct SharedCounters {
    /// The environment variable holding the PostgreSQL URL.
    pub url_env: String,
    /// The deployment the operator named: instances with the same name count together, others
    /// apart, whatever their config files are called.
    pub deployment: String,
}

/// Where the gateway listens.
#[derive(Debug, Clone)]
pub struct Listen {
    /// Serve one client over stdin and stdout.
    pub stdio: bool,
    /// Serve MCP over Streamable HTTP at `/mcp` on this address.
    pub http: Option<std::net::SocketAddr>,
    /// Serve `/metrics` (Prometheus text) on this address, apart from the MCP listener.
    pub admin: Option<std::net::SocketAddr>,
    /// The `Host` header values HTTP requests may carry (DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// The browser origins that may call `/mcp` (`scheme://host[:port]`, port `*` for any); empty:
    /// a request carrying an `Origin` is refused.
    pub allowed_origins: Vec<String>,
    /// Bounds on Streamable HTTP sessions (legacy revision).
    pub sessions: SessionLimits,
}

/// How many Streamable HTTP sessions may be open, and how long one may sit idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Open sessions in all (`listen.max_sessions`).
    pub max_total: usize,
    /// Open sessions of one principal (`listen.max_sessions_per_principal`).
    pub max_per_principal: usize,
    /// A session no request has named for this long is closed (`listen.session_idle_timeout_s`).
    pub idle_timeout: std::time::Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_total: 1024,
            max_per_principal: 32,
            idle_timeout: std::time::Duration::from_secs(1800),
        }
    }
}

/// A client allowed over HTTP: whoever presents the API key whose SHA-256 is `key_sha256` is
/// `principal`.
#[derive(Debug, Clone)]
pub struct ApiClient {
    /// Who the key's holder is.
    pub principal: toolgate::Principal,
    /// The SHA-256 of the key; the key itself is never stored.
    pub key_sha256: [u8; 32],
    /// Whether the key signs a person in to the approval page (`page_sign_in`, default true):
    /// `false` for a model's own client, which must never answer approvals.
    pub page_sign_in: bool,
}

/// One upstream MCP server.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Its name: the prefix of its served tools.
    pub name: String,
    /// Its tools are served under their own names, unprefixed (`own_names = true`; one upstream
    /// at most), so the gateway can stand in for it without renaming anything.
    pub own_names: bool,
    /// How to reach it.
    pub transport: UpstreamTransport,
    /// Its requests passed to the gateway's clients (`forward = ["sampling", "elicitation"]`),
    /// each by the name of the gate the policy judges it as; none by default.
    pub forwarded: Forwarded,
}

/// The gates of an upstream's requests the config forwards to clients: `Some(name)` for each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Forwarded {
    /// Its `sampling/createMessage`, judged as a call of this gate.
    pub sampling: Option<String>,
    /// Its `elicitation/create`, judged as a call of this gate.
    pub elicitation: Option<String>,
}

/// How an upstream is reached.
#[derive(Debug, Clone)]
pub enum UpstreamTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the gateway's environment for it.
        env: BTreeMap<String, String>,
        /// Its working directory (default: the config file's directory).
        cwd: Option<PathBuf>,
    },
    /// A remote server speaking Streamable HTTP.
    Http {
        /// Its MCP endpoint, `http://` or `https://`.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// The environment variable holding a bearer token for it, if it needs one.
        bearer_token_env: Option<String>,
    },
}

/// Where audit events are written.
#[derive(Debug, Clone)]
pub enum AuditTarget {
    /// A hash-chained JSON Lines file.
    Jsonl(PathBuf),
    /// A PostgreSQL table, the URL read from this environment variable.
    Postgres {
        /// The variable holding the connection URL.
        url_env: String,
    },
}

/// Signed checkpoints of the JSON Lines audit log: the key, the log's origin line, where the
/// latest is written, how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// The private key file `audit key` wrote.
    pub key_file: PathBuf,
    /// The log's origin (its unique name).
    pub origin: String,
    /// Where the latest signed checkpoint is written (replaced whole each time).
    pub file: PathBuf,
    /// How often.
    pub every: std::time::Duration,
    /// Where each new checkpoint is also POSTed (`text/plain`), if anywhere.
    pub webhook_url: Option<String>,
}

/// Whether a webhook may be sent to `url`: over HTTPS, or plain HTTP to this host only.
pub(crate) fn webhook_url_allowed(url: &str) -> bool {
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|start| {
            url.strip_prefix(start)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/']))
        });
    url.starts_with("https://") || loopback
}

/// The approvals webhook: a URL POSTed for every call held for a person.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// `https://…`, or `http://` to a loopback host.
    pub url: String,
    /// The variable holding a bearer token to send, if any.
    pub bearer_token_env: Option<String>,
    /// Whether a notice carries the held call's arguments (`approvals.webhook_arguments`).
    pub arguments: bool,
}

/// The approval page on the admin listener.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalPageConfig {
    /// Mark the session cookie `Secure` (people reach the page over HTTPS through a proxy).
    pub secure_cookies: bool,
}

/// Where the keys sealing request states come from.
#[derive(Debug, Clone)]
pub enum StateKeySource {
    /// A fresh key each start (the one-upstream form): a state does not outlive the process.
    PerProcess,
    /// One key in this environment variable (`gateway.state_key_env`).
    Env(String),
    /// A key file (`gateway.state_key_file`, or `NAME.state-key` beside the config, made on first
    /// start when `create`).
    File {
        /// The key file.
        path: PathBuf,
        /// Whether a missing file is made with a fresh key (only the default one is).
        create: bool,
    },
}

/// Where pending approvals are kept.
#[derive(Debug, Clone)]
pub enum ApprovalStoreConfig {
    /// In this process: lost when it stops.
    Memory,
    /// A SQLite file: survives restarts.
    Sqlite(PathBuf),
    /// PostgreSQL, shared by several gateway instances; the URL read from this variable.
    Postgres {
        /// The variable holding the connection URL.
        url_env: String,
    },
}

/// Bounds on upstreams.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest message an upstream may send, in bytes; a larger reply ends its call with an
    /// error result.
    pub max_message_bytes: usize,
    /// How long an upstream may take to start and answer the handshake.
    pub startup_timeout: Duration,
    /// How long one `tools/call` may take upstream.
    pub call_timeout: Duration,
    /// The most `tools/list` pages read from one upstream.
    pub max_list_pages: usize,
    /// How long listing one upstream's tools may take, all pages together.
    pub list_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 4 * 1024 * 1024,
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(300),
            max_list_pages: 64,
            list_timeout: Duration::from_secs(30),
        }
    }
}

// The file as written. Kept apart from `Config` so that what TOML accepts (every key optional,
// strings for enums) is checked once, in `load`, and the rest of the gateway sees only a
// consistent config.

// The identity tables as written (`[jwt]`, `[oauth]`) live apart; children of this module read
// them here as they read the other sections.
use written_identities::{IssuerSection, JwtSection, OAuthPageSection, OAuthSection};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    gateway: GatewaySection,
    #[serde(default)]
    upstreams: BTreeMap<String, UpstreamSection>,
    #[serde(default)]
    policy: PolicySection,
    audit: Option<AuditSection>,
    #[serde(default)]
    approvals: ApprovalsSection,
    #[serde(default)]
    limits: LimitsSection,
    #[serde(default)]
    listen: ListenSection,
    #[serde(default)]
    clients: Vec<ClientSection>,
    #[serde(default)]
    rate_limits: RateLimitsSection,
    jwt: Option<JwtSection>,
    oauth: Option<OAuthSection>,
    traces: Option<TracesSection>,
    #[serde(default)]
    tool_sets: BTreeMap<String, ToolSetSection>,
}

/// `[tool_sets.NAME]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolSetSection {
    tools: Option<Vec<String>>,
    policy: Option<PathBuf>,
}

/// `[traces]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TracesSection {
    otlp_endpoint: Option<String>,
    service_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListenSection {
    stdio: Option<bool>,
    http: Option<String>,
    admin: Option<String>,
    allow_plain_http: Option<bool>,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Option<Vec<String>>,
    max_sessions: Option<i64>,
    max_sessions_per_principal: Option<i64>,
    session_idle_timeout_s: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientSection {
    id: String,
    #[serde(default)]
    groups: Vec<String>,
    api_key_sha256: String,
    page_sign_in: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct GatewaySection {
    separator: Option<String>,
    policy_poll_ms: Option<u64>,
    state_key_env: Option<String>,
    state_key_file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimitsSection {
    postgres_url_env: Option<String>,
    deployment: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpstreamSection {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bearer_token_env: Option<String>,
    #[serde(default)]
    own_names: bool,
    #[serde(default)]
    forward: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicySection {
    #[serde(default)]
    layers: Vec<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditSection {
    jsonl: Option<PathBuf>,
    postgres_url_env: Option<String>,
    checkpoint_key_file: Option<PathBuf>,
    checkpoint_origin: Option<String>,
    checkpoint_file: Option<PathBuf>,
    checkpoint_every_s: Option<u64>,
    checkpoint_webhook_url: Option<String>,
    jsonl_reserve_mib: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsSection {
    store: Option<String>,
    path: Option<PathBuf>,
    postgres_url_env: Option<String>,
    webhook_url: Option<String>,
    webhook_bearer_token_env: Option<String>,
    webhook_arguments: Option<bool>,
    page: Option<bool>,
    page_secure_cookies: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsSection {
    max_message_bytes: Option<usize>,
    startup_timeout_ms: Option<u64>,
    call_timeout_ms: Option<u64>,
    max_list_pages: Option<usize>,
    list_timeout_ms: Option<u64>,
}

impl Config {
    /// The one-upstream command-line form: `--policy P [--audit A] -- COMMAND ARGS…`, tool names
    /// served unchanged, paths relative to the working directory.
    pub fn legacy(policy: PathBuf, audit: Option<PathBuf>, command: Vec<String>) -> Self {
        let mut words = command.into_iter();
        let program = words.next().unwrap_or_default();
        Self {
            file: PathBuf::from("(command line)"),
            separator: None,
            upstreams: vec![UpstreamConfig {
                name: "upstream".to_owned(),
                own_names: true,
                forwarded: Forwarded::default(),
                transport: UpstreamTransport::Stdio {
                    command: program,
                    args: words.collect(),
                    env: BTreeMap::new(),
                    cwd: None,
                },
            }],
            policy_layers: vec![policy],
            audit: audit.map(AuditTarget::Jsonl),
            audit_jsonl_reserve: 0,
            checkpoints: None,
            approvals: ApprovalStoreConfig::Memory,
            approvals_webhook: None,
            approval_page: None,
            limits: Limits::default(),
            policy_poll: Duration::from_secs(1),
            listen: Listen {
                stdio: true,
                http: None,
                admin: None,
                allowed_hosts: Vec::new(),
                allowed_origins: Vec::new(),
                sessions: SessionLimits::default(),
            },
            clients: Vec::new(),
            jwt: None,
            oauth: None,
            pins: None,
            state_key: StateKeySource::PerProcess,
            shared_counters: None,
            traces: None,
            tool_sets: Vec::new(),
        }
    }
}
