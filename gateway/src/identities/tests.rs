//! Who a credential names: an API key, else a token — never a token naming an API-key client's
//! principal, whichever source verified it.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

use super::Keys;
use crate::config::ApiClient;
use crate::jwt::{ClaimMap, JwtConfig, published_keys};

// An Ed25519 key made for these tests with `openssl genpkey -algorithm ed25519`.
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJYY6NSOjBuTdRsMTSfTGS251gWqyJDH15xzLK/1eDtr\n-----END PRIVATE KEY-----\n";
const PUBLIC: &str = "yDqFbLq92n3FFoifeFNwiuB94DDVIzEWht_sA6RiZ5A";

fn token(sub: &str) -> String {
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 300;
    let claims = json!({"iss": "https://idp.example", "aud": "gw", "sub": sub, "exp": exp});
    jsonwebtoken::encode(
        &Header::new(Algorithm::EdDSA),
        &claims,
        &EncodingKey::from_ed_pem(KEY.as_bytes()).unwrap(),
    )
    .unwrap()
}

fn jwt() -> JwtConfig {
    let set = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": PUBLIC}]}).to_string();
    JwtConfig {
        keys: published_keys(set.as_bytes()).unwrap(),
        issuer: "https://idp.example".to_owned(),
        audience: "gw".to_owned(),
        claims: ClaimMap::sub_and("groups".to_owned()),
        leeway_s: 0,
    }
}

/// An API-key client that may call `/mcp` but not sign in to the page.
fn ci_bot() -> ApiClient {
    ApiClient {
        principal: toolgate::Principal::new("ci-bot", ["ops"]),
        key_sha256: [7; 32],
        page_sign_in: false,
    }
}

#[test]
fn a_token_may_not_name_an_api_key_clients_principal() {
    let keys = Keys::new(&[ci_bot()], Some(jwt()), None);
    let (alice, ends) = keys.principal_until(&token("alice")).expect("alice");
    assert_eq!(alice.id, "alice");
    assert!(ends.is_some());
    assert!(keys.principal_until(&token("ci-bot")).is_none());
}

#[test]
fn the_page_still_knows_every_client_id_it_signs_nobody_in_with() {
    let page = Keys::for_the_page(&[ci_bot()], Some(jwt()), None);
    assert!(
        page.clients.is_empty(),
        "the client may not sign in to the page"
    );
    assert!(page.principal_until(&token("ci-bot")).is_none());
    assert!(page.principal_until(&token("alice")).is_some());
}
