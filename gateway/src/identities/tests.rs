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
    token_in(sub, &[])
}

fn token_in(sub: &str, groups: &[&str]) -> String {
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 300;
    let claims = json!({"iss": "https://idp.example", "aud": "gw", "sub": sub, "groups": groups,
        "exp": exp});
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

/// An `[oauth]` issuer whose principals are `corp:…` (no key fetched: its tokens are not made here).
fn corp_issuer() -> std::sync::Arc<crate::oauth::OAuth> {
    use crate::oauth::settings::{IssuerSettings, OAuthSettings};
    let settings = OAuthSettings {
        resource: "https://gw.example/mcp".to_owned(),
        metadata_path: "/.well-known/oauth-protected-resource/mcp".to_owned(),
        metadata_url: "https://gw.example/.well-known/oauth-protected-resource/mcp".to_owned(),
        scopes: Vec::new(),
        issuers: vec![IssuerSettings {
            issuer: "https://corp.example".to_owned(),
            audience: "https://gw.example/mcp".to_owned(),
            audience_from_resource: true,
            claims: ClaimMap {
                id_prefix: "corp:".to_owned(),
                ..ClaimMap::sub_and("groups".to_owned())
            },
            leeway_s: 0,
            refresh: std::time::Duration::from_secs(900),
            max_age: std::time::Duration::from_secs(3600),
            refetch_min: std::time::Duration::from_secs(60),
        }],
        page: None,
    };
    std::sync::Arc::new(crate::oauth::OAuth::new(settings).unwrap())
}

/// A `[jwt]` token's id is its bare `sub`: one spelled with an `[oauth]` issuer's prefix would be
/// that issuer's principal — her sessions, her allows, her approvals (an independent attack).
#[test]
fn a_jwt_token_may_not_name_an_oauth_issuers_principal() {
    for keys in [
        Keys::new(&[], Some(jwt()), Some(corp_issuer())),
        Keys::for_the_page(&[], Some(jwt()), Some(corp_issuer())),
    ] {
        for sub in ["corp:alice", "corp:bob", "corp:"] {
            assert!(keys.principal_until(&token(sub)).is_none(), "{sub}");
        }
        for sub in ["alice", "corpalice", "corp-alice", "x:corp:alice"] {
            let (principal, _) = keys.principal_until(&token(sub)).expect(sub);
            assert_eq!(principal.id, sub);
        }
    }
}

/// A token's id or group holding a space, a no-break space or a control is refused, as a
/// `[[clients]]` entry's is: `carol ` looks like `carol`, whom four eyes tells apart.
#[test]
fn a_token_naming_an_id_or_group_with_a_space_is_refused() {
    let keys = Keys::new(&[], Some(jwt()), None);
    for sub in [
        "carol ",
        " carol",
        "carol\u{a0}",
        "ca rol",
        "carol\u{2003}",
        "carol\t",
        "carol\u{85}",
    ] {
        assert!(keys.principal_until(&token(sub)).is_none(), "{sub:?}");
    }
    for group in ["ops ", "ops\u{a0}", "o ps", "ops\u{3000}", ""] {
        assert!(
            keys.principal_until(&token_in("carol", &[group])).is_none(),
            "{group:?}"
        );
    }
    let (carol, _) = keys.principal_until(&token_in("carol", &["ops"])).unwrap();
    assert_eq!(
        (carol.id.as_str(), carol.groups.as_slice()),
        ("carol", &["ops".to_owned()][..])
    );
}
