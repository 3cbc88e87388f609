//! The `[listen]` table and the `[[clients]]` list of a config, checked together.

use super::{ApiClient, Listen};

/// The `[listen]` table and the `[[clients]]` list, checked together: HTTP needs clients (no
/// anonymous caller), and plain HTTP on a non-loopback address needs saying so.
pub(super) fn listen_and_clients(
    mut listen: super::ListenSection,
    clients: Vec<super::ClientSection>,
    has_tokens: bool,
    problem: &mut dyn FnMut(String, String),
) -> (Listen, Vec<ApiClient>) {
    let address = |key: &str, text: Option<String>, problem: &mut dyn FnMut(String, String)| {
        let text = text?;
        match text.parse::<std::net::SocketAddr>() {
            Ok(address) => Some(address),
            Err(_) => {
                problem(
                    format!("listen.{key}"),
                    format!("{text:?} is not an address and port such as \"127.0.0.1:8080\""),
                );
                None
            }
        }
    };
    let sessions = session_limits(&listen, problem);
    let allowed_origins = origins(listen.allowed_origins.take().unwrap_or_default(), problem);
    let http = address("http", listen.http, problem);
    let admin = address("admin", listen.admin, problem);
    let allow_plain = listen.allow_plain_http.unwrap_or(false);
    for (key, bound) in [("http", http), ("admin", admin)] {
        if let Some(bound) = bound
            && !bound.ip().is_loopback()
            && !allow_plain
        {
            problem(
                format!("listen.{key}"),
                format!(
                    "{bound} is not a loopback address: the gateway speaks plain HTTP, so put a TLS-terminating reverse proxy in front of it and set `allow_plain_http = true`, or listen on 127.0.0.1"
                ),
            );
        }
    }
    if http.is_some() && admin.is_some() && http == admin {
        problem(
            "listen.admin".to_owned(),
            "must differ from listen.http: metrics are not served to MCP clients".to_owned(),
        );
    }
    let stdio = listen.stdio.unwrap_or(http.is_none());
    if !stdio && http.is_none() {
        problem(
            "listen".to_owned(),
            "serves nothing: set `http`, or leave `stdio` on".to_owned(),
        );
    }
    let mut checked = Vec::new();
    for (index, client) in clients.into_iter().enumerate() {
        let key = format!("clients[{index}]");
        let bytes = crate::hex::decode(&client.api_key_sha256).filter(|bytes| bytes.len() == 32);
        let Some(bytes) = bytes else {
            problem(
                format!("{key}.api_key_sha256"),
                "must be 64 hex digits, the SHA-256 of the key (`toolgate-mcp-gateway key` makes one)".to_owned(),
            );
            continue;
        };
        let key_sha256: [u8; 32] = bytes.try_into().expect("32 bytes");
        if !crate::plain_names::is_plain_name(&client.id) {
            problem(
                format!("{key}.id"),
                "must be non-empty, without spaces, control, zero-width or bidi characters (they make one id look like another)".to_owned(),
            );
            continue;
        }
        if let Some(index) = client
            .groups
            .iter()
            .position(|group| !crate::plain_names::is_plain_name(group))
        {
            problem(
                format!("{key}.groups[{index}]"),
                "must be non-empty, without spaces, control, zero-width or bidi characters"
                    .to_owned(),
            );
            continue;
        }
        if let Some(index) = client
            .groups
            .iter()
            .position(|group| group.starts_with(crate::tool_sets::GROUP_PREFIX))
        {
            problem(
                format!("{key}.groups[{index}]"),
                format!(
                    "the prefix {:?} is the gateway's: a call through a tool set is made in that group, and no client may claim it",
                    crate::tool_sets::GROUP_PREFIX
                ),
            );
            continue;
        }
        if checked
            .iter()
            .any(|other: &ApiClient| other.principal.id == client.id)
        {
            problem(
                format!("{key}.id"),
                format!("{:?} is named twice", client.id),
            );
        }
        if checked
            .iter()
            .any(|other: &ApiClient| other.key_sha256 == key_sha256)
        {
            problem(
                format!("{key}.api_key_sha256"),
                "is another client's key".to_owned(),
            );
        }
        checked.push(ApiClient {
            principal: toolgate::Principal::new(client.id, client.groups),
            key_sha256,
            page_sign_in: client.page_sign_in.unwrap_or(true),
        });
    }
    if http.is_some() && checked.is_empty() && !has_tokens {
        problem(
            "clients".to_owned(),
            "listen.http is set but no client is: add a [[clients]] entry with an `id` and `api_key_sha256`, an [oauth] table or a [jwt] table".to_owned(),
        );
    }
    let allowed_hosts = listen.allowed_hosts.unwrap_or_else(|| {
        vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ]
    });
    (
        Listen {
            stdio,
            http,
            admin,
            allowed_hosts,
            allowed_origins,
            sessions,
        },
        checked,
    )
}

