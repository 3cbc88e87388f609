//! MCP over Streamable HTTP (the SDK's server, both revisions), behind API-key authentication,
//! and the admin listener with `/metrics`, `/healthz` and the approval page.
//!
//! A request without a key, or with a key no client holds, gets 401 and reaches nothing. A POST
//! body holding a duplicate JSON key gets 400 before the SDK parses it (parsers disagree on which
//! value wins). The authenticated client's principal travels with the request to the gate: rules
//! judge it, audit events record it, and a request state sealed for it opens for no other.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;
use http::{HeaderValue, StatusCode, header};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use toolgate::mcp::{Caller, CallerOf, McpServer};
use toolgate::{Principal, ToolController};

use crate::config::{ApiClient, SessionLimits};
use crate::identities::Keys;
use crate::jwt::JwtConfig;
use crate::metrics::Metrics;
use crate::oauth::OAuth;
use crate::sessions::Sessions;
use crate::tool_sets::ToolSetConfig;
use crate::upstream::Link;

/// The largest POST body read (the SDK's own limit).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The caller of a request: the principal the key named, and its MCP session (legacy revision).
pub fn caller_of() -> CallerOf {
    Arc::new(|extensions| {
        let Some(parts) = extensions.get::<http::request::Parts>() else {
            return Caller::default();
        };
        let principal = parts.extensions.get::<Arc<Principal>>().cloned();
        let session = parts
            .headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        // The W3C trace context a client sent: the parent of the call's span when traces are on.
        let traceparent = parts
            .headers
            .get("traceparent")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        Caller::new(principal, session).with_trace_parent(traceparent)
    })
}

/// Who may call the MCP listener, and the bounds on its sessions.
pub struct McpListener {
    /// The API-key clients.
    pub clients: Vec<ApiClient>,
    /// Tokens checked against a key file, if configured.
    pub jwt: Option<JwtConfig>,
    /// Tokens from the configured authorization servers, if any.
    pub oauth: Option<Arc<OAuth>>,
    /// The tool sets, each served at its own path.
    pub tool_sets: Vec<Arc<ToolSetConfig>>,
    /// The `Host` header values accepted.
    pub allowed_hosts: Vec<String>,
    /// The browser origins that may call; empty: none.
    pub allowed_origins: Vec<String>,
    /// Caps and idle timeout of sessions.
    pub sessions: SessionLimits,
    /// Where session counts are published.
    pub metrics: Arc<Metrics>,
}

