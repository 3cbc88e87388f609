//! Reading a config file: TOML syntax and unknown keys first, then what the keys mean together.

use std::path::{Path, PathBuf};
use std::time::Duration;

mod upstream_section;

use super::{
    ApprovalPageConfig, ApprovalStoreConfig, AuditTarget, Config, DEFAULT_SEPARATOR, File, Limits,
    StateKeySource, WebhookConfig,
};
use upstream_section::upstreams;

/// The most zeros `audit.jsonl_reserve_mib` keeps ahead of a log: a gigabyte is seconds of lines
/// at any rate a disk syncs them; more is a typo.
const MAX_RESERVE_MIB: u64 = 1024;

/// A config that cannot be used: the file, the key (a dotted path; empty for the whole file) and
/// what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {}{message}", key_prefix(key))]
pub struct ConfigError {
    /// The config file.
    pub file: PathBuf,
    /// The key at fault, e.g. `upstreams.files.command`.
    pub key: String,
    /// What is wrong, and what would be right.
    pub message: String,
}

fn key_prefix(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("{key}: ")
    }
}

/// Reads and checks the config at `path`. Every problem found is returned, not only the first.
///
/// # Errors
///
/// The file cannot be read, is not TOML, holds an unknown key, or its keys do not fit together.
pub fn load(path: &Path) -> Result<Config, Vec<ConfigError>> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        vec![ConfigError {
            file: path.to_owned(),
            key: String::new(),
            message: format!("cannot read the config file: {error}"),
        }]
    })?;
    parse(path, &text)
}