/// `listen.allowed_origins`: each a browser origin `http(s)://host[:port]` (port `*`: any), never
/// `null` (sandboxed frames and local files send it: no page of anyone's own).
fn origins(origins: Vec<String>, problem: &mut dyn FnMut(String, String)) -> Vec<String> {
    let mut kept = Vec::new();
    for (index, origin) in origins.into_iter().enumerate() {
        let base = origin.strip_suffix(":*").unwrap_or(&origin);
        let uri = base.parse::<http::Uri>().ok();
        let valid = uri.as_ref().is_some_and(|uri| {
            matches!(uri.scheme_str(), Some("http" | "https"))
                && uri
                    .authority()
                    .is_some_and(|a| !a.host().is_empty() && !a.as_str().contains('@'))
                && uri
                    .path_and_query()
                    .is_none_or(|p| p.as_str().is_empty() || p.as_str() == "/")
                && !(origin.ends_with(":*") && uri.port().is_some())
        });
        if valid {
            // An origin without a port means its scheme's default port (RFC 6454); the SDK reads
            // a portless entry as "any port", so the default is written out.
            let explicit =
                origin.ends_with(":*") || uri.as_ref().and_then(http::Uri::port).is_some();
            if explicit {
                kept.push(origin);
            } else {
                let port = if origin.starts_with("https:") {
                    443
                } else {
                    80
                };
                kept.push(format!("{}:{port}", origin.trim_end_matches('/')));
            }
        } else {
            problem(
                format!("listen.allowed_origins[{index}]"),
                format!(
                    "{origin:?} is not a browser origin such as \"https://app.example.com\" or \"http://localhost:*\" (scheme http or https, a host, an optional port; `null` is never allowed)"
                ),
            );
        }
    }
    kept
}

/// The largest session cap: each open session holds a worker and its buffers (tens of kB).
const MAX_SESSIONS: i64 = 1_000_000;
/// The longest idle timeout: a day.
const MAX_IDLE_S: i64 = 86_400;

/// `listen.max_sessions`, `max_sessions_per_principal` and `session_idle_timeout_s`, each in its
/// range, the per-principal cap no larger than the total.
fn session_limits(
    listen: &super::ListenSection,
    problem: &mut dyn FnMut(String, String),
) -> super::SessionLimits {
    let defaults = super::SessionLimits::default();
    let mut bounded = |key: &str, value: Option<i64>, max: i64, default: u64, unit: &str| -> u64 {
        match value {
            None => default,
            Some(value) if (1..=max).contains(&value) => value.unsigned_abs(),
            Some(value) => {
                problem(
                    format!("listen.{key}"),
                    format!("is {value}: must be 1 to {max}{unit}"),
                );
                default
            }
        }
    };
    let max_total = bounded(
        "max_sessions",
        listen.max_sessions,
        MAX_SESSIONS,
        defaults.max_total as u64,
        "",
    );
    let max_per_principal = bounded(
        "max_sessions_per_principal",
        listen.max_sessions_per_principal,
        MAX_SESSIONS,
        defaults.max_per_principal as u64,
        "",
    );
    let idle = bounded(
        "session_idle_timeout_s",
        listen.session_idle_timeout_s,
        MAX_IDLE_S,
        defaults.idle_timeout.as_secs(),
        " seconds",
    );
    let max_total = usize::try_from(max_total).unwrap_or(usize::MAX);
    let mut max_per_principal = usize::try_from(max_per_principal).unwrap_or(usize::MAX);
    if max_per_principal > max_total {
        if listen.max_sessions_per_principal.is_some() {
            problem(
                "listen.max_sessions_per_principal".to_owned(),
                format!(
                    "is {max_per_principal}: more than listen.max_sessions ({max_total}), which caps every principal together"
                ),
            );
        }
        max_per_principal = max_total;
    }
    super::SessionLimits {
        max_total,
        max_per_principal,
        idle_timeout: std::time::Duration::from_secs(idle),
    }
}
