//! Callers identified by JSON Web Tokens, verified with the `jsonwebtoken` crate: the signature by
//! the key the token's `kid` names, with an algorithm that key verifies (a token cannot choose
//! another family, and `none` or a shared-secret algorithm is never accepted), the issuer, the
//! audience and the expiry. Keys come from a JWK Set file (`[jwt]`) or from an issuer's
//! `jwks_uri` (`[oauth]`, see `crate::oauth`); the principal is read from the claims the same way
//! for both.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use toolgate::Principal;

/// What `[jwt]` configures, checked.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    pub keys: Vec<VerifyingKey>,
    pub issuer: String,
    pub audience: String,
    pub claims: ClaimMap,
    pub leeway_s: u64,
}

/// Which claims name the principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMap {
    /// The claim holding the principal's id (`sub` unless configured).
    pub id_claim: String,
    /// Put before the id (several issuers: one issuer's `alice` is not another's).
    pub id_prefix: String,
    /// The claim holding the groups, an array of strings: a top-level claim of that name, else a
    /// dotted path into nested objects (`realm_access.roles`).
    pub groups_claim: String,
    /// With a prefix, each scope the token carries (`scope`, space-separated, or `scp`, an array)
    /// is also a group: the prefix followed by the scope.
    pub scope_group_prefix: Option<String>,
}

impl ClaimMap {
    /// `sub` for the id, the given groups claim, no scopes as groups.
    pub fn sub_and(groups_claim: String) -> Self {
        Self {
            id_claim: "sub".to_owned(),
            id_prefix: String::new(),
            groups_claim,
            scope_group_prefix: None,
        }
    }
}

/// One key of a set: its id, the algorithms it verifies (the one its `alg` names, or for a
/// fetched key naming none, those of its type), the key.
#[derive(Clone)]
pub struct VerifyingKey {
    pub kid: Option<String>,
    pub algorithms: Vec<Algorithm>,
    key: DecodingKey,
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("kid", &self.kid)
            .field("algorithms", &self.algorithms)
            .finish_non_exhaustive()
    }
}

/// The keys of the JWK Set in `path`, each with the one algorithm it verifies.
///
/// # Errors
///
/// The file cannot be read, is not a JWK Set, holds a key for a shared-secret algorithm or of
/// an unsupported type, or (with several keys) a key without a `kid`.
pub fn load_keys(path: &Path) -> Result<Vec<VerifyingKey>, String> {
    let text = toolgate::files::read_text(path, crate::files::MAX_CONFIG_FILE_BYTES)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let set: JwkSet = serde_json::from_str(&text)
        .map_err(|error| format!("{} is not a JWK Set: {error}", path.display()))?;
    if set.keys.is_empty() {
        return Err(format!("{} holds no key", path.display()));
    }
    let several = set.keys.len() > 1;
    let mut keys = Vec::new();
    for (index, jwk) in set.keys.iter().enumerate() {
        if several && jwk.common.key_id.is_none() {
            return Err(format!(
                "keys[{index}] has no `kid`; with several keys each needs one"
            ));
        }
        let algorithm = algorithms_of(jwk)
            .map(|(by_type, declared)| declared.unwrap_or(by_type[0]))
            .map_err(|why| format!("keys[{index}]: {why}"))?;
        keys.push(
            verifying_key(jwk, vec![algorithm]).map_err(|why| format!("keys[{index}]: {why}"))?,
        );
    }
    Ok(keys)
}

