//! The `[oauth]` table: the gateway as an OAuth 2.1 resource server — the URL it is reached at,
//! the scopes clients are told of, and the issuers whose access tokens it accepts.

use std::time::Duration;

use super::super::{IssuerSection, OAuthPageSection, OAuthSection};
use crate::jwt::ClaimMap;
use crate::oauth::keyring::secure_url;
use crate::oauth::metadata::WELL_KNOWN;
use crate::oauth::page_sign_in::CALLBACK_PATH;
use crate::oauth::settings::{IssuerSettings, OAuthSettings, PageSignInSettings};

/// `[oauth]`, checked; `None` when absent or when anything in it is wrong (each problem told).
pub(super) fn oauth(
    section: Option<OAuthSection>,
    problem: &mut dyn FnMut(&str, String),
) -> Option<OAuthSettings> {
    let section = section?;
    let mut fine = true;
    let mut bad = |key: &str, message: String| {
        problem(key, message);
        fine = false;
    };
    let resource = resource(section.resource, &mut bad);
    let scopes = section.scopes.unwrap_or_default();
    for (index, scope) in scopes.iter().enumerate() {
        if !scope_token(scope) {
            bad(
                &format!("oauth.scopes[{index}]"),
                "a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749 §3.3)"
                    .to_owned(),
            );
        }
    }
    if section.issuers.is_empty() {
        bad(
            "oauth.issuers",
            "name at least one authorization server: [[oauth.issuers]] with its `issuer` URL"
                .to_owned(),
        );
    }
    let several = section.issuers.len() > 1;
    let mut issuers = Vec::new();
    for (index, written) in section.issuers.into_iter().enumerate() {
        let key = format!("oauth.issuers[{index}]");
        if let Some(issuer) = issuer(written, &key, resource.as_ref(), several, &mut bad) {
            if issuers
                .iter()
                .any(|seen: &IssuerSettings| seen.issuer == issuer.issuer)
            {
                bad(&format!("{key}.issuer"), "named twice".to_owned());
            } else if issuers.iter().any(|seen: &IssuerSettings| {
                seen.claims.id_prefix.starts_with(&issuer.claims.id_prefix)
                    || issuer.claims.id_prefix.starts_with(&seen.claims.id_prefix)
            }) {
                bad(
                    &format!("{key}.id_prefix"),
                    "another issuer's id_prefix is the same or starts the same way (\"corp:\" and \"corp:eu:\"): their principals could share ids"
                        .to_owned(),
                );
            }
            issuers.push(issuer);
        }
    }
    let page = section
        .page
        .and_then(|written| page(written, &issuers, &scopes, &mut bad));
    let (resource, metadata_path, metadata_url) = resource?;
    fine.then_some(OAuthSettings {
        resource,
        metadata_path,
        metadata_url,
        scopes,
        issuers,
        page,
    })
}

/// `[oauth.page]`, checked against the issuers.
fn page(
    written: OAuthPageSection,
    issuers: &[IssuerSettings],
    scopes: &[String],
    bad: &mut dyn FnMut(&str, String),
) -> Option<PageSignInSettings> {
    let issuer = match (&written.issuer, issuers) {
        (Some(named), _) => {
            let found = issuers.iter().position(|issuer| issuer.issuer == *named);
            if found.is_none() {
                bad(
                    "oauth.page.issuer",
                    format!(
                        "{named:?} is not one of [[oauth.issuers]]: people sign in where tokens are accepted from"
                    ),
                );
            }
            found
        }
        (None, [_]) => Some(0),
        (None, _) => {
            bad(
                "oauth.page.issuer",
                "with several issuers, name the one people sign in to the page at".to_owned(),
            );
            None
        }
    };
    let client_id = written.client_id.unwrap_or_default();
    if client_id.is_empty() || client_id.chars().any(char::is_control) {
        bad(
            "oauth.page.client_id",
            "missing: the client id the approval page is registered under at the issuer".to_owned(),
        );
    }
    if written.client_secret_env.as_deref() == Some("") {
        bad(
            "oauth.page.client_secret_env",
            "empty: the name of the variable holding the client's secret (leave it out for a public client)".to_owned(),
        );
    }
    let redirect_url = written.redirect_url.unwrap_or_default();
    match secure_url(&redirect_url) {
        Ok(url)
            if url.path() == CALLBACK_PATH && url.query().is_none() && url.fragment().is_none() => {
        }
        Ok(_) => bad(
            "oauth.page.redirect_url",
            format!(
                "must end in {CALLBACK_PATH} (the admin listener's callback, as browsers reach it), with no query or fragment"
            ),
        ),
        Err(why) => bad(
            "oauth.page.redirect_url",
            format!(
                "{redirect_url:?} {why}; e.g. \"https://gateway-admin.example.com{CALLBACK_PATH}\""
            ),
        ),
    }
    let mut asked = written.scopes.unwrap_or_else(|| {
        let mut asked = vec!["openid".to_owned()];
        asked.extend(scopes.iter().filter(|scope| *scope != "openid").cloned());
        asked
    });
    let mut seen = std::collections::HashSet::new();
    asked.retain(|scope| seen.insert(scope.clone()));
    if let Some(index) = asked.iter().position(|scope| !scope_token(scope)) {
        bad(
            &format!("oauth.page.scopes[{index}]"),
            "a scope is printable ASCII without spaces, quotes or backslashes (RFC 6749 §3.3)"
                .to_owned(),
        );
    }
    let issuer = issuer?;
    let label = written.label.unwrap_or_else(|| {
        let host = reqwest::Url::parse(&issuers[issuer].issuer)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned))
            .unwrap_or_default();
        format!("Sign in with {host}")
    });
    if label.is_empty() || label.len() > 100 || label.chars().any(char::is_control) {
        bad(
            "oauth.page.label",
            "1 to 100 bytes, no control characters".to_owned(),
        );
    }
    Some(PageSignInSettings {
        issuer,
        client_id,
        client_secret_env: written.client_secret_env,
        redirect_url,
        scopes: asked,
        label,
        credential_sign_in: written.credential_sign_in.unwrap_or(true),
    })
}

