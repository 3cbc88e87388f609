//! One issuer's signing keys: found through OpenID Connect discovery (the issuer's
//! `/.well-known/openid-configuration`, else, if that is not found, its RFC 8414 metadata) and
//! fetched from its `jwks_uri`; kept until the next fetch, fetched again on a schedule and when a
//! token names a key not held (at most once per `refetch_min` after the last fetch ended), and
//! not used once older than `max_age`, so an issuer that cannot be reached fails closed.
//!
//! One fetch runs at a time, on a task of its own: every caller that arrives while it runs waits
//! for that same fetch, and a caller that goes away (a client that hung up) neither stops it nor
//! leaves it counted as done.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::settings::IssuerSettings;
use crate::jwt::VerifyingKey;

/// The most bytes read of a discovery document or a key set.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// What `get` says of a 404.
const NOT_FOUND: &str = "answered 404 Not Found";
/// How long one request of a fetch may take (a fetch makes two, or three when the issuer has no
/// OpenID Connect discovery document).
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// An issuer's keys as last fetched, and how to fetch them again.
#[derive(Debug)]
pub struct Keyring {
    pub settings: IssuerSettings,
    client: reqwest::Client,
    held: RwLock<Option<Held>>,
    flight: std::sync::Mutex<Flight>,
    /// Told each time a fetch ends.
    landed: tokio::sync::Notify,
}

/// The fetch under way, if any, and the last that ended.
#[derive(Debug, Default)]
struct Flight {
    running: bool,
    /// Fetches ended so far: a caller waits until it moves past the count it saw.
    ended: u64,
    last_ended: Option<Instant>,
    last_result: Option<Result<usize, String>>,
}

#[derive(Debug)]
struct Held {
    keys: Arc<[VerifyingKey]>,
    endpoints: Endpoints,
    fetched: Instant,
}

/// Where a person signs in at the issuer and where a code is exchanged, as its discovery
/// document names them (the approval page's sign-in).
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    pub authorization: Option<reqwest::Url>,
    pub token: Option<reqwest::Url>,
    /// The issuer says it names itself in every authorization response (RFC 9207).
    pub iss_parameter: bool,
}

/// Why an issuer's keys cannot be used now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// None was ever fetched.
    NeverFetched,
    /// The last fetch that worked is older than `max_age`.
    Stale,
}

impl Keyring {
    /// An issuer's keyring, holding nothing until the first fetch.
    ///
    /// # Errors
    ///
    /// The HTTP client cannot be built.
    pub fn new(settings: IssuerSettings) -> Result<Self, String> {
        // reqwest panics building a client before a TLS provider is installed; `main` installs
        // it first, and this makes the order not matter (a second install is a no-op).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            // The issuer's documents are read where discovery says, never where a redirect says.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|error| format!("cannot build an HTTP client: {error}"))?;
        Ok(Self {
            settings,
            client,
            held: RwLock::new(None),
            flight: std::sync::Mutex::default(),
            landed: tokio::sync::Notify::new(),
        })
    }

    /// The keys, unless none was fetched or the last fetch is older than `max_age`.
    ///
    /// # Errors
    ///
    /// Why they cannot be used.
    pub fn keys(&self, now: Instant) -> Result<Arc<[VerifyingKey]>, Unavailable> {
        let held = self
            .held
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match held.as_ref() {
            None => Err(Unavailable::NeverFetched),
            Some(held) if now.duration_since(held.fetched) > self.settings.max_age => {
                Err(Unavailable::Stale)
            }
            Some(held) => Ok(Arc::clone(&held.keys)),
        }
    }

    /// Fetches the keys again, unless the last fetch ended less than `refetch_min` ago; waits
    /// for a fetch already under way instead of starting another. What a token naming an unknown
    /// key, or an issuer whose keys are stale, causes.
    pub async fn refetch(self: &Arc<Self>) {
        if let Err(why) = self.fly(false).await {
            tracing::warn!(issuer = %self.settings.issuer, "oauth: cannot fetch the issuer's keys: {}", why.escape_debug());
        }
    }

    /// Fetches the keys now (or waits for the fetch under way) and keeps them: the schedule's
    /// fetch.
    ///
    /// # Errors
    ///
    /// Why they could not be fetched; the keys held are kept (until `max_age`).
    pub async fn refresh(self: &Arc<Self>) -> Result<usize, String> {
        self.fly(true).await
    }

