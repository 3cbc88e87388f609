//! The gateway as an OAuth 2.1 resource server, per the MCP authorization spec: it serves its
//! protected-resource metadata (RFC 9728) naming the authorization servers it trusts, answers a
//! request without a usable token with 401 and a `WWW-Authenticate` challenge pointing there, and
//! accepts access tokens (JWTs) from those issuers — their keys found by OpenID Connect discovery
//! and fetched from the issuer, the token issued for this resource (RFC 8707 audience), not
//! expired, its claims and scopes mapped to the principal's id and groups.
//!
//! # Guarantees
//!
//! - A token is checked against the keys of the issuer its `iss` names, and only of an issuer
//!   `[[oauth.issuers]]` lists; a token naming any other issuer causes no fetch.
//! - Its key is one the issuer published at the last fetch, used with an algorithm of that key's
//!   type; keys older than `keys_max_age_s` are not used (the issuer cannot be reached: its tokens
//!   are refused, fail closed), and a key the issuer withdrew stops working at the next fetch.
//! - `aud` holds the configured audience (the resource unless configured), `exp` is in the future
//!   and `nbf`, if any, in the past (both within `leeway_s`).
//! - A token naming a key not held causes at most one fetch per `keys_refetch_min_s` (after the
//!   last ended), however many such tokens arrive; one fetch runs at a time and a caller that
//!   goes away does not cancel it. A key set with no usable key withdraws them all.
//! - An ID token (carrying `nonce`, `at_hash` or `c_hash`) is not taken as an access token.

pub mod keyring;
pub mod metadata;
pub mod page_sign_in;
pub mod settings;

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde::Deserialize;
use toolgate::Principal;

use crate::jwt::{Expected, key_for, verify_with};
use keyring::{Keyring, Unavailable};
use settings::OAuthSettings;

/// The issuers whose tokens are accepted, with their keys.
#[derive(Debug)]
pub struct OAuth {
    pub settings: OAuthSettings,
    keyrings: Vec<Arc<Keyring>>,
}

/// Why a token was not accepted from the keys held.
#[derive(Debug)]
enum Refusal {
    /// Not accepted, whatever keys are fetched.
    Final(String),
    /// The issuer (by index) holds no key the token names, or its keys cannot be used: a fetch
    /// may change that.
    KeysMissing(usize, String),
}

/// The one claim read before the signature is checked: which issuer's keys to check it with.
#[derive(Deserialize)]
struct IssuerOnly {
    iss: Option<String>,
}

impl OAuth {
    /// The issuers of `settings`, holding no key yet (`spawn_refreshers` fetches them).
    ///
    /// # Errors
    ///
    /// An HTTP client cannot be built.
    pub fn new(settings: OAuthSettings) -> Result<Self, String> {
        let keyrings = settings
            .issuers
            .iter()
            .cloned()
            .map(|issuer| Keyring::new(issuer).map(Arc::new))
            .collect::<Result<_, _>>()?;
        Ok(Self { settings, keyrings })
    }

    /// The keyring of the issuer at `index` in the settings.
    pub fn keyring(&self, index: usize) -> &Arc<Keyring> {
        &self.keyrings[index]
    }

    /// The principal a token names, from the keys held now (no fetch).
    ///
    /// # Errors
    ///
    /// Why it was refused (for the log).
    #[cfg(test)]
    pub fn verify_held(&self, token: &str) -> Result<(Principal, SystemTime), String> {
        self.verify_held_at(token, None)
    }

    /// `verify_held` for the endpoint whose resource is `resource` (a tool set's; `None`: the
    /// configured resource).
    ///
    /// # Errors
    ///
    /// Why it was refused (for the log).
    pub fn verify_held_at(
        &self,
        token: &str,
        resource: Option<&str>,
    ) -> Result<(Principal, SystemTime), String> {
        self.check(token, resource)
            .map_err(|refusal| match refusal {
                Refusal::Final(why) | Refusal::KeysMissing(_, why) => why,
            })
    }

    /// The principal a token names; when its issuer holds no key it names (or its keys are
    /// stale), after fetching them again (at most once per `keys_refetch_min_s`).
    ///
    /// # Errors
    ///
    /// Why it was refused (for the log).
    pub async fn verify(&self, token: &str) -> Result<(Principal, SystemTime), String> {
        self.verify_at(token, None).await
    }