/// Serves `server` at `/mcp` on `address` until `shutdown` resolves.
///
/// # Errors
///
/// The address cannot be bound.
pub async fn serve_mcp(
    address: SocketAddr,
    server: McpServer,
    listener: McpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let server = server.with_caller(caller_of());
    let mut router = endpoint("/mcp", &server, &listener, None);
    let mut paths = vec!["/mcp".to_owned()];
    for set in &listener.tool_sets {
        let path = set.path();
        router = router.merge(endpoint(&path, &server, &listener, Some(Arc::clone(set))));
        paths.push(path);
    }
    if listener.allowed_origins.is_empty() {
        // The SDK reads an empty list as "check nothing"; here it means "no browser page".
        router = router.layer(middleware::from_fn(crate::http_checks::no_browser_origin));
    }
    let mut exact = paths.clone();
    if let Some(oauth) = &listener.oauth {
        // Added after the layers, so outside them: the metadata is what a client without a
        // token reads to learn where to get one.
        router = router.merge(crate::oauth::metadata::routes(&oauth.settings));
        exact.push(crate::oauth::metadata::WELL_KNOWN.to_owned());
        exact.push(oauth.settings.metadata_path.clone());
        for set in &listener.tool_sets {
            let settings = oauth.settings.at(&set.path());
            router = router.merge(crate::oauth::metadata::route_at(&settings));
            exact.push(settings.metadata_path);
        }
    }
    // A nested service takes every path under its own (`/sets/ops/mcp/../../mcp`): here each
    // endpoint answers at its path exactly, so a proxy that normalises paths and the gateway
    // never disagree about which endpoint (and so which tools) a request reached.
    let exact: Arc<std::collections::HashSet<String>> = Arc::new(exact.into_iter().collect());
    router = router.layer(middleware::from_fn_with_state(exact, only_exact_paths));
    // Outside every other layer: each refusal says the connection ends with it.
    router = router.layer(middleware::from_fn(crate::http_checks::refusals_close));
    // Without TCP_NODELAY a reply written in two segments (headers, body) waits for the client's
    // delayed ACK: 40 ms a call once the client keeps its connection open.
    let tcp = tokio::net::TcpListener::bind(address)
        .await?
        .tap_io(|stream| {
            let _ = stream.set_nodelay(true);
        });
    tracing::info!(%address, "serving MCP over Streamable HTTP at {}", paths.join(", "));
    axum::serve(
        tcp,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// One MCP endpoint at `path`: `/mcp`, or a tool set's, whose callers call as members of its
/// group. Each has its own sessions (a session opened at one path is unknown at another) and,
/// with `[oauth]`, its own resource (a token issued for one path is refused at another).
fn endpoint(
    path: &str,
    server: &McpServer,
    listener: &McpListener,
    set: Option<Arc<ToolSetConfig>>,
) -> Router {
    let settings = listener.oauth.as_ref().map(|oauth| match &set {
        Some(set) => oauth.settings.at(&set.path()),
        None => oauth.settings.clone(),
    });
    let resource = set
        .as_ref()
        .and_then(|_| settings.as_ref().map(|settings| settings.resource.clone()));
    let gatekeeper = Arc::new(Gatekeeper {
        keys: Keys::new(
            &listener.clients,
            listener.jwt.clone(),
            listener.oauth.clone(),
        )
        .at_resource(resource),
        challenge: settings.map(|settings| {
            (
                crate::oauth::metadata::challenge(&settings, false),
                crate::oauth::metadata::challenge(&settings, true),
            )
        }),
        set,
        metrics: Arc::clone(&listener.metrics),
    });
    let mut manager = LocalSessionManager::default();
    // The SDK closes a session idle past its own keep-alive; ours closes them first (and forgets
    // them), so the SDK never holds a session this listener no longer knows of, or the reverse.
    manager.session_config.keep_alive =
        Some(listener.sessions.idle_timeout + std::time::Duration::from_secs(60));
    let manager = Arc::new(manager);
    let sessions = Sessions::new(
        Arc::clone(&manager),
        listener.sessions,
        Some(Arc::clone(&listener.metrics)),
    );
    sessions.spawn_reaper();
    let server = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        manager,
        StreamableHttpServerConfig::default()
            .with_allowed_hosts(listener.allowed_hosts.clone())
            .with_allowed_origins(listener.allowed_origins.clone())
            .with_json_response(true),
    );
    // One service for every request: nested as it is, axum would copy it into each request and
    // the SDK again into its future, each time with its config's host and origin lists (3.4k of
    // the gateway's 398k instructions a call, counted under callgrind).
    let service = Arc::new(service);
    let shared = axum::routing::any(move |request: Request| {
        let service = Arc::clone(&service);
        async move { service.handle(request).await.into_response() }
    });
    // Layers run outermost last: authentication first, then the session bookkeeping (which needs
    // the principal), then the SDK.
    Router::new()
        .nest_service(path, shared)
        .layer(middleware::from_fn_with_state(
            sessions,
            crate::sessions::bind,
        ))
        .layer(middleware::from_fn_with_state(gatekeeper, authenticate))
}

/// 404 for a path that is not exactly an endpoint's or a metadata document's.
async fn only_exact_paths(
    State(exact): State<Arc<std::collections::HashSet<String>>>,
    request: Request,
    next: Next,
) -> Response {
    if exact.contains(request.uri().path()) {
        return next.run(request).await;
    }
    (
        StatusCode::NOT_FOUND,
        "404: no MCP endpoint here: /mcp, and /sets/NAME/mcp for each tool set\n",
    )
        .into_response()
}

/// 401 unless the request carries `Authorization: Bearer KEY` for a configured client; 400 for a
/// POST body with a duplicate key. The principal goes into the request's extensions.
async fn authenticate(
    State(gatekeeper): State<Arc<Gatekeeper>>,
    request: Request,
    next: Next,
) -> Response {
    let presented = crate::http_checks::bearer(request.headers());
    let principal = match presented {
        Some(credential) => {
            gatekeeper
                .keys
                .principal_fetching(credential)
                .await
                .map(|(principal, _)| match &gatekeeper.set {
                    // Through a tool set: the same caller, as a member of the set's group.
                    Some(set) => Arc::new(crate::tool_sets::through(&principal, set)),
                    None => principal,
                })
        }
        None => None,
    };
    let Some(principal) = principal else {
        // Never the credential itself: it may be a real key with a typo.
        let why = if presented.is_some() {
            "an unknown key or a refused token"
        } else {
            "no bearer credential"
        };
        tracing::warn!(
            peer = ?request.extensions().get::<axum::extract::ConnectInfo<SocketAddr>>().map(|info| info.0),
            "a request to {} was refused (401): {why}",
            request.uri().path().escape_debug()
        );
        gatekeeper.metrics.sign_in_refused(if presented.is_some() {
            "unknown"
        } else {
            "missing"
        });
        let mut response = (
            StatusCode::UNAUTHORIZED,
            "401: send `Authorization: Bearer <API key or token>` with a key from the gateway's [[clients]] or a token its [oauth] or [jwt] accepts\n",
        )
            .into_response();
        let challenge = match &gatekeeper.challenge {
            // Where an OAuth client learns which authorization server to sign in at.
            Some((none, refused)) => if presented.is_some() { refused } else { none }.clone(),
            None => HeaderValue::from_static("Bearer realm=\"toolgate\""),
        };
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
        return response;
    };
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(principal);
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                "413: the request body is larger than 4 MiB\n",
            )
                .into_response();
        }
    };
    // One pass: a JSON POST whose body is not JSON gets the protocol's parse error here (the SDK
    // would answer 415, as if the content type were wrong); one holding a key twice is refused.
    // Anything else (a GET, a DELETE, another content type) is the SDK's to answer.
    let says_json = parts.method == http::Method::POST
        && parts
            .headers
            .get(header::CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
    let refused = match toolgate::mcp::check_request_body(&body) {
        Ok(()) => None,
        Err(toolgate::mcp::BodyProblem::NotJson(_)) if !says_json => None,
        Err(toolgate::mcp::BodyProblem::NotJson(problem)) => {
            Some((-32700, format!("parse error: {problem}. Nothing ran")))
        }
        Err(toolgate::mcp::BodyProblem::DuplicateKey(problem)) => Some((
            -32600,
            format!(
                "refused: {problem}; parsers read a key given twice differently, so send each key once. Nothing ran"
            ),
        )),
        Err(_) => Some((
            -32600,
            "refused: the request body cannot be read. Nothing ran".to_owned(),
        )),
    };
    if let Some((code, message)) = refused {
        let refusal = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": code, "message": message},
        });
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            refusal.to_string(),
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// Who may call one endpoint, and where refusals are counted.
struct Gatekeeper {
    keys: Keys,
    /// With `[oauth]`, the `WWW-Authenticate` of a 401 without a credential and with a refused
    /// one: where an OAuth client learns to sign in for this endpoint.
    challenge: Option<(HeaderValue, HeaderValue)>,
    /// The tool set this endpoint serves, if it is one.
    set: Option<Arc<ToolSetConfig>>,
    metrics: Arc<Metrics>,
}