/// Checks config `text` as if read from `path`.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Config, Vec<ConfigError>> {
    let error = |key: String, message: String| ConfigError {
        file: path.to_owned(),
        key,
        message,
    };
    let file: File = match toml::Deserializer::parse(text) {
        Ok(deserializer) => serde_path_to_error::deserialize(deserializer).map_err(|failure| {
            let key = failure.path().to_string();
            let inner = failure.into_inner();
            vec![error(
                if key == "." { String::new() } else { key },
                with_line(text, inner.span(), inner.message()),
            )]
        })?,
        Err(syntax) => {
            return Err(vec![error(
                String::new(),
                with_line(text, syntax.span(), syntax.message()),
            )]);
        }
    };
    // `gateway.toml` has the empty parent: the working directory.
    let base = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned();
    let mut problems = Vec::new();
    let mut problem = |key: &str, message: String| problems.push(error(key.to_owned(), message));

    let separator = file
        .gateway
        .separator
        .unwrap_or_else(|| DEFAULT_SEPARATOR.to_owned());
    if separator.is_empty()
        || !separator
            .bytes()
            .all(|byte| byte.is_ascii_graphic() && byte != b'"' && byte != b'\\')
    {
        problem(
            "gateway.separator",
            "must be one or more visible ASCII characters (not a quote or backslash)".to_owned(),
        );
    }

    if file.upstreams.is_empty() {
        problem(
            "upstreams",
            "no upstream is configured: add an [upstreams.NAME] table with a `command`".to_owned(),
        );
    }
    let upstreams = upstreams(file.upstreams, &separator, &base, &mut problem);

    if file.policy.layers.is_empty() {
        problem(
            "policy.layers",
            "name at least one policy file (`layers = [\"policy.json\"]`); without one every call is denied"
                .to_owned(),
        );
    }
    let policy_layers: Vec<PathBuf> = file
        .policy
        .layers
        .iter()
        .map(|layer| base.join(layer))
        .collect();
    for (index, layer) in policy_layers.iter().enumerate() {
        if policy_layers[..index].contains(layer) {
            problem(
                &format!("policy.layers[{index}]"),
                format!("{} is named twice", layer.display()),
            );
        }
    }

    let mut checkpoints = None;
    let mut audit_jsonl_reserve = 0;
    let audit = match file.audit {
        None => None,
        Some(section) => {
            checkpoints = super::checkpoints::checkpoint_config(&base, &section, &mut problem);
            match (section.jsonl_reserve_mib, &section.jsonl) {
                (None, _) => {}
                (Some(_), None) => problem(
                    "audit.jsonl_reserve_mib",
                    "reserves space in a JSON Lines log, but `jsonl` is not set".to_owned(),
                ),
                (Some(mib), Some(_)) if mib > MAX_RESERVE_MIB => problem(
                    "audit.jsonl_reserve_mib",
                    format!("is {mib}: at most {MAX_RESERVE_MIB} (MiB of zeros ahead of the log)"),
                ),
                (Some(mib), Some(_)) => audit_jsonl_reserve = mib << 20,
            }
            match (section.jsonl, section.postgres_url_env) {
                (Some(path), None) => Some(AuditTarget::Jsonl(base.join(path))),
                (None, Some(url_env)) => Some(AuditTarget::Postgres { url_env }),
                _ => {
                    problem(
                        "audit",
                        "set exactly one of `jsonl` (a file) and `postgres_url_env`".to_owned(),
                    );
                    None
                }
            }
        }
    };

    let approvals = file.approvals;
    let (page_setting, page_secure_cookies) = (approvals.page, approvals.page_secure_cookies);
    let webhook_arguments = approvals.webhook_arguments;
    if webhook_arguments.is_some() && approvals.webhook_url.is_none() {
        problem(
            "approvals.webhook_arguments",
            "says what a webhook notice holds, but `webhook_url` is not set".to_owned(),
        );
    }
    let approvals_webhook = match (approvals.webhook_url, approvals.webhook_bearer_token_env) {
        (None, None) => None,
        (None, Some(_)) => {
            problem(
                "approvals.webhook_bearer_token_env",
                "names a token for a webhook, but `webhook_url` is not set".to_owned(),
            );
            None
        }
        (Some(url), bearer_token_env) => {
            if super::webhook_url_allowed(&url) {
                Some(WebhookConfig {
                    url,
                    bearer_token_env,
                    arguments: webhook_arguments.unwrap_or(false),
                })
            } else {
                problem(
                    "approvals.webhook_url",
                    "must be https://…, or http:// to a loopback host (a notice names who asked and why)".to_owned(),
                );
                None
            }
        }
    };
    let approvals = match (
        approvals.store.as_deref().unwrap_or("sqlite"),
        approvals.path,
        approvals.postgres_url_env,
    ) {
        ("memory", None, None) => ApprovalStoreConfig::Memory,
        ("sqlite", Some(path), None) => ApprovalStoreConfig::Sqlite(base.join(path)),
        // Durable by default: waiting approvals outlive a restart.
        ("sqlite", None, None) => ApprovalStoreConfig::Sqlite(approvals_path_for(path)),
        ("postgres", None, Some(url_env)) => ApprovalStoreConfig::Postgres { url_env },
        (store @ ("memory" | "sqlite" | "postgres"), _, _) => {
            problem(
                "approvals",
                format!(
                    "store {store:?} takes {}",
                    match store {
                        "memory" => "no other key",
                        "sqlite" => "at most `path` (the database file) and nothing else",
                        _ => "`postgres_url_env` and nothing else",
                    }
                ),
            );
            ApprovalStoreConfig::Memory
        }
        (other, _, _) => {
            problem(
                "approvals.store",
                format!("unknown store {other:?}: use \"memory\", \"sqlite\" or \"postgres\""),
            );
            ApprovalStoreConfig::Memory
        }
    };

    let state_key = match (file.gateway.state_key_env, file.gateway.state_key_file) {
        (Some(_), Some(_)) => {
            problem(
                "gateway.state_key_file",
                "set at most one of `state_key_env` and `state_key_file`".to_owned(),
            );
            StateKeySource::PerProcess
        }
        (Some(name), None) => StateKeySource::Env(name),
        (None, Some(file)) => StateKeySource::File {
            path: base.join(file),
            create: false,
        },
        (None, None) => StateKeySource::File {
            path: crate::state_key::path_for(path),
            create: true,
        },
    };

    let defaults = Limits::default();
    let limits = file.limits;
    let positive =
        |key: &str, value: Option<u64>, default: Duration, problems: &mut Vec<_>| match value {
            Some(0) => {
                problems.push(error(format!("limits.{key}"), "must be above 0".to_owned()));
                default
            }
            Some(ms) => Duration::from_millis(ms),
            None => default,
        };
    let startup_timeout = positive(
        "startup_timeout_ms",
        limits.startup_timeout_ms,
        defaults.startup_timeout,
        &mut problems,
    );
    let call_timeout = positive(
        "call_timeout_ms",
        limits.call_timeout_ms,
        defaults.call_timeout,
        &mut problems,
    );
    let list_timeout = positive(
        "list_timeout_ms",
        limits.list_timeout_ms,
        defaults.list_timeout,
        &mut problems,
    );
    let policy_poll = positive(
        "policy_poll_ms",
        file.gateway.policy_poll_ms,
        Duration::from_secs(1),
        &mut problems,
    );
    let max_message_bytes = limits
        .max_message_bytes
        .unwrap_or(defaults.max_message_bytes);
    if max_message_bytes < 1024 {
        problems.push(error(
            "limits.max_message_bytes".to_owned(),
            "must be at least 1024".to_owned(),
        ));
    }
    let max_list_pages = limits.max_list_pages.unwrap_or(defaults.max_list_pages);
    if max_list_pages == 0 {
        problems.push(error(
            "limits.max_list_pages".to_owned(),
            "must be above 0".to_owned(),
        ));
    }

    let jwt = file.jwt.and_then(|section| {
        let mut fine = true;
        let mut missing = |key: &str, value: &Option<String>| {
            if value.as_deref().is_none_or(str::is_empty) {
                problems.push(error(
                    format!("jwt.{key}"),
                    "missing: tokens are checked against it".to_owned(),
                ));
                fine = false;
            }
        };
        missing("issuer", &section.issuer);
        missing("audience", &section.audience);
        let keys = match &section.jwks_file {
            None => {
                problems.push(error(
                    "jwt.jwks_file".to_owned(),
                    "missing: the JWK Set file the tokens are verified with".to_owned(),
                ));
                None
            }
            Some(file) => match crate::jwt::load_keys(&base.join(file)) {
                Ok(keys) => Some(keys),
                Err(why) => {
                    problems.push(error("jwt.jwks_file".to_owned(), why));
                    None
                }
            },
        };
        let leeway_s = section.leeway_s.unwrap_or(30);
        if leeway_s > 300 {
            problems.push(error(
                "jwt.leeway_s".to_owned(),
                "at most 300: a longer leeway keeps expired tokens alive".to_owned(),
            ));
            fine = false;
        }
        (fine && keys.is_some()).then(|| crate::jwt::JwtConfig {
            keys: keys.unwrap_or_default(),
            issuer: section.issuer.unwrap_or_default(),
            audience: section.audience.unwrap_or_default(),
            groups_claim: section.groups_claim.unwrap_or_else(|| "groups".to_owned()),
            leeway_s,
        })
    });
    let has_jwt = jwt.is_some();
    let (listen, clients) = super::listen::listen_and_clients(
        file.listen,
        file.clients,
        has_jwt,
        &mut |key, message| {
            problems.push(error(key, message));
        },
    );
    let identities = !clients.is_empty() || jwt.is_some();
    let approval_page = match (page_setting, listen.admin) {
        (Some(false), _) | (None, None) => None,
        (Some(true), None) => {
            problems.push(error(
                "approvals.page".to_owned(),
                "needs listen.admin: the approval page is served on the admin listener, never on the MCP one".to_owned(),
            ));
            None
        }
        (_, Some(_)) if !identities => {
            if page_setting == Some(true) {
                problems.push(error(
                    "approvals.page".to_owned(),
                    "nobody could sign in: add a [[clients]] entry or a [jwt] table (the page signs people in with the gateway's identities)".to_owned(),
                ));
            }
            None
        }
        (_, Some(_)) => Some(ApprovalPageConfig {
            secure_cookies: page_secure_cookies.unwrap_or(false),
        }),
    };
    let shared_counters = shared_counters(file.rate_limits, &mut |key, message| {
        problems.push(error(key.to_owned(), message));
    });

    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Config {
        file: path.to_owned(),
        separator: Some(separator),
        upstreams,
        policy_layers,
        audit,
        audit_jsonl_reserve,
        checkpoints,
        approvals,
        approvals_webhook,
        approval_page,
        limits: Limits {
            max_message_bytes,
            startup_timeout,
            call_timeout,
            max_list_pages,
            list_timeout,
        },
        policy_poll,
        listen,
        clients,
        jwt,
        pins: Some(crate::pins::path_for(path)),
        state_key,
        shared_counters,
    })
}

