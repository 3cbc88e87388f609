//! The `[jwt]` table: callers identified by JSON Web Tokens, verified against a JWK Set file.

use std::path::Path;

use super::super::JwtSection;
use crate::jwt::{JwtConfig, VerifyingKey};

/// `[jwt]`, its JWK Set file relative to `base`; `None` when absent, or when anything in it is
/// wrong (each problem told).
pub(super) fn jwt(
    section: Option<JwtSection>,
    base: &Path,
    problem: &mut dyn FnMut(&str, String),
) -> Option<JwtConfig> {
    let section = section?;
    let mut fine = true;
    let mut missing = |key: &str, value: &Option<String>| {
        if value.as_deref().is_none_or(str::is_empty) {
            problem(
                &format!("jwt.{key}"),
                "missing: tokens are checked against it".to_owned(),
            );
            fine = false;
        }
    };
    missing("issuer", &section.issuer);
    missing("audience", &section.audience);
    let keys = keys(section.jwks_file.as_deref(), base, problem);
    let leeway_s = section.leeway_s.unwrap_or(30);
    if leeway_s > 300 {
        problem(
            "jwt.leeway_s",
            "at most 300: a longer leeway keeps expired tokens alive".to_owned(),
        );
        fine = false;
    }
    (fine && keys.is_some()).then(|| JwtConfig {
        keys: keys.unwrap_or_default(),
        issuer: section.issuer.unwrap_or_default(),
        audience: section.audience.unwrap_or_default(),
        claims: crate::jwt::ClaimMap::sub_and(
            section.groups_claim.unwrap_or_else(|| "groups".to_owned()),
        ),
        leeway_s,
    })
}

/// The keys of the JWK Set file `jwt.jwks_file` (relative to `base`) names.
fn keys(
    file: Option<&Path>,
    base: &Path,
    problem: &mut dyn FnMut(&str, String),
) -> Option<Vec<VerifyingKey>> {
    let Some(file) = file else {
        problem(
            "jwt.jwks_file",
            "missing: the JWK Set file the tokens are verified with".to_owned(),
        );
        return None;
    };
    crate::jwt::load_keys(&base.join(file))
        .map_err(|why| problem("jwt.jwks_file", why))
        .ok()
}
