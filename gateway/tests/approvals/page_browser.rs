//! The approval page in a real browser: headless Chromium (Debian's `chromium`) driven over
//! WebDriver (`chromium-driver`) by fantoccini, in front of a gateway whose upstream is written
//! with the official Python SDK. A call held for an MCP client without elicitation appears on the
//! page with all its arguments; approving runs it once (the upstream's record proves it);
//! rejecting runs nothing; a second tab's stale approve is refused; markup and script in the
//! arguments and the tool's description render as text; a request without the CSRF token, an
//! approver outside the rule's group, and the asker approving her own call under four eyes are
//! refused. A call held while the page is open appears without a reload, whole; no argument
//! value reaches a URL the page requests or a line the gateway logs.

mod approving;
mod invisible;
mod oidc_sign_in;
mod tossing;

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use support::{GATEWAY, Work, free_port, python, sha256, wait_for_port};

const ALICE_KEY: &str = "alice-key-0123456789";
const BOB_KEY: &str = "bob-key-0123456789";
const EVE_KEY: &str = "eve-key-0123456789";

/// Markup and script in an argument: the page must show these characters, not run them.
const HOSTILE_NOTES: &str = "<img src=x onerror=\"document.title='pwned-by-arguments'\"><script>document.title='pwned-by-arguments'</script><b>bold?</b>";

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Debian's chromedriver (`TOOLGATE_CHROMEDRIVER` overrides); with `CI` set a missing one fails
/// the test, otherwise the test says on stderr that it was skipped.
fn chromedriver() -> Option<PathBuf> {
    let path = std::env::var_os("TOOLGATE_CHROMEDRIVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromedriver"));
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must run the browser tests: install chromium and chromium-driver (.ci/run does)"
    );
    eprintln!(
        "note: no chromedriver at {}: the browser tests were SKIPPED, not run",
        path.display()
    );
    None
}

struct Setup {
    work: Work,
    config: PathBuf,
    gateway: Killed,
    _driver: Killed,
    mcp: u16,
    admin: u16,
    driver_port: u16,
}

fn start(python: &Path, driver: &Path) -> Setup {
    start_in("approval-page-browser", python, driver)
}

fn start_in(name: &str, python: &Path, driver: &Path) -> Setup {
    start_with(name, python, driver, (free_port(), free_port()), "")
}

/// `start_in` on the given MCP and admin ports, with `extra` appended to the config.
fn start_with(
    name: &str,
    python: &Path,
    driver: &Path,
    (mcp, admin): (u16, u16),
    extra: &str,
) -> Setup {
    let work = Work::new(name);
    let driver_port = free_port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/page_upstream.py");
    let record = work.path("record.jsonl");
    std::fs::write(&record, "").unwrap();
    work.write(
        "policy.json",
        r#"{"rules": [
          {"id": "deploy-asks", "tool": "p__deploy", "action": "ask",
           "reason": "a deploy needs a <i>second</i> person from security",
           "approvers": {"groups": ["security"], "four_eyes": true}}
        ]}"#,
    );
    let config = work.write(
        "gateway.toml",
        &format!(
            "[upstreams.p]\ncommand = {python:?}\nargs = [{script:?}]\nenv = {{ TOOLGATE_MCP_RECORD = {record:?} }}\n\
             [policy]\nlayers = [\"policy.json\"]\n\
             [audit]\njsonl = \"audit.jsonl\"\n\
             [listen]\nhttp = \"127.0.0.1:{mcp}\"\nadmin = \"127.0.0.1:{admin}\"\n\
             [[clients]]\nid = \"alice\"\ngroups = [\"security\"]\napi_key_sha256 = \"{}\"\n\
             [[clients]]\nid = \"bob\"\ngroups = [\"security\"]\napi_key_sha256 = \"{}\"\n\
             [[clients]]\nid = \"eve\"\ngroups = [\"dev\"]\napi_key_sha256 = \"{}\"\n{extra}",
            sha256(ALICE_KEY),
            sha256(BOB_KEY),
            sha256(EVE_KEY),
        ),
    );
    let mut gateway = serve(&config);
    let driver = Killed(
        Command::new(driver)
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts"),
    );
    for port in [mcp, admin] {
        gateway_listening(&mut gateway, port, &config.with_file_name("gateway.log"));
    }
    wait_for_port(driver_port);
    Setup {
        work,
        config,
        gateway,
        _driver: driver,
        mcp,
        admin,
        driver_port,
    }
}

