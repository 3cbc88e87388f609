//! A real OpenID provider for the OAuth tests: `oidc-provider` from npm (installed by
//! `.ci/node-mcp`), run by `tests/mcp/oidc_provider.mjs` with accounts `alice` (groups `ops`,
//! `security`) and `bob` (none), clients `svc` and `short` (client credentials, groups `ops`;
//! `short`'s tokens last 2 s), `page` (the approval page's, secret `page-secret`) and
//! `page-public` (the same without a secret: PKCE alone).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::Work;

/// The provider, a child process on a fixed port (a restart keeps the issuer).
pub struct Provider {
    child: Child,
    pub port: u16,
    pub issuer: String,
}

impl Provider {
    /// Starts the provider from `node`'s directory (ES modules resolve `node_modules` from the
    /// script's place) with one signing key, `kid`; the approval page's client `page` (public,
    /// PKCE) comes back to `page_callback`.
    pub fn start(node: &Path, work: &Work, port: u16, kid: &str) -> Self {
        Self::start_with(node, work, port, kid, "http://127.0.0.1:1/unused")
    }

    pub fn start_with(node: &Path, work: &Work, port: u16, kid: &str, page_callback: &str) -> Self {
        let script = node.join(format!("oidc_provider-{}.mjs", std::process::id()));
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/oidc_provider.mjs"),
            &script,
        )
        .expect("copy the provider");
        let config = work.write(
            &format!("oidc-{kid}.json"),
            &json!({
                "port": port,
                "keys": [{"kid": kid, "alg": "RS256"}],
                "clients": [
                    {"client_id": "svc", "client_secret": "svc-secret", "groups": ["ops"],
                     "token_endpoint_auth_method": "client_secret_post"},
                    {"client_id": "short", "client_secret": "short-secret", "groups": ["ops"],
                     "access_token_ttl": 2, "token_endpoint_auth_method": "client_secret_post"},
                    {"client_id": "page", "client_secret": "page-secret",
                     "redirect_uris": [page_callback]},
                    {"client_id": "page-public", "redirect_uris": [page_callback]},
                ],
                "accounts": {"alice": {"groups": ["ops", "security"]}, "bob": {"groups": []}},
                "scopes": ["mcp"],
            })
            .to_string(),
        );
        let log = std::fs::File::create(work.path(&format!("oidc-{kid}.log"))).unwrap();
        let mut child = Command::new("node")
            .arg(&script)
            .arg(&config)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("node runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the provider says where it is");
        let started: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("{line:?}: {}", work.read(&format!("oidc-{kid}.log"))));
        Self {
            child,
            port,
            issuer: started["issuer"].as_str().unwrap().to_owned(),
        }
    }

    /// An access token from the client-credentials grant, for `resource`.
    pub fn token(&self, client: &str, resource: &str) -> String {
        let body = format!(
            "grant_type=client_credentials&scope=mcp&client_id={client}&client_secret={client}-secret&resource={}",
            resource.replace(':', "%3A").replace('/', "%2F")
        );
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        write!(
            stream,
            "POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
        assert!(head.starts_with("HTTP/1.1 200"), "{reply}");
        let answer: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{reply}"));
        answer["access_token"].as_str().unwrap().to_owned()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