/// What the admin listener serves.
#[derive(Clone)]
struct Admin {
    metrics: Arc<Metrics>,
    controller: Arc<ToolController>,
    links: Arc<Vec<Arc<Link>>>,
}

/// Serves `/metrics` (Prometheus text), `/healthz` and, if given, the approval page's routes on
/// `address` until `shutdown` resolves.
///
/// # Errors
///
/// The address cannot be bound.
pub async fn serve_admin(
    address: SocketAddr,
    metrics: Arc<Metrics>,
    controller: Arc<ToolController>,
    links: Vec<Arc<Link>>,
    page: Option<Router>,
    allowed_hosts: Vec<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let admin = Admin {
        metrics,
        controller,
        links: Arc::new(links),
    };
    let mut router = Router::new()
        .route("/metrics", axum::routing::get(render_metrics))
        .route("/healthz", axum::routing::get(health))
        .with_state(admin);
    let serving = if let Some(page) = page {
        router = router.merge(page);
        "/metrics, /healthz and the approval page at /approvals"
    } else {
        "/metrics and /healthz"
    };
    // Every route, the page's too: a name that resolves to loopback must not read the metrics.
    let router = router.layer(middleware::from_fn_with_state(
        crate::http_checks::AllowedHosts(Arc::new(allowed_hosts)),
        crate::http_checks::admin_host,
    ));
    let listener = tokio::net::TcpListener::bind(address).await?;
    tracing::info!(%address, "serving {serving} on the admin listener");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// OpenMetrics text to a scraper that accepts it (Prometheus asks for it first), else the
/// classic Prometheus text format, whose parsers read OpenMetrics counters as untyped.
async fn render_metrics(State(admin): State<Admin>, headers: http::HeaderMap) -> Response {
    let text = admin.metrics.render(&admin.controller, &admin.links);
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|accept| accept.contains("application/openmetrics-text"));
    if openmetrics {
        return (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        crate::metrics::classic_text(&text),
    )
        .into_response()
}

/// 200 when every upstream is up, 503 naming those that are not.
async fn health(State(admin): State<Admin>) -> Response {
    let (status, body) = health_report(&admin.links);
    (status, body).into_response()
}

/// `/healthz`: 200 `ok` when every upstream is up and no tool is held back; otherwise
/// `degraded`, naming each upstream down (with why: 503, a caller's calls to it fail) and each
/// tool held back (200: the rest is served).
fn health_report(links: &[Arc<crate::upstream::Link>]) -> (StatusCode, String) {
    let mut lines = Vec::new();
    let mut down = false;
    for link in links {
        if let Err(why) = link.peer() {
            down = true;
            lines.push(format!("upstream `{}` is down: {why}", link.name()));
        } else if !link.is_verified() {
            down = true;
            lines.push(format!(
                "upstream `{}` is down: it was started again and its tools are being checked against their pins",
                link.name()
            ));
        }
        for tool in link.withheld() {
            lines.push(format!(
                "tool {} of upstream `{}` is held back: changed or gone since pinned, and the policy names it",
                crate::shown::quoted(&tool),
                link.name()
            ));
        }
    }
    if lines.is_empty() {
        return (StatusCode::OK, "ok\n".to_owned());
    }
    let status = if down {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (status, format!("degraded\n  - {}\n", lines.join("\n  - ")))
}