    /// The one fetch: started on a task of its own unless one runs (or, unless `now`, one ended
    /// within `refetch_min`), then awaited.
    async fn fly(self: &Arc<Self>, now: bool) -> Result<usize, String> {
        let seen = {
            let mut flight = self.flight();
            if !flight.running {
                let recent = flight
                    .last_ended
                    .is_some_and(|ended| ended.elapsed() < self.settings.refetch_min);
                if recent && !now {
                    return Err("fetched less than keys_refetch_min_s ago".to_owned());
                }
                flight.running = true;
                let keyring = Arc::clone(self);
                tokio::spawn(async move {
                    let result = keyring.fetch_and_keep().await;
                    let mut flight = keyring.flight();
                    flight.running = false;
                    flight.ended += 1;
                    flight.last_ended = Some(Instant::now());
                    flight.last_result = Some(result);
                    drop(flight);
                    keyring.landed.notify_waiters();
                });
            }
            flight.ended
        };
        loop {
            // Registered before the count is read, so an end between the two is not missed.
            let landed = self.landed.notified();
            tokio::pin!(landed);
            landed.as_mut().enable();
            {
                let flight = self.flight();
                if flight.ended != seen {
                    return flight
                        .last_result
                        .clone()
                        .unwrap_or_else(|| Err("no fetch ended".to_owned()));
                }
            }
            landed.await;
        }
    }

