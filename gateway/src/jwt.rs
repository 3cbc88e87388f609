//! Callers identified by JSON Web Tokens, verified against a configured JWK Set file with the
//! `jsonwebtoken` crate: the signature by the key the token's `kid` names, with that key's one
//! algorithm (a token cannot choose another, and `none` or a shared-secret algorithm is never
//! accepted), the issuer, the audience and the expiry. The principal is the token's `sub`, its
//! groups the string array under the configured claim.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use toolgate::Principal;

/// What `[jwt]` configures, checked.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    pub keys: Vec<VerifyingKey>,
    pub issuer: String,
    pub audience: String,
    pub groups_claim: String,
    pub leeway_s: u64,
}

/// One key of the set: its id, the algorithm it verifies, the key.
#[derive(Clone)]
pub struct VerifyingKey {
    pub kid: Option<String>,
    pub algorithm: Algorithm,
    key: DecodingKey,
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("kid", &self.kid)
            .field("algorithm", &self.algorithm)
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
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let set: JwkSet = serde_json::from_str(&text)
        .map_err(|error| format!("{} is not a JWK Set: {error}", path.display()))?;
    if set.keys.is_empty() {
        return Err(format!("{} holds no key", path.display()));
    }
    let several = set.keys.len() > 1;
    let mut keys = Vec::new();
    for (index, jwk) in set.keys.iter().enumerate() {
        let kid = jwk.common.key_id.clone();
        if several && kid.is_none() {
            return Err(format!(
                "keys[{index}] has no `kid`; with several keys each needs one"
            ));
        }
        let algorithm = algorithm_of(jwk).map_err(|why| format!("keys[{index}]: {why}"))?;
        let key = DecodingKey::from_jwk(jwk).map_err(|error| format!("keys[{index}]: {error}"))?;
        keys.push(VerifyingKey {
            kid,
            algorithm,
            key,
        });
    }
    Ok(keys)
}

/// The one algorithm a public key verifies: its `alg` if given, else the usual one for its type.
fn algorithm_of(jwk: &jsonwebtoken::jwk::Jwk) -> Result<Algorithm, String> {
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            _ => return Err("an unsupported elliptic curve".to_owned()),
        },
        AlgorithmParameters::OctetKeyPair(_) => Algorithm::EdDSA,
        AlgorithmParameters::OctetKey(_) => {
            return Err(
                "a shared-secret (oct) key: only public keys verify tokens here".to_owned(),
            );
        }
    };
    let Some(declared) = jwk.common.key_algorithm else {
        return Ok(by_type);
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
    let family = |algorithm: Algorithm| match algorithm {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => 0,
        Algorithm::ES256 | Algorithm::ES384 => 1,
        _ => 2,
    };
    if family(algorithm) != family(by_type) {
        return Err(format!("`alg` {declared:?} does not fit the key's type"));
    }
    Ok(algorithm)
}

impl JwtConfig {
    /// The principal `token` names, if it verifies, and the instant its `exp` names (what a
    /// session opened with it may not outlive).
    ///
    /// # Errors
    ///
    /// Why it does not (for the log; the client only gets 401).
    pub fn verify(&self, token: &str) -> Result<(Principal, SystemTime), String> {
        let header = jsonwebtoken::decode_header(token).map_err(|error| error.to_string())?;
        let key = match (&header.kid, self.keys.as_slice()) {
            (Some(kid), keys) => keys
                .iter()
                .find(|key| key.kid.as_deref() == Some(kid.as_str())),
            (None, [only]) => Some(only),
            (None, _) => None,
        }
        .ok_or("no configured key has the token's kid")?;
        if header.alg != key.algorithm {
            return Err(format!(
                "the token says {:?}; its key verifies {:?} only",
                header.alg, key.algorithm
            ));
        }
        let mut validation = Validation::new(key.algorithm);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = self.leeway_s;
        let claims = jsonwebtoken::decode::<Value>(token, &key.key, &validation)
            .map_err(|error| error.to_string())?
            .claims;
        let id = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|sub| {
                !sub.is_empty()
                    && sub.len() <= 256
                    && toolgate::registry::first_invisible(sub).is_none()
            })
            .ok_or("the token's `sub` is not a usable id (empty, over 256 bytes, or holding an invisible or bidi character)")?;
        let groups = match claims.get(&self.groups_claim) {
            None => Vec::new(),
            Some(Value::Array(groups)) => groups
                .iter()
                .map(|group| group.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or("the token's groups are not all strings")?,
            Some(_) => return Err("the token's groups claim is not an array".to_owned()),
        };
        if groups
            .iter()
            .any(|group| group.is_empty() || toolgate::registry::first_invisible(group).is_some())
        {
            // A group a person cannot read as it is would be judged as one it looks like.
            return Err(
                "a group in the token is empty or holds an invisible or bidi character".to_owned(),
            );
        }
        // `exp` is required and was checked above as a number; fractions and negatives are cut.
        let expires = claims
            .get("exp")
            .and_then(Value::as_f64)
            .map(|exp| UNIX_EPOCH + Duration::from_secs_f64(exp.clamp(0.0, 1e11)))
            .ok_or("the token's `exp` is not a number")?;
        Ok((Principal::new(id, groups), expires))
    }
}