/// The signing keys of a JWK Set an issuer publishes: each key that may sign (`use` absent or
/// `sig`), of a type verified here, with a `kid` when there are several such keys. The others —
/// encryption keys, types or curves this gateway does not verify, entries it cannot read — are
/// skipped, not fatal, and a set holding none yields none: an issuer that withdraws every key
/// (or publishes only keys of other kinds) has no token taken.
///
/// # Errors
///
/// Not a JWK Set (no `keys` array).
pub fn published_keys(body: &[u8]) -> Result<Vec<VerifyingKey>, String> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<Value>,
    }
    let set: Set =
        serde_json::from_slice(body).map_err(|error| format!("not a JWK Set: {error}"))?;
    let usable: Vec<(Jwk, Vec<Algorithm>)> = set
        .keys
        .into_iter()
        // One entry at a time: a kind of key this crate cannot read skips that entry alone.
        .filter_map(|entry| serde_json::from_value::<Jwk>(entry).ok())
        .filter(|jwk| {
            jwk.common
                .public_key_use
                .as_ref()
                .is_none_or(|usage| *usage == jsonwebtoken::jwk::PublicKeyUse::Signature)
        })
        .filter_map(|jwk| {
            let (by_type, declared) = algorithms_of(&jwk).ok()?;
            let algorithms = declared.map_or_else(|| by_type.to_vec(), |one| vec![one]);
            Some((jwk, algorithms))
        })
        .collect();
    let several = usable.len() > 1;
    Ok(usable
        .into_iter()
        .filter(|(jwk, _)| !several || jwk.common.key_id.is_some())
        .filter_map(|(jwk, algorithms)| verifying_key(&jwk, algorithms).ok())
        .collect())
}

fn verifying_key(jwk: &Jwk, algorithms: Vec<Algorithm>) -> Result<VerifyingKey, String> {
    Ok(VerifyingKey {
        kid: jwk.common.key_id.clone(),
        algorithms,
        key: DecodingKey::from_jwk(jwk).map_err(|error| error.to_string())?,
    })
}

const RSA: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// The algorithms a public key's type verifies (the usual one first), and the one its `alg`
/// declares, if any — which must be of that type.
fn algorithms_of(jwk: &Jwk) -> Result<(&'static [Algorithm], Option<Algorithm>), String> {
    let by_type: &'static [Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => RSA,
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return Err("an unsupported elliptic curve".to_owned()),
        },
        AlgorithmParameters::OctetKeyPair(_) => &[Algorithm::EdDSA],
        AlgorithmParameters::OctetKey(_) => {
            return Err(
                "a shared-secret (oct) key: only public keys verify tokens here".to_owned(),
            );
        }
    };
    let Some(declared) = jwk.common.key_algorithm else {
        return Ok((by_type, None));
    };
    let algorithm = match declared {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        other => return Err(format!("algorithm {other:?} is not accepted")),
    };
    // An `alg` that does not belong to the key's type would be refused by the verifier anyway.
    if !by_type.contains(&algorithm) {
        return Err(format!("`alg` {declared:?} does not fit the key's type"));
    }
    Ok((by_type, Some(algorithm)))
}

/// What a token must carry besides a good signature.
pub struct Expected<'a> {
    pub issuer: &'a str,
    pub audience: &'a str,
    pub leeway_s: u64,
    pub claims: &'a ClaimMap,
}

