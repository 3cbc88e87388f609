//! The identity tables of a config file as written — `[jwt]` and `[oauth]` with its issuers and
//! its page sign-in —, every key optional, checked by `load/jwt_section.rs` and
//! `load/oauth_section.rs`.

use std::path::PathBuf;

use serde::Deserialize;

/// `[jwt]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JwtSection {
    pub(super) jwks_file: Option<PathBuf>,
    pub(super) issuer: Option<String>,
    pub(super) audience: Option<String>,
    pub(super) groups_claim: Option<String>,
    pub(super) leeway_s: Option<u64>,
}

/// `[oauth]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OAuthSection {
    pub(super) resource: Option<String>,
    pub(super) scopes: Option<Vec<String>>,
    #[serde(default)]
    pub(super) issuers: Vec<IssuerSection>,
    pub(super) page: Option<OAuthPageSection>,
}

/// `[oauth.page]` as written: approvers sign in to the page at an issuer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OAuthPageSection {
    pub(super) issuer: Option<String>,
    pub(super) client_id: Option<String>,
    pub(super) client_secret_env: Option<String>,
    pub(super) redirect_url: Option<String>,
    pub(super) scopes: Option<Vec<String>>,
    pub(super) label: Option<String>,
    pub(super) credential_sign_in: Option<bool>,
}

/// One `[[oauth.issuers]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IssuerSection {
    pub(super) issuer: Option<String>,
    pub(super) audience: Option<String>,
    pub(super) id_claim: Option<String>,
    pub(super) id_prefix: Option<String>,
    pub(super) groups_claim: Option<String>,
    pub(super) scope_group_prefix: Option<String>,
    pub(super) leeway_s: Option<u64>,
    pub(super) keys_refresh_s: Option<u64>,
    pub(super) keys_max_age_s: Option<u64>,
    pub(super) keys_refetch_min_s: Option<u64>,
}
