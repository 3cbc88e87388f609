//! The verifier against an issuer served here: discovery and a key set that the tests change,
//! with every fetch of the key set counted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::OAuth;
use super::settings::{IssuerSettings, OAuthSettings};
use crate::jwt::ClaimMap;

// Two Ed25519 keys made for these tests with `openssl genpkey -algorithm ed25519`.
const KEY_1: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJYY6NSOjBuTdRsMTSfTGS251gWqyJDH15xzLK/1eDtr\n-----END PRIVATE KEY-----\n";
const PUBLIC_1: &str = "yDqFbLq92n3FFoifeFNwiuB94DDVIzEWht_sA6RiZ5A";
const KEY_2: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHcAdmPQ0RBrTrrTxzgWP//QjBPLly1x4kUfO9K6veGe\n-----END PRIVATE KEY-----\n";
const PUBLIC_2: &str = "FPpHieQ0VVaZf15gEi1I5MDOTYSdWkFkFRTUykP8u_c";
const RESOURCE: &str = "http://127.0.0.1:1/mcp";

/// An issuer on a local port: its discovery document and its key set, which a test may replace.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Value>>,
    /// What the discovery document says the issuer is (`None`: the truth).
    claimed: Arc<Mutex<Option<String>>>,
    fetches: Arc<AtomicUsize>,
    up: Arc<std::sync::atomic::AtomicBool>,
    /// How long the key set takes to answer.
    delay: Arc<Mutex<Duration>>,
}

fn jwk(kid: &str, x: &str) -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"})
}

