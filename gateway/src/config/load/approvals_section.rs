//! The `[approvals]` table: where waiting calls are kept, where each is announced, and whether
//! people answer them on the approval page.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::super::{ApprovalPageConfig, ApprovalStoreConfig, ApprovalsSection, WebhookConfig};

/// `[approvals]` checked but for the page, whose fate depends on `[listen]` and on who can sign
/// in: see [`Approvals::page`].
#[derive(Debug)]
pub(super) struct Approvals {
    pub(super) store: ApprovalStoreConfig,
    pub(super) webhook: Option<WebhookConfig>,
    page: Option<bool>,
    page_secure_cookies: Option<bool>,
}

/// `[approvals]` of the config at `config`, paths relative to `base`.
pub(super) fn approvals(
    section: ApprovalsSection,
    base: &Path,
    config: &Path,
    problem: &mut dyn FnMut(&str, String),
) -> Approvals {
    let webhook = webhook(
        section.webhook_url,
        section.webhook_bearer_token_env,
        section.webhook_arguments,
        problem,
    );
    let store = store(
        section.store.as_deref().unwrap_or("sqlite"),
        section.path,
        section.postgres_url_env,
        base,
        config,
        problem,
    );
    Approvals {
        store,
        webhook,
        page: section.page,
        page_secure_cookies: section.page_secure_cookies,
    }
}

impl Approvals {
    /// The approval page, served on the admin listener (`admin`) when someone can sign in
    /// (`identities`) and `approvals.page` is not false.
    pub(super) fn page(
        &self,
        admin: Option<SocketAddr>,
        identities: bool,
        problem: &mut dyn FnMut(&str, String),
    ) -> Option<ApprovalPageConfig> {
        match (self.page, admin) {
            (Some(false), _) | (None, None) => None,
            (Some(true), None) => {
                problem(
                    "approvals.page",
                    "needs listen.admin: the approval page is served on the admin listener, never on the MCP one".to_owned(),
                );
                None
            }
            (_, Some(_)) if !identities => {
                if self.page == Some(true) {
                    problem(
                        "approvals.page",
                        "nobody could sign in: add a [[clients]] entry or a [jwt] table (the page signs people in with the gateway's identities)".to_owned(),
                    );
                }
                None
            }
            (_, Some(_)) => Some(ApprovalPageConfig {
                secure_cookies: self.page_secure_cookies.unwrap_or(false),
            }),
        }
    }
}

/// The webhook each held call is announced to: `approvals.webhook_url`, with its token's variable
/// and whether a notice holds the call's arguments.
fn webhook(
    url: Option<String>,
    bearer_token_env: Option<String>,
    arguments: Option<bool>,
    problem: &mut dyn FnMut(&str, String),
) -> Option<WebhookConfig> {
    if arguments.is_some() && url.is_none() {
        problem(
            "approvals.webhook_arguments",
            "says what a webhook notice holds, but `webhook_url` is not set".to_owned(),
        );
    }
    match (url, bearer_token_env) {
        (None, None) => None,
        (None, Some(_)) => {
            problem(
                "approvals.webhook_bearer_token_env",
                "names a token for a webhook, but `webhook_url` is not set".to_owned(),
            );
            None
        }
        (Some(url), bearer_token_env) => {
            if super::super::webhook_url_allowed(&url) {
                Some(WebhookConfig {
                    url,
                    bearer_token_env,
                    arguments: arguments.unwrap_or(false),
                })
            } else {
                problem(
                    "approvals.webhook_url",
                    "must be https://…, or http:// to a loopback host (a notice names who asked and why)".to_owned(),
                );
                None
            }
        }
    }
}

/// Where waiting approvals are kept: `store` with the keys it takes, a `path` relative to `base`,
/// by default a SQLite file beside the config at `config`.
fn store(
    store: &str,
    path: Option<PathBuf>,
    postgres_url_env: Option<String>,
    base: &Path,
    config: &Path,
    problem: &mut dyn FnMut(&str, String),
) -> ApprovalStoreConfig {
    match (store, path, postgres_url_env) {
        ("memory", None, None) => ApprovalStoreConfig::Memory,
        ("sqlite", Some(path), None) => ApprovalStoreConfig::Sqlite(base.join(path)),
        // Durable by default: waiting approvals outlive a restart.
        ("sqlite", None, None) => ApprovalStoreConfig::Sqlite(approvals_path_for(config)),
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
    }
}

/// The default approval store of the config at `config`: `NAME.approvals.sqlite` beside it.
fn approvals_path_for(config: &Path) -> PathBuf {
    let stem = config
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "gateway".to_owned());
    config.with_file_name(format!("{stem}.approvals.sqlite"))
}