/// The principal `token` names if `key` (the one its `kid` chose) verifies it and it carries what
/// `expected` asks, and the instant its `exp` names (what a session opened with it may not
/// outlive).
///
/// # Errors
///
/// Why it does not (for the log; the client only gets 401).
pub fn verify_with(
    token: &str,
    header: &jsonwebtoken::Header,
    key: &VerifyingKey,
    expected: &Expected<'_>,
) -> Result<(Principal, SystemTime), String> {
    if !key.algorithms.contains(&header.alg) {
        return Err(format!(
            "the token says {:?}; its key verifies {:?} only",
            header.alg, key.algorithms
        ));
    }
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[expected.issuer]);
    validation.set_audience(&[expected.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.validate_nbf = true;
    validation.leeway = expected.leeway_s;
    let claims = jsonwebtoken::decode::<Value>(token, &key.key, &validation)
        .map_err(|error| error.to_string())?
        .claims;
    // An OpenID Connect ID token says who signed in to a client, not what the bearer may call:
    // its `nonce` or hashes give it away (an access token carries none).
    if ["nonce", "at_hash", "c_hash"]
        .iter()
        .any(|claim| claims.get(claim).is_some())
    {
        return Err(
            "an ID token (it carries nonce, at_hash or c_hash): send an access token".to_owned(),
        );
    }
    let principal = principal_of(&claims, expected.claims)?;
    // `exp` is required and was checked above as a number; fractions and negatives are cut.
    let expires = claims
        .get("exp")
        .and_then(Value::as_f64)
        .map(|exp| UNIX_EPOCH + Duration::from_secs_f64(exp.clamp(0.0, 1e11)))
        .ok_or("the token's `exp` is not a number")?;
    Ok((principal, expires))
}

/// The principal the verified `claims` name under `map`.
fn principal_of(claims: &Value, map: &ClaimMap) -> Result<Principal, String> {
    let id = claims
        .get(&map.id_claim)
        .and_then(Value::as_str)
        .filter(|id| id.len() <= 256 && crate::plain_names::is_plain_name(id))
        .ok_or_else(|| format!("the token's `{}` is not a usable id (missing, not a string, empty, over 256 bytes, or holding a space, a control, an invisible or a bidi character)", map.id_claim.escape_debug()))?;
    let mut groups = match claim_at(claims, &map.groups_claim) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(groups)) => groups
            .iter()
            .map(|group| group.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("the token's groups are not all strings")?,
        Some(_) => return Err("the token's groups claim is not an array".to_owned()),
    };
    if let Some(prefix) = &map.scope_group_prefix {
        groups.extend(scopes_of(claims)?.map(|scope| format!("{prefix}{scope}")));
    }
    if !groups
        .iter()
        .all(|group| crate::plain_names::is_plain_name(group))
    {
        // A group a person cannot read as it is would be judged as one it looks like.
        return Err(
            "a group in the token is empty or holds a space, a control, an invisible or a bidi character".to_owned(),
        );
    }
    if groups
        .iter()
        .any(|group| group.starts_with(crate::tool_sets::GROUP_PREFIX))
    {
        // The gateway's own: a call through a tool set is made in it.
        return Err(format!(
            "a group in the token starts with {:?}, which only the gateway gives",
            crate::tool_sets::GROUP_PREFIX
        ));
    }
    Ok(Principal::new(format!("{}{id}", map.id_prefix), groups))
}

/// The claim `name`: a top-level claim so named (names may hold dots, as URL-like ones do), else
/// the dotted path `a.b.c` into nested objects.
fn claim_at<'a>(claims: &'a Value, name: &str) -> Option<&'a Value> {
    claims.get(name).or_else(|| {
        name.split('.')
            .try_fold(claims, |value, step| value.get(step))
    })
}

/// The token's scopes: `scope`, space-separated (RFC 9068), or `scp`, an array of strings.
fn scopes_of(claims: &Value) -> Result<impl Iterator<Item = String>, String> {
    let scopes: Vec<String> = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        (None, Some(Value::Array(scopes))) => scopes
            .iter()
            .map(|scope| scope.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("the token's `scp` is not all strings")?,
        (None, None) => Vec::new(),
        _ => return Err("the token's `scope` is not a string (or `scp` not an array)".to_owned()),
    };
    Ok(scopes.into_iter())
}

impl JwtConfig {
    /// The principal `token` names, if it verifies against the file's keys, and the instant its
    /// `exp` names.
    ///
    /// # Errors
    ///
    /// Why it does not (for the log; the client only gets 401).
    pub fn verify(&self, token: &str) -> Result<(Principal, SystemTime), String> {
        let header = jsonwebtoken::decode_header(token).map_err(|error| error.to_string())?;
        let key = key_for(&header, &self.keys).ok_or("no configured key has the token's kid")?;
        verify_with(
            token,
            &header,
            key,
            &Expected {
                issuer: &self.issuer,
                audience: &self.audience,
                leeway_s: self.leeway_s,
                claims: &self.claims,
            },
        )
    }
}

/// The key the token's `kid` names; without one, the only key of a set of one.
pub fn key_for<'a>(
    header: &jsonwebtoken::Header,
    keys: &'a [VerifyingKey],
) -> Option<&'a VerifyingKey> {
    match (&header.kid, keys) {
        (Some(kid), keys) => keys
            .iter()
            .find(|key| key.kid.as_deref() == Some(kid.as_str())),
        (None, [only]) => Some(only),
        (None, _) => None,
    }
}