/// The longest deployment name: a label, not a document.
const MAX_DEPLOYMENT_CHARS: usize = 64;

/// `[rate_limits]`: counters in PostgreSQL are keyed by the deployment the operator names, never by
/// the config file's path (instances of one deployment have files of their own, each naming its
/// own port; unrelated deployments on one database may have files of the same name).
fn shared_counters(
    section: super::RateLimitsSection,
    problem: &mut dyn FnMut(&str, String),
) -> Option<super::SharedCounters> {
    match (section.postgres_url_env, section.deployment) {
        (None, None) => None,
        (None, Some(_)) => {
            problem(
                "rate_limits.deployment",
                "names whose counters are shared in PostgreSQL, but `postgres_url_env` is not set"
                    .to_owned(),
            );
            None
        }
        (Some(_), None) => {
            problem(
                "rate_limits.deployment",
                "is required with `postgres_url_env`: name the deployment whose instances count together (e.g. \"payments-prod\"); instances with the same name share counters, every other name counts apart".to_owned(),
            );
            None
        }
        (Some(url_env), Some(deployment)) => {
            let valid = !deployment.is_empty()
                && deployment.chars().count() <= MAX_DEPLOYMENT_CHARS
                && deployment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !valid {
                problem(
                    "rate_limits.deployment",
                    format!(
                        "must be 1 to {MAX_DEPLOYMENT_CHARS} characters of A-Z, a-z, 0-9, '-', '_' and '.'"
                    ),
                );
                return None;
            }
            Some(super::SharedCounters {
                url_env,
                deployment,
            })
        }
    }
}

/// `message`, with the line and column `span` starts at, when known.
fn with_line(text: &str, span: Option<std::ops::Range<usize>>, message: &str) -> String {
    let message = message.trim_end();
    let Some(span) = span else {
        return message.to_owned();
    };
    let before = text.get(..span.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |at| at + 1) + 1;
    format!("{message} (line {line}, column {column})")
}

#[cfg(test)]
mod tests;

/// The default approval store of the config at `config`: `NAME.approvals.sqlite` beside it.
fn approvals_path_for(config: &Path) -> PathBuf {
    let stem = config
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "gateway".to_owned());
    config.with_file_name(format!("{stem}.approvals.sqlite"))
}
