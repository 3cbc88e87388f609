//! `[listen]` and `[[clients]]`: HTTP on loopback with clients and their principals, and what is
//! refused (no clients, plain HTTP off loopback, bad or repeated keys).

use super::*;

const HASH: &str = "2c76bfb8880e6bf4c277240005f246da8bd822cc475cffde27cd7ea4180eafe6";

#[test]
fn http_listens_on_loopback_with_clients_and_their_principals() {
    let text = format!(
        "{MINIMAL}\n[listen]\nhttp = \"127.0.0.1:8080\"\nadmin = \"[::1]:9090\"\n\
         [[clients]]\nid = \"alice\"\ngroups = [\"ops\"]\napi_key_sha256 = \"{}\"\n",
        HASH.to_ascii_uppercase()
    );
    let config = parse(Path::new("/etc/gw/gateway.toml"), &text).expect("loads");
    assert!(
        !config.listen.stdio,
        "stdio is off once http is on, unless asked for"
    );
    assert_eq!(config.listen.http.unwrap().port(), 8080);
    assert_eq!(config.listen.admin.unwrap().port(), 9090);
    assert_eq!(
        config.clients[0].principal,
        toolgate::Principal::new("alice", ["ops"])
    );
    assert_eq!(config.clients[0].key_sha256[0], 0x2c);
    let with_stdio = text.replace("[listen]\n", "[listen]\nstdio = true\n");
    assert!(
        parse(Path::new("g.toml"), &with_stdio)
            .unwrap()
            .listen
            .stdio
    );
}

#[test]
fn http_without_clients_plain_http_off_loopback_and_bad_keys_are_refused() {
    let found = problems(&format!("{MINIMAL}\n[listen]\nhttp = \"127.0.0.1:8080\"\n"));
    assert!(
        found[0].contains("clients: listen.http is set but no client is"),
        "{found:?}"
    );
    let client = format!("[[clients]]\nid = \"a\"\napi_key_sha256 = \"{HASH}\"\n");
    let found = problems(&format!(
        "{MINIMAL}\n[listen]\nhttp = \"0.0.0.0:8080\"\n{client}"
    ));
    assert!(
        found[0].contains("listen.http: 0.0.0.0:8080 is not a loopback address"),
        "{found:?}"
    );
    let allowed =
        format!("{MINIMAL}\n[listen]\nhttp = \"0.0.0.0:8080\"\nallow_plain_http = true\n{client}");
    assert!(parse(Path::new("g.toml"), &allowed).is_ok());
    let found = problems(&format!(
        "{MINIMAL}\n[listen]\nhttp = \"localhost\"\n{client}"
    ));
    assert!(
        found[0].contains("listen.http: \"localhost\" is not an address and port"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[listen]\nhttp = \"127.0.0.1:1\"\nadmin = \"127.0.0.1:1\"\n{client}"
    ));
    assert!(found[0].contains("listen.admin: must differ"), "{found:?}");
    let found = problems(&format!("{MINIMAL}\n[listen]\nstdio = false\n"));
    assert!(found[0].contains("listen: serves nothing"), "{found:?}");
    let found = problems(&format!(
        "{MINIMAL}\n[[clients]]\nid = \"a\"\napi_key_sha256 = \"abc\"\n\
         [[clients]]\nid = \"b c\"\napi_key_sha256 = \"{HASH}\"\n\
         [[clients]]\nid = \"d\"\napi_key_sha256 = \"{HASH}\"\n\
         [[clients]]\nid = \"d\"\napi_key_sha256 = \"{}\"\n",
        "0".repeat(64)
    ));
    let keys: Vec<&str> = found
        .iter()
        .map(|p| p.split(": ").nth(1).unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "clients[0].api_key_sha256",
            "clients[1].id",
            "clients[3].id"
        ],
        "{found:#?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[[clients]]\nid = \"a\"\napi_key_sha256 = \"{HASH}\"\n[[clients]]\nid = \"b\"\napi_key_sha256 = \"{HASH}\"\n"
    ));
    assert!(
        found[0].contains("clients[1].api_key_sha256: is another client's key"),
        "{found:?}"
    );
}