    fn flight(&self) -> std::sync::MutexGuard<'_, Flight> {
        self.flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn fetch_and_keep(&self) -> Result<usize, String> {
        let (keys, endpoints) = self.fetch().await?;
        let count = keys.len();
        let kids: Vec<&str> = keys.iter().filter_map(|key| key.kid.as_deref()).collect();
        tracing::debug!(issuer = %self.settings.issuer, ?kids, "oauth: fetched the issuer's keys");
        *self
            .held
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Held {
            keys: keys.into(),
            endpoints,
            fetched: Instant::now(),
        });
        Ok(count)
    }

    /// The sign-in endpoints of the last discovery that worked, if any.
    pub fn endpoints(&self) -> Option<Endpoints> {
        let held = self
            .held
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        held.as_ref().map(|held| held.endpoints.clone())
    }

    /// POSTs `form` to `url` (with HTTP Basic client authentication if given): the JSON answer
    /// of a 200, else what the server said.
    ///
    /// # Errors
    ///
    /// The request failed, the answer was not 200, larger than 1 MiB, or not JSON.
    pub async fn post_form(
        &self,
        url: &reqwest::Url,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<serde_json::Value, String> {
        let body = reqwest::Url::parse_with_params("http://form.invalid/", form)
            .map_err(|error| error.to_string())?
            .query()
            .unwrap_or("")
            .to_owned();
        let mut request = self
            .client
            .post(url.clone())
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        if let Some((user, password)) = basic {
            request = request.basic_auth(user, Some(password));
        }
        let response = request
            .send()
            .await
            .map_err(|error| crate::causes::with_causes(&error))?;
        let status = response.status();
        let body = read_capped(response).await?;
        let json: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|error| format!("answered {status} with no JSON: {error}"))?;
        if status != http::StatusCode::OK {
            // OAuth errors are `error` and `error_description` (RFC 6749 §5.2): the provider's
            // words, not a secret.
            let said = |name: &str| {
                json.get(name)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("")
            };
            return Err(format!(
                "answered {status}: {} {}",
                said("error"),
                said("error_description")
            ));
        }
        Ok(json)
    }

    /// Discovery, then the key set.
    async fn fetch(&self) -> Result<(Vec<VerifyingKey>, Endpoints), String> {
        let issuer = &self.settings.issuer;
        let document = self.discover().await?;
        // OpenID Connect Discovery §4.3: the document must name the issuer it was asked for,
        // or a token claiming one issuer would be checked with another's keys.
        if document.get("issuer").and_then(serde_json::Value::as_str) != Some(issuer.as_str()) {
            return Err(format!(
                "its discovery document names another issuer ({:?}), not {issuer:?}",
                document
                    .get("issuer")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("none")
            ));
        }
        let jwks_uri = document
            .get("jwks_uri")
            .and_then(serde_json::Value::as_str)
            .ok_or("its discovery document has no `jwks_uri`")?;
        // Quoted wherever it is told: the provider wrote it, and a line break in it would forge
        // a log line.
        self.as_secure_as_the_issuer(jwks_uri)
            .map_err(|why| format!("its jwks_uri {jwks_uri:?} {why}"))?;
        let body = self
            .get(jwks_uri)
            .await
            .map_err(|why| format!("{jwks_uri:?}: {why}"))?;
        let keys =
            crate::jwt::published_keys(&body).map_err(|why| format!("{jwks_uri:?}: {why}"))?;
        if keys.is_empty() {
            // Kept as it is: an empty set withdraws every key, and no token of this issuer is
            // taken until it publishes one again.
            tracing::warn!(issuer = %issuer, "oauth: the issuer publishes no signing key this gateway can use: its tokens are refused");
        }
        // Used only to sign a person in to the approval page; an endpoint that is not https
        // (or loopback http with a loopback issuer) is left out rather than followed.
        let endpoint = |name: &str| {
            document
                .get(name)
                .and_then(serde_json::Value::as_str)
                .and_then(|url| self.as_secure_as_the_issuer(url).ok())
        };
        let endpoints = Endpoints {
            authorization: endpoint("authorization_endpoint"),
            token: endpoint("token_endpoint"),
            iss_parameter: document
                .get("authorization_response_iss_parameter_supported")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
        };
        Ok((keys, endpoints))
    }

    /// `url`, if it is https, or loopback http for an issuer that is itself loopback http: an
    /// https issuer's keys never come in the clear, even from this host.
    fn as_secure_as_the_issuer(&self, url: &str) -> Result<reqwest::Url, String> {
        let url = secure_url(url)?;
        if url.scheme() == "http" && !self.settings.issuer.starts_with("http://") {
            return Err("is plain http while the issuer is https".to_owned());
        }
        Ok(url)
    }

    /// The issuer's OpenID Connect discovery document, else, if it has none (404), its RFC 8414
    /// metadata.
    async fn discover(&self) -> Result<serde_json::Value, String> {
        let issuer = self.settings.issuer.trim_end_matches('/');
        let mut tried = Vec::new();
        for url in discovery_urls(issuer)? {
            match self.get(&url).await {
                Ok(body) => {
                    return serde_json::from_slice(&body)
                        .map_err(|error| format!("{url} is not JSON: {error}"));
                }
                // Only a document that is not there sends the fetch on: a provider that does not
                // answer is not asked twice.
                Err(why) if why.starts_with(NOT_FOUND) => tried.push(format!("{url}: {why}")),
                Err(why) => {
                    tried.push(format!("{url}: {why}"));
                    break;
                }
            }
        }
        Err(format!("no discovery document: {}", tried.join("; ")))
    }

    /// The body of `url` (200 only), at most `MAX_DOCUMENT_BYTES`.
    async fn get(&self, url: &str) -> Result<Vec<u8>, String> {
        let response = self
            .client
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| crate::causes::with_causes(&error))?;
        if response.status() == http::StatusCode::NOT_FOUND {
            return Err(NOT_FOUND.to_owned());
        }
        if response.status() != http::StatusCode::OK {
            return Err(format!("answered {}", response.status()));
        }
        read_capped(response).await
    }
}

/// A response's body, at most `MAX_DOCUMENT_BYTES`.
async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| crate::causes::with_causes(&error))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Where an issuer's metadata may be: OpenID Connect's `{issuer}/.well-known/openid-configuration`,
/// then RFC 8414's `/.well-known/oauth-authorization-server` inserted before the issuer's path.
fn discovery_urls(issuer: &str) -> Result<[String; 2], String> {
    let url =
        reqwest::Url::parse(issuer).map_err(|error| format!("the issuer is not a URL: {error}"))?;
    let path = url.path().trim_end_matches('/');
    let origin = url.origin().ascii_serialization();
    Ok([
        format!("{issuer}/.well-known/openid-configuration"),
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
    ])
}

/// `Ok` for an `https` URL, or an `http` one to a loopback host (a provider on the same machine,
/// as in tests); keys fetched in the clear from elsewhere could be anyone's.
///
/// # Errors
///
/// What is wrong with it.
pub fn secure_url(text: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(text).map_err(|error| format!("is not a URL: {error}"))?;
    let host = url.host_str().unwrap_or("");
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback());
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        "http" => Err("is plain http to a host that is not loopback: use https".to_owned()),
        other => Err(format!("has scheme {other:?}: use https")),
    }
}
