//! Reading a config file: TOML syntax and unknown keys first, then what the keys mean together.

use std::path::{Path, PathBuf};

mod approvals_section;
mod audit_section;
mod jwt_section;
mod limits_section;
mod oauth_section;
mod tool_sets_section;
mod traces_section;
mod upstream_section;

use super::{Config, DEFAULT_SEPARATOR, File, StateKeySource};
use approvals_section::approvals;
use audit_section::audit;
use jwt_section::jwt;
use limits_section::limits;
use oauth_section::oauth;
use tool_sets_section::tool_sets;
use traces_section::traces;
use upstream_section::upstreams;

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
    let text =
        toolgate::files::read_text(path, crate::files::MAX_CONFIG_FILE_BYTES).map_err(|error| {
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
    let file = deserialize(path, text)?;
    let base = base_of(path);
    let mut problems = Vec::new();
    let mut problem = |key: &str, message: String| {
        problems.push(ConfigError {
            file: path.to_owned(),
            key: key.to_owned(),
            message,
        });
    };
    // Problems are reported in the order they are found: keep the sections in this order.
    let gateway = file.gateway;
    let separator = separator(gateway.separator, &mut problem);
    let upstreams = upstreams(file.upstreams, &separator, &base, &mut problem);
    let policy_layers = policy_layers(&file.policy.layers, &base, &mut problem);
    let (audit, audit_jsonl_reserve, checkpoints) = audit(file.audit, &base, &mut problem);
    let approvals = approvals(file.approvals, &base, path, &mut problem);
    let state_key = state_key(
        gateway.state_key_env,
        gateway.state_key_file,
        &base,
        path,
        &mut problem,
    );
    let (limits, policy_poll) = limits(file.limits, gateway.policy_poll_ms, &mut problem);
    let jwt = jwt(file.jwt, &base, &mut problem);
    let oauth = oauth(file.oauth, &mut problem);
    let (listen, clients) = super::listen::listen_and_clients(
        file.listen,
        file.clients,
        jwt.is_some() || oauth.is_some(),
        &mut |key, message| problem(&key, message),
    );
    if let Some(oauth) = &oauth {
        principal_ids_apart(oauth, &clients, jwt.is_some(), &mut problem);
    }
    let identities = !clients.is_empty() || jwt.is_some() || oauth.is_some();
    let approval_page = approvals.page(listen.admin, identities, &mut problem);
    if oauth.as_ref().is_some_and(|oauth| oauth.page.is_some()) && approval_page.is_none() {
        problem(
            "oauth.page",
            "the approval page is not served: set listen.admin (and leave approvals.page on)"
                .to_owned(),
        );
    }
    let shared_counters = shared_counters(file.rate_limits, &mut problem);
    let traces = traces(file.traces, &mut problem);
    let tool_sets = tool_sets(file.tool_sets, &base, listen.http.is_some(), &mut problem);
    if !tool_sets.is_empty()
        && oauth
            .as_ref()
            .is_some_and(|oauth| !oauth.resource.trim_end_matches('/').ends_with("/mcp"))
    {
        problem(
            "oauth.resource",
            "with tool sets, the resource ends in /mcp: each set's resource is it with /mcp replaced by /sets/NAME/mcp".to_owned(),
        );
    }

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
        approvals: approvals.store,
        approvals_webhook: approvals.webhook,
        approval_page,
        limits,
        policy_poll,
        listen,
        clients,
        jwt,
        oauth,
        pins: Some(crate::pins::path_for(path)),
        state_key,
        shared_counters,
        traces,
        tool_sets,
    })
}