async fn issuer() -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let keys = Arc::new(Mutex::new(json!({"keys": [jwk("k1", PUBLIC_1)]})));
    let claimed = Arc::new(Mutex::new(None::<String>));
    let fetches = Arc::new(AtomicUsize::new(0));
    let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let delay = Arc::new(Mutex::new(Duration::ZERO));
    let (base, claimed_by, served_keys, counted, is_up, slow) = (
        url.clone(),
        Arc::clone(&claimed),
        Arc::clone(&keys),
        Arc::clone(&fetches),
        Arc::clone(&up),
        Arc::clone(&delay),
    );
    let app = axum::Router::new()
        .route(
            "/.well-known/openid-configuration",
            axum::routing::get(move || {
                let issuer = claimed_by.lock().unwrap().clone().unwrap_or(base.clone());
                let jwks = format!("{base}/jwks");
                async move { axum::Json(json!({"issuer": issuer, "jwks_uri": jwks})) }
            }),
        )
        .route(
            "/jwks",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let up = is_up.load(Ordering::SeqCst);
                let body = served_keys.lock().unwrap().clone();
                let delay = *slow.lock().unwrap();
                async move {
                    tokio::time::sleep(delay).await;
                    if up {
                        Ok(axum::Json(body))
                    } else {
                        Err(http::StatusCode::SERVICE_UNAVAILABLE)
                    }
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer {
        url,
        keys,
        claimed,
        fetches,
        up,
        delay,
    }
}

fn oauth(issuer: &Issuer, refetch_min: Duration, max_age: Duration) -> OAuth {
    OAuth::new(OAuthSettings {
        resource: RESOURCE.to_owned(),
        metadata_path: "/.well-known/oauth-protected-resource/mcp".to_owned(),
        metadata_url: "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp".to_owned(),
        scopes: Vec::new(),
        issuers: vec![IssuerSettings {
            issuer: issuer.url.clone(),
            audience: RESOURCE.to_owned(),
            audience_from_resource: true,
            claims: ClaimMap {
                id_claim: "sub".to_owned(),
                id_prefix: String::new(),
                groups_claim: "realm_access.roles".to_owned(),
                scope_group_prefix: Some("scope:".to_owned()),
            },
            leeway_s: 0,
            refresh: Duration::from_secs(900),
            max_age,
            refetch_min,
        }],
        page: None,
    })
    .unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn token(pem: &str, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

fn claims(issuer: &Issuer) -> Value {
    json!({
        "iss": issuer.url, "aud": RESOURCE, "sub": "alice", "exp": now() + 300,
        "realm_access": {"roles": ["ops"]}, "scope": "mcp tools.read",
    })
}

#[tokio::test]
async fn a_token_of_the_issuer_names_its_principal_from_the_mapped_claims() {
    let issuer = issuer().await;
    let oauth = oauth(&issuer, Duration::from_secs(60), Duration::from_secs(3600));
    oauth.fetch_all().await;
    let (principal, expires) = oauth
        .verify_held(&token(KEY_1, "k1", &claims(&issuer)))
        .expect("accepted");
    assert_eq!(principal.id, "alice");
    assert_eq!(principal.groups, ["ops", "scope:mcp", "scope:tools.read"]);
    assert!(expires > SystemTime::now());
}

#[tokio::test]
async fn what_a_token_must_carry_is_checked() {
    let issuer = issuer().await;
    let oauth = oauth(&issuer, Duration::from_secs(60), Duration::from_secs(3600));
    oauth.fetch_all().await;
    let good = claims(&issuer);
    let with = |key: &str, value: Value| {
        let mut claims = good.clone();
        claims[key] = value;
        claims
    };
    let without = |key: &str| {
        let mut claims = good.clone();
        claims.as_object_mut().unwrap().remove(key);
        claims
    };
    for (why, claims) in [
        (
            "another resource",
            with("aud", json!("http://127.0.0.1:2/mcp")),
        ),
        ("no audience", without("aud")),
        ("expired", with("exp", json!(now() - 5))),
        ("no expiry", without("exp")),
        ("not yet valid", with("nbf", json!(now() + 300))),
        ("no subject", without("sub")),
        (
            "an invisible character in the subject",
            with("sub", json!("ali\u{200b}ce")),
        ),
        (
            "groups not strings",
            with("realm_access", json!({"roles": [1]})),
        ),
        (
            "a group only the gateway gives",
            with("realm_access", json!({"roles": ["toolset:ops"]})),
        ),
    ] {
        let refused = oauth.verify_held(&token(KEY_1, "k1", &claims));
        assert!(refused.is_err(), "{why}: accepted");
    }
    // Signed by another key under the issuer's kid: the signature fails.
    assert!(oauth.verify_held(&token(KEY_2, "k1", &good)).is_err());
    // A shared-secret algorithm keyed with the public key's bytes (algorithm confusion).
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".to_owned());
    let confused = jsonwebtoken::encode(
        &header,
        &good,
        &EncodingKey::from_secret(PUBLIC_1.as_bytes()),
    )
    .unwrap();
    assert!(
        oauth
            .verify_held(&confused)
            .unwrap_err()
            .contains("verifies")
    );
}

#[tokio::test]
async fn a_token_naming_an_issuer_not_listed_causes_no_fetch() {
    let issuer = issuer().await;
    let oauth = oauth(&issuer, Duration::ZERO, Duration::from_secs(3600));
    oauth.fetch_all().await;
    let fetched = issuer.fetches.load(Ordering::SeqCst);
    let mut claims = claims(&issuer);
    claims["iss"] = json!("http://127.0.0.1:9/elsewhere");
    let why = oauth
        .verify(&token(KEY_1, "k9", &claims))
        .await
        .unwrap_err();
    assert!(why.contains("not one [[oauth.issuers]] names"), "{why}");
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), fetched);
}

#[tokio::test]
async fn unknown_keys_cause_one_fetch_per_interval_however_many_tokens_name_them() {
    let issuer = issuer().await;
    // Nothing fetched yet (a provider that was down at startup): the first token fetches.
    let oauth = Arc::new(oauth(
        &issuer,
        Duration::from_secs(60),
        Duration::from_secs(3600),
    ));
    let forged = token(KEY_2, "k-unknown", &claims(&issuer));
    let burst = || async {
        let tries: Vec<_> = (0..20)
            .map(|_| {
                let (oauth, forged) = (Arc::clone(&oauth), forged.clone());
                tokio::spawn(async move { oauth.verify(&forged).await })
            })
            .collect();
        for attempt in tries {
            assert!(attempt.await.unwrap().is_err());
        }
    };
    burst().await;
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
    // Inside keys_refetch_min_s of that fetch, more of them fetch nothing.
    burst().await;
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
    // The good key was fetched by that one fetch.
    assert!(
        oauth
            .verify_held(&token(KEY_1, "k1", &claims(&issuer)))
            .is_ok()
    );
}

#[tokio::test]
async fn a_rotated_key_is_fetched_when_first_named_and_the_withdrawn_one_stops_working() {
    let issuer = issuer().await;
    let oauth = oauth(&issuer, Duration::ZERO, Duration::from_secs(3600));
    oauth.fetch_all().await;
    let old = token(KEY_1, "k1", &claims(&issuer));
    assert!(oauth.verify(&old).await.is_ok());
    *issuer.keys.lock().unwrap() = json!({"keys": [jwk("k2", PUBLIC_2)]});
    let new = token(KEY_2, "k2", &claims(&issuer));
    assert!(oauth.verify_held(&new).is_err(), "not held before a fetch");
    assert!(
        oauth.verify(&new).await.is_ok(),
        "fetched on the unknown kid"
    );
    assert!(oauth.verify(&old).await.is_err(), "k1 withdrawn");
}

#[tokio::test]
async fn keys_not_fetched_again_within_their_max_age_are_not_used() {
    let issuer = issuer().await;
    let oauth = oauth(&issuer, Duration::ZERO, Duration::from_millis(300));
    oauth.fetch_all().await;
    let good = token(KEY_1, "k1", &claims(&issuer));
    assert!(oauth.verify(&good).await.is_ok());
    issuer.up.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let why = oauth.verify(&good).await.unwrap_err();
    assert!(why.contains("keys_max_age_s"), "{why}");
    issuer.up.store(true, Ordering::SeqCst);
    assert!(oauth.verify(&good).await.is_ok(), "back once a fetch works");
}

#[tokio::test]
async fn a_discovery_document_naming_another_issuer_yields_no_keys() {
    let issuer = issuer().await;
    *issuer.claimed.lock().unwrap() = Some("http://127.0.0.1:9/impostor".to_owned());
    let oauth = oauth(&issuer, Duration::ZERO, Duration::from_secs(3600));
    oauth.fetch_all().await;
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 0);
    let why = oauth
        .verify(&token(KEY_1, "k1", &claims(&issuer)))
        .await
        .unwrap_err();
    assert!(why.contains("could not be fetched"), "{why}");
}