    /// `verify` for the endpoint whose resource is `resource` (a tool set's; `None`: the
    /// configured resource).
    ///
    /// # Errors
    ///
    /// Why it was refused (for the log).
    pub async fn verify_at(
        &self,
        token: &str,
        resource: Option<&str>,
    ) -> Result<(Principal, SystemTime), String> {
        match self.check(token, resource) {
            Err(Refusal::KeysMissing(issuer, _)) => {
                self.keyrings[issuer].refetch().await;
                self.verify_held_at(token, resource)
            }
            other => other.map_err(|refusal| match refusal {
                Refusal::Final(why) | Refusal::KeysMissing(_, why) => why,
            }),
        }
    }

    fn check(
        &self,
        token: &str,
        resource: Option<&str>,
    ) -> Result<(Principal, SystemTime), Refusal> {
        // Read unverified once, for the header (which key) and `iss` (whose keys); the
        // signature is checked below, with that key.
        let unverified = jsonwebtoken::dangerous::insecure_decode::<IssuerOnly>(token)
            .map_err(|error| Refusal::Final(format!("not a JWT: {error}")))?;
        let header = unverified.header;
        let claimed = unverified
            .claims
            .iss
            .ok_or_else(|| Refusal::Final("the token names no issuer (`iss`)".to_owned()))?;
        let (index, keyring) = self
            .keyrings
            .iter()
            .enumerate()
            .find(|(_, keyring)| keyring.settings.issuer == claimed)
            .ok_or_else(|| {
                Refusal::Final(format!(
                    "the token's issuer {:?} is not one [[oauth.issuers]] names",
                    claimed.escape_debug().to_string()
                ))
            })?;
        let issuer = &keyring.settings;
        let keys = keyring.keys(Instant::now()).map_err(|unavailable| {
            Refusal::KeysMissing(
                index,
                match unavailable {
                    Unavailable::NeverFetched => {
                        format!("the keys of {} could not be fetched yet", issuer.issuer)
                    }
                    Unavailable::Stale => format!(
                        "the keys of {} were last fetched over keys_max_age_s ago",
                        issuer.issuer
                    ),
                },
            )
        })?;
        let key = key_for(&header, &keys).ok_or_else(|| {
            Refusal::KeysMissing(
                index,
                format!("{} publishes no key with the token's kid", issuer.issuer),
            )
        })?;
        verify_with(
            token,
            &header,
            key,
            &Expected {
                issuer: &issuer.issuer,
                audience: match resource {
                    Some(resource) if issuer.audience_from_resource => resource,
                    _ => &issuer.audience,
                },
                leeway_s: issuer.leeway_s,
                claims: &issuer.claims,
            },
        )
        .map_err(Refusal::Final)
    }

    /// Fetches every issuer's keys now, then on its schedule (sooner, after a failure), on the
    /// current runtime.
    pub fn spawn_refreshers(self: &Arc<Self>) {
        for index in 0..self.keyrings.len() {
            let oauth = Arc::clone(self);
            tokio::spawn(async move {
                let keyring = &oauth.keyrings[index];
                // Said once at the first fetch and once after each recovery, not every hour.
                let mut said = false;
                loop {
                    let wait = match keyring.refresh().await {
                        Ok(count) => {
                            if !said {
                                tracing::info!(issuer = %keyring.settings.issuer, "oauth: {count} signing keys fetched");
                                said = true;
                            }
                            keyring.settings.refresh
                        }
                        Err(why) => {
                            tracing::warn!(issuer = %keyring.settings.issuer, "oauth: cannot fetch the issuer's keys (its tokens are refused once the keys held are older than keys_max_age_s, or now if none is held): {}", why.escape_debug());
                            said = false;
                            keyring
                                .settings
                                .refresh
                                .min(std::time::Duration::from_secs(30))
                        }
                    };
                    tokio::time::sleep(wait).await;
                }
            });
        }
    }

    /// Fetches every issuer's keys once.
    #[cfg(test)]
    pub async fn fetch_all(&self) {
        for keyring in &self.keyrings {
            if let Err(why) = keyring.refresh().await {
                tracing::warn!(issuer = %keyring.settings.issuer, "oauth: cannot fetch the issuer's keys: {}", why.escape_debug());
            }
        }
    }
}

#[cfg(test)]
mod tests;