/// No `[oauth]` principal can share an id with another source's: beside `[jwt]` (whose ids are
/// bare `sub`s) every issuer needs an `id_prefix`, and no `[[clients]]` id may start with an
/// issuer's prefix. (A token naming a client's id with no prefix at all is refused when it comes.)
fn principal_ids_apart(
    oauth: &crate::oauth::settings::OAuthSettings,
    clients: &[super::ApiClient],
    jwt: bool,
    problem: &mut dyn FnMut(&str, String),
) {
    for (index, issuer) in oauth.issuers.iter().enumerate() {
        let prefix = &issuer.claims.id_prefix;
        if jwt && prefix.is_empty() {
            problem(
                &format!("oauth.issuers[{index}].id_prefix"),
                "required beside [jwt]: its tokens' `sub`s and this issuer's ids could be the same principal".to_owned(),
            );
        }
        if let Some(client) = clients.iter().position(|client| {
            !prefix.is_empty() && client.principal.id.starts_with(prefix.as_str())
        }) {
            problem(
                &format!("clients[{client}].id"),
                format!(
                    "starts with oauth.issuers[{index}].id_prefix {prefix:?}: a token could name the same principal"
                ),
            );
        }
    }
}

/// The file as written, or the one problem that stops it being read: its TOML syntax, an unknown
/// key, a value of the wrong type.
fn deserialize(path: &Path, text: &str) -> Result<File, Vec<ConfigError>> {
    let error = |key: String, message: String| {
        vec![ConfigError {
            file: path.to_owned(),
            key,
            message,
        }]
    };
    match toml::Deserializer::parse(text) {
        Ok(deserializer) => serde_path_to_error::deserialize(deserializer).map_err(|failure| {
            let key = failure.path().to_string();
            let inner = failure.into_inner();
            error(
                if key == "." { String::new() } else { key },
                with_line(text, inner.span(), inner.message()),
            )
        }),
        Err(syntax) => Err(error(
            duplicated_key(text, syntax.span(), syntax.message()),
            with_line(text, syntax.span(), syntax.message()),
        )),
    }
}

/// The key a TOML "duplicate key" error points at (a table `[limits]` given twice, a key set
/// twice), so the problem names it as every other does; empty for another error. (It named only
/// the line: an independent attack.)
fn duplicated_key(text: &str, span: Option<std::ops::Range<usize>>, message: &str) -> String {
    if !message.starts_with("duplicate key") {
        return String::new();
    }
    span.and_then(|span| text.get(span))
        .map(|key| {
            key.trim_matches(|c: char| c == '[' || c == ']' || c == '"' || c.is_whitespace())
        })
        .filter(|key| !key.is_empty() && key.len() <= 200)
        .unwrap_or_default()
        .to_owned()
}

/// The directory the relative paths of the config at `path` start from: its own.
fn base_of(path: &Path) -> PathBuf {
    // `gateway.toml` has the empty parent: the working directory.
    path.parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_owned()
}

/// `gateway.separator`, [`DEFAULT_SEPARATOR`] when unset.
fn separator(separator: Option<String>, problem: &mut dyn FnMut(&str, String)) -> String {
    let separator = separator.unwrap_or_else(|| DEFAULT_SEPARATOR.to_owned());
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
    separator
}

/// `policy.layers`, relative to `base`, highest first: at least one, none named twice.
fn policy_layers(
    layers: &[PathBuf],
    base: &Path,
    problem: &mut dyn FnMut(&str, String),
) -> Vec<PathBuf> {
    if layers.is_empty() {
        problem(
            "policy.layers",
            "name at least one policy file (`layers = [\"policy.json\"]`); without one every call is denied"
                .to_owned(),
        );
    }
    let policy_layers: Vec<PathBuf> = layers.iter().map(|layer| base.join(layer)).collect();
    for (index, layer) in policy_layers.iter().enumerate() {
        if policy_layers[..index].contains(layer) {
            problem(
                &format!("policy.layers[{index}]"),
                format!("{} is named twice", layer.display()),
            );
        }
    }
    policy_layers
}

/// Where the request-state keys of the config at `path` come from: `gateway.state_key_env`, or
/// `gateway.state_key_file` (relative to `base`), or else a key file beside the config, made on
/// first start.
fn state_key(
    env: Option<String>,
    file: Option<PathBuf>,
    base: &Path,
    path: &Path,
    problem: &mut dyn FnMut(&str, String),
) -> StateKeySource {
    match (env, file) {
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
    }
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