#[tokio::test]
async fn a_caller_that_goes_away_neither_stops_the_fetch_nor_leaves_it_counted_as_done() {
    let issuer = issuer().await;
    // The provider has rotated to k2 and answers slowly; nothing is held yet.
    *issuer.keys.lock().unwrap() = json!({"keys": [jwk("k2", PUBLIC_2)]});
    *issuer.delay.lock().unwrap() = Duration::from_millis(300);
    let oauth = Arc::new(oauth(
        &issuer,
        Duration::from_secs(30),
        Duration::from_secs(3600),
    ));
    let junk = token(KEY_1, "attacker-kid", &claims(&issuer));
    let attacker = {
        let oauth = Arc::clone(&oauth);
        tokio::spawn(async move { oauth.verify(&junk).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    attacker.abort(); // the client hung up mid-fetch
    let _ = attacker.await;
    // The fetch went on and its keys are held: the rotated key's first token is taken.
    let good = token(KEY_2, "k2", &claims(&issuer));
    assert!(oauth.verify(&good).await.is_ok());
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn callers_arriving_during_a_slow_fetch_wait_for_that_one() {
    let issuer = issuer().await;
    *issuer.delay.lock().unwrap() = Duration::from_millis(400);
    // keys_refetch_min_s of zero: without one fetch at a time, each caller would fetch.
    let oauth = Arc::new(oauth(&issuer, Duration::ZERO, Duration::from_secs(3600)));
    let started = std::time::Instant::now();
    let tries: Vec<_> = (0..8)
        .map(|index| {
            let oauth = Arc::clone(&oauth);
            let token = token(KEY_1, &format!("unknown-{index}"), &claims(&issuer));
            tokio::spawn(async move { oauth.verify(&token).await })
        })
        .collect();
    for attempt in tries {
        assert!(attempt.await.unwrap().is_err());
    }
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        1,
        "one fetch for all"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_issuer_that_withdraws_every_key_has_no_token_taken() {
    let issuer = issuer().await;
    let oauth = Arc::new(oauth(&issuer, Duration::ZERO, Duration::from_secs(3600)));
    oauth.fetch_all().await;
    let old = token(KEY_1, "k1", &claims(&issuer));
    assert!(oauth.verify(&old).await.is_ok());
    *issuer.keys.lock().unwrap() = json!({"keys": []});
    oauth.fetch_all().await;
    assert!(oauth.verify(&old).await.is_err(), "withdrawn");
}

#[tokio::test]
async fn keys_of_kinds_not_verified_here_are_skipped_not_fatal() {
    let issuer = issuer().await;
    let oauth = Arc::new(oauth(&issuer, Duration::ZERO, Duration::from_secs(3600)));
    oauth.fetch_all().await;
    let old = token(KEY_1, "k1", &claims(&issuer));
    // Rotated to k2, beside an encryption key and kinds jsonwebtoken cannot read.
    *issuer.keys.lock().unwrap() = json!({"keys": [
        {"kty": "OKP", "crv": "X25519", "use": "enc", "kid": "e1", "x": PUBLIC_2},
        {"kty": "EC", "crv": "secp256k1", "kid": "e2", "x": PUBLIC_2, "y": PUBLIC_2},
        {"kty": "AKP", "alg": "ML-DSA-44", "kid": "e3", "pub": PUBLIC_2},
        {"kty": "OKP", "crv": "Ed448", "kid": "e4", "x": PUBLIC_2},
        jwk("k2", PUBLIC_2),
    ]});
    oauth.fetch_all().await;
    assert!(
        oauth
            .verify(&token(KEY_2, "k2", &claims(&issuer)))
            .await
            .is_ok()
    );
    assert!(oauth.verify(&old).await.is_err(), "k1 withdrawn");
}

#[tokio::test]
async fn an_id_token_is_not_an_access_token() {
    let issuer = issuer().await;
    let oauth = oauth(&issuer, Duration::ZERO, Duration::from_secs(3600));
    oauth.fetch_all().await;
    for claim in ["nonce", "at_hash", "c_hash"] {
        let mut claims = claims(&issuer);
        claims[claim] = json!("x");
        let why = oauth.verify_held(&token(KEY_1, "k1", &claims)).unwrap_err();
        assert!(why.contains("ID token"), "{claim}: {why}");
    }
}