/// Waits until the gateway listens on `port`; if it ends first or does not within 30 s, fails
/// with what it logged (`log`).
fn gateway_listening(gateway: &mut Killed, port: u16, log: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        let logged = || std::fs::read_to_string(log).unwrap_or_default();
        if let Ok(Some(status)) = gateway.0.try_wait() {
            panic!(
                "the gateway ended ({status}) before it listened on {port}; it logged:\n{}",
                logged()
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway did not listen on {port} within 30 s; it logged:\n{}",
            logged()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts the gateway, its stderr (every log line) appended to `gateway.log` beside the config.
fn serve(config: &Path) -> Killed {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(config.with_file_name("gateway.log"))
        .expect("the log file opens");
    Killed(
        Command::new(GATEWAY)
            .args(["serve", "--config"])
            .arg(config)
            .stdin(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the gateway starts"),
    )
}

impl Setup {
    /// Stops the gateway and starts it again on the same config (and so the same approval
    /// store and request-state key file).
    fn restart(&mut self) {
        let _ = self.gateway.0.kill();
        let _ = self.gateway.0.wait();
        self.gateway = serve(&self.config);
        wait_for_port(self.mcp);
        wait_for_port(self.admin);
    }
}

/// An MCP client without elicitation, signed in with `key`: what a held call looks like to it.
async fn agent(mcp: u16, key: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    // The SDK's HTTP client is built without a TLS provider of its own (as the gateway's is).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{mcp}/mcp"))
            .auth_header(key.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
        .await
        .expect("handshake in time")
        .expect("handshake")
}

/// Proposes `p__deploy` for `env`; the approval id the held call's message names.
async fn hold(client: &rmcp::service::RunningService<rmcp::RoleClient, ()>, env: &str) -> String {
    let Value::Object(arguments) = json!({"env": env, "notes": HOSTILE_NOTES}) else {
        unreachable!()
    };
    let request = CallToolRequestParams::new("p__deploy".to_owned()).with_arguments(arguments);
    let result = tokio::time::timeout(Duration::from_secs(30), client.call_tool(request))
        .await
        .expect("in time")
        .expect("a result");
    let text: String = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect();
    assert!(
        result.is_error == Some(true) && text.contains("waits for a person"),
        "{text}"
    );
    assert!(
        text.contains("(the approval page, http://127.0.0.1:"),
        "where to answer it: {text}"
    );
    let after = text.split("approval ").nth(1).expect("an approval id");
    after
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches([',', '.', ';'])
        .to_owned()
}

async fn browser(driver_port: u16) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({
            "binary": std::env::var("TOOLGATE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned()),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1600"],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{driver_port}"))
        .await
        .expect("a browser session")
}

/// Reads the page with `read` until `done` holds of what it read (up to 15 s); returns it.
async fn until(
    what: &str,
    mut read: impl AsyncFnMut() -> String,
    done: impl Fn(&str) -> bool,
) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let text = read().await;
        if done(&text) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}: {text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn sign_in(browser: &Client, admin: u16, key: &str) {
    browser
        .goto(&format!("http://127.0.0.1:{admin}/approvals"))
        .await
        .unwrap();
    // The form is shown once the page's script has asked who is signed in.
    let field = browser
        .wait()
        .for_element(Locator::Css("#signin:not([hidden]) #credential"))
        .await
        .unwrap();
    field.send_keys(key).await.unwrap();
    browser
        .find(Locator::Css("#signin-form button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser
        .wait()
        .for_element(Locator::Css("#who:not([hidden])"))
        .await
        .unwrap();
}

fn card(id: &str) -> Locator<'static> {
    Locator::XPath(Box::leak(
        format!("//article[@data-approval-id='{id}']").into_boxed_str(),
    ))
}

async fn text_in(browser: &Client, id: &str, css: &str) -> String {
    let card = browser.wait().for_element(card(id)).await.unwrap();
    card.find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Clicks `button` (`approve` or `reject`) in the card for `id` and returns the outcome text.
async fn answer(browser: &Client, id: &str, button: &str, note: &str) -> String {
    let card = browser.wait().for_element(card(id)).await.unwrap();
    if !note.is_empty() {
        card.find(Locator::Css(".note"))
            .await
            .unwrap()
            .send_keys(note)
            .await
            .unwrap();
    }
    card.find(Locator::Css(&format!("button.{button}")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        "an outcome",
        async || {
            card.find(Locator::Css(".outcome"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        },
        |text| !text.is_empty(),
    )
    .await
}

fn deploys(work: &Work) -> Vec<String> {
    work.read("record.jsonl")
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["env"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}