/// RFC 6749 §3.3: a scope token is printable ASCII without space, `"` or `\`.
fn scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|byte| (0x21..=0x7e).contains(&byte) && byte != b'"' && byte != b'\\')
}

/// `oauth.resource` as written, where its metadata is served, and the metadata's URL.
fn resource(
    written: Option<String>,
    bad: &mut dyn FnMut(&str, String),
) -> Option<(String, String, String)> {
    let Some(written) = written else {
        bad(
            "oauth.resource",
            "missing: the URL clients reach this gateway's MCP endpoint at, e.g. \"https://gateway.example.com/mcp\" (tokens must be issued for it)".to_owned(),
        );
        return None;
    };
    let url = plain_url("oauth.resource", &written, bad)?;
    // It becomes routes on the MCP listener: letters, digits and `-._~/%` only.
    if !url
        .path()
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || b"-._~/%".contains(&byte))
    {
        bad(
            "oauth.resource",
            "its path may hold letters, digits and - . _ ~ / % only".to_owned(),
        );
        return None;
    }
    let path = url.path().trim_end_matches('/');
    let metadata_path = format!("{WELL_KNOWN}{path}");
    let metadata_url = format!("{}{metadata_path}", url.origin().ascii_serialization());
    Some((written, metadata_path, metadata_url))
}

/// `written` as a URL that is https (or http to loopback), with no query, fragment or
/// credentials, and written as its canonical form (what clients and tokens will compare it with
/// character for character).
fn plain_url(key: &str, written: &str, bad: &mut dyn FnMut(&str, String)) -> Option<reqwest::Url> {
    let url = match secure_url(written) {
        Ok(url) => url,
        Err(why) => {
            bad(key, format!("{written:?} {why}"));
            return None;
        }
    };
    if url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        bad(
            key,
            "has a query, a fragment or credentials: this URL has none (RFC 8707 §2, RFC 8414 §2)"
                .to_owned(),
        );
        return None;
    }
    let canonical = url.as_str();
    if written != canonical && format!("{written}/") != canonical {
        bad(
            key,
            format!("write it as {canonical:?}: it is compared character for character"),
        );
        return None;
    }
    Some(url)
}

/// One `[[oauth.issuers]]`, checked.
fn issuer(
    written: IssuerSection,
    key: &str,
    resource: Option<&(String, String, String)>,
    several: bool,
    bad: &mut dyn FnMut(&str, String),
) -> Option<IssuerSettings> {
    let Some(issuer) = written.issuer.clone() else {
        bad(
            &format!("{key}.issuer"),
            "missing: the authorization server's issuer URL, exactly as its tokens' `iss` says it"
                .to_owned(),
        );
        return None;
    };
    plain_url(&format!("{key}.issuer"), &issuer, bad)?;
    let (id_prefix, id_claim, groups_claim) = identity_claims(&written, key, several, bad);
    let timing = key_timing(&written, key, bad);
    let audience_from_resource = written.audience.is_none();
    let audience = written
        .audience
        .or_else(|| resource.map(|(resource, _, _)| resource.clone()))?;
    if audience.is_empty() {
        bad(
            &format!("{key}.audience"),
            "empty: the `aud` tokens must hold".to_owned(),
        );
    }
    // (A prefix that only begins it, `tool`, makes such a group from one scope, `set:ops`: that
    // token is refused when it comes, as any token holding the gateway's groups is.)
    if written
        .scope_group_prefix
        .as_deref()
        .is_some_and(|prefix| prefix.starts_with(crate::tool_sets::GROUP_PREFIX))
    {
        bad(
            &format!("{key}.scope_group_prefix"),
            format!(
                "may not start like {:?}: groups so named are the gateway's (calls through tool sets)",
                crate::tool_sets::GROUP_PREFIX
            ),
        );
    }
    Some(IssuerSettings {
        issuer,
        audience,
        audience_from_resource,
        claims: ClaimMap {
            id_claim,
            id_prefix,
            groups_claim,
            scope_group_prefix: written.scope_group_prefix,
        },
        leeway_s: timing.leeway_s,
        refresh: Duration::from_secs(timing.refresh_s),
        max_age: Duration::from_secs(timing.max_age_s),
        refetch_min: Duration::from_secs(timing.refetch_min_s),
    })
}

/// The id prefix, the id claim and the groups claim of an issuer's tokens, checked.
fn identity_claims(
    written: &IssuerSection,
    key: &str,
    several: bool,
    bad: &mut dyn FnMut(&str, String),
) -> (String, String, String) {
    let id_prefix = written.id_prefix.clone().unwrap_or_default();
    if id_prefix
        .chars()
        .any(|c| c.is_control() || c.is_whitespace())
        || toolgate::registry::first_invisible(&id_prefix).is_some()
    {
        bad(
            &format!("{key}.id_prefix"),
            "no spaces, control, zero-width or bidi characters".to_owned(),
        );
    }
    if several && id_prefix.is_empty() {
        bad(
            &format!("{key}.id_prefix"),
            "with several issuers each needs its own, e.g. \"corp:\": one issuer's `alice` is not another's".to_owned(),
        );
    }
    let mut claim = |name: &Option<String>, field: &str, default: &str| {
        let name = name.clone().unwrap_or_else(|| default.to_owned());
        if name.is_empty() || name.chars().any(char::is_control) {
            bad(
                &format!("{key}.{field}"),
                "a claim name: not empty, no control characters".to_owned(),
            );
        }
        name
    };
    let id_claim = claim(&written.id_claim, "id_claim", "sub");
    let groups_claim = claim(&written.groups_claim, "groups_claim", "groups");
    (id_prefix, id_claim, groups_claim)
}

/// How long a token's times may be off, and how often and how late the issuer's keys are
/// fetched and trusted; in seconds.
struct KeyTiming {
    leeway_s: u64,
    refresh_s: u64,
    max_age_s: u64,
    refetch_min_s: u64,
}

fn key_timing(written: &IssuerSection, key: &str, bad: &mut dyn FnMut(&str, String)) -> KeyTiming {
    let leeway_s = written.leeway_s.unwrap_or(30);
    if leeway_s > 300 {
        bad(
            &format!("{key}.leeway_s"),
            "at most 300: a longer leeway keeps expired tokens alive".to_owned(),
        );
    }
    let refresh_s = written.keys_refresh_s.unwrap_or(900);
    if !(10..=86_400).contains(&refresh_s) {
        bad(
            &format!("{key}.keys_refresh_s"),
            "from 10 to 86400 seconds".to_owned(),
        );
    }
    let max_age_s = written
        .keys_max_age_s
        .unwrap_or_else(|| (refresh_s * 4).max(3600));
    if max_age_s < refresh_s || max_age_s > 7 * 86_400 {
        bad(
            &format!("{key}.keys_max_age_s"),
            format!(
                "from keys_refresh_s ({refresh_s}) to 604800 seconds: keys held longer outlive a withdrawal"
            ),
        );
    }
    let refetch_min_s = written.keys_refetch_min_s.unwrap_or(30);
    if !(1..=3600).contains(&refetch_min_s) {
        bad(
            &format!("{key}.keys_refetch_min_s"),
            "from 1 to 3600 seconds: tokens naming unknown keys must not make the gateway fetch without pause".to_owned(),
        );
    }
    KeyTiming {
        leeway_s,
        refresh_s,
        max_age_s,
        refetch_min_s,
    }
}
