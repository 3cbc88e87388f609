//! A design measured, not shipped (issue 38, item 5): rmcp keeps the client's protocol state —
//! `initialize`, sessions, capabilities, `tools/list` — while a `tools/call` on a live session
//! is taken out of the request stream before rmcp's service sees it, gated by toolgate (API key,
//! lookup, validation, policy, the result checks) and sent to the upstream as JSON over a kept-alive
//! HTTP client through rmcp's own Streamable HTTP client (its transport, not its client service),
//! without the SDK's typed round trip of the answer or its per-request machinery on either side.
//!
//! What it leaves out, and a shipped version would have to write beside the SDK: progress and cancellation
//! during a call, approvals (`ask` needs the stream rmcp's service keeps), the protocol-version
//! header check, and the upstream's session kept alive (opened here with rmcp's transport, whose
//! client service does not hand out its session id). The README's "Cost" section gives what it measured and what it would cost
//! in code.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use futures::StreamExt as _;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcRequest,
    RequestId,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient as _, StreamableHttpPostResponse,
};
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use toolgate::definition::ToolOutput;
use toolgate::{
    Outcome, RulePolicy, ToolCall, ToolController, ToolDefinition, ToolError, ToolRegistry,
    ToolSpec,
};

/// The largest request body read.
const MAX_BODY: usize = 4 << 20;
const PROTOCOL: &str = "2025-06-18";

/// The upstream's session, spoken through rmcp's own Streamable HTTP client (its
/// `StreamableHttpClient` for `reqwest`): the URL, the session id `initialize` gave, and a
/// kept-alive client. rmcp's client service (a worker task, channels, typed answers) is not used.
struct Upstream {
    url: Arc<str>,
    session: Arc<str>,
    client: reqwest::Client,
    next_id: AtomicU64,
}

impl Upstream {
    async fn open(url: &str) -> Self {
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .expect("client");
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "rawcall", "version": "0"}}});
        let url: Arc<str> = Arc::from(url);
        let answer = client
            .post_message(
                Arc::clone(&url),
                serde_json::from_value(initialize).expect("a message"),
                None,
                None,
                HashMap::new(),
            )
            .await
            .expect("initialize");
        let session = match answer {
            StreamableHttpPostResponse::Json(_, Some(session))
            | StreamableHttpPostResponse::Sse(_, Some(session)) => Arc::from(session),
            _ => panic!("the upstream gave no session"),
        };
        let upstream = Self {
            url,
            session,
            client,
            next_id: AtomicU64::new(1),
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        upstream
            .post(serde_json::from_value(initialized).expect("a message"))
            .await
            .expect("initialized");
        upstream
    }

    /// Posts `message` on the session; the answer as JSON (`None` for a notification).
    async fn post(&self, message: ClientJsonRpcMessage) -> Result<Option<Value>, String> {
        let headers = HashMap::from([(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_static(PROTOCOL),
        )]);
        let answer = self
            .client
            .post_message(
                Arc::clone(&self.url),
                message,
                Some(Arc::clone(&self.session)),
                None,
                headers,
            )
            .await
            .map_err(|error| error.to_string())?;
        match answer {
            StreamableHttpPostResponse::Accepted => Ok(None),
            StreamableHttpPostResponse::Json(message, _) => serde_json::to_value(message)
                .map(Some)
                .map_err(|error| error.to_string()),
            // rmcp's stateful sessions answer every request with a stream: its first event
            // that is a JSON-RPC answer.
            StreamableHttpPostResponse::Sse(mut events, _) => {
                while let Some(event) = events.next().await {
                    let event = event.map_err(|error| error.to_string())?;
                    // An event without data primes the stream (its id serves a resumption).
                    let Some(data) = event.data.filter(|data| !data.is_empty()) else {
                        continue;
                    };
                    let message: Value =
                        serde_json::from_str(&data).map_err(|error| error.to_string())?;
                    if message.get("result").is_some() || message.get("error").is_some() {
                        return Ok(Some(message));
                    }
                }
                Err("the upstream's stream ended without an answer".to_owned())
            }
            _ => Err("an answer of a kind this prototype does not read".to_owned()),
        }
    }

    /// `tools/call` of `name` with `arguments`: the result object the upstream sent.
    async fn call(&self, name: &str, arguments: Value) -> Result<Value, ToolError> {
        let Value::Object(arguments) = arguments else {
            return Err(ToolError::new("arguments must be an object"));
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let request = ClientJsonRpcMessage::Request(JsonRpcRequest::new(
            RequestId::Number(id as i64),
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
        ));
        match self.post(request).await {
            Ok(Some(Value::Object(mut answer))) => match answer.remove("result") {
                Some(result) => Ok(result),
                None => Err(ToolError::new("the upstream answered with an error")),
            },
            Ok(_) => Err(ToolError::new("the upstream answered nothing")),
            Err(why) => Err(ToolError::new(why)),
        }
    }
}

/// A result object as the tool output the gate checks (blocks, structured content, error flag).
fn output_of(result: Value) -> Result<ToolOutput, ToolError> {
    let Value::Object(mut result) = result else {
        return Err(ToolError::new("the upstream's result is not an object"));
    };
    let blocks = match result.remove("content") {
        Some(Value::Array(blocks)) => blocks,
        _ => return Err(ToolError::new("the upstream's result has no content")),
    };
    let mut output = ToolOutput::new(blocks);
    if let Some(structured) = result.remove("structuredContent") {
        output = output.with_structured(structured);
    }
    if let Some(Value::Bool(is_error)) = result.remove("isError") {
        output = output.with_error(is_error);
    }
    Ok(output)
}

/// What a call on a live session needs: the gate, and the client sessions rmcp keeps.
struct Gate {
    controller: ToolController,
    sessions: Arc<LocalSessionManager>,
    key: String,
}

/// The upstream's tools as a registry whose handlers send each call on `upstream`.
async fn registry(upstream: &Arc<Upstream>) -> ToolRegistry {
    let list = json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"});
    let listed = upstream
        .post(serde_json::from_value(list).expect("a message"))
        .await
        .expect("tools/list")
        .expect("an answer");
    let tools = listed["result"]["tools"]
        .as_array()
        .cloned()
        .expect("tools");
    ToolRegistry::new(tools.into_iter().map(|tool| {
        let name = tool["name"].as_str().expect("a name").to_owned();
        let spec = ToolSpec::new(
            name.clone(),
            tool["description"].as_str().unwrap_or_default(),
            tool["inputSchema"].clone(),
        );
        let upstream = Arc::clone(upstream);
        ToolDefinition::blocks_async(spec, move |arguments| {
            let (upstream, name) = (Arc::clone(&upstream), name.clone());
            async move { output_of(upstream.call(&name, arguments).await?) }
        })
        .expect("a tool")
    }))
    .expect("distinct names")
}

/// The JSON-RPC answer to a gated call: the result as MCP spells it.
fn answer(id: Value, outcome: Outcome) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result_of(outcome)})
}

/// An outcome as MCP's `CallToolResult` object.
fn result_of(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Completed(result) => {
            let mut out = serde_json::Map::new();
            let content = match result.blocks {
                Some(blocks) => Value::Array(blocks.content),
                None => json!([{"type": "text", "text": result.content}]),
            };
            out.insert("content".into(), content);
            if let Some(structured) = result.structured {
                out.insert("structuredContent".into(), structured);
            }
            out.insert("isError".into(), Value::Bool(result.is_error));
            Value::Object(out)
        }
        Outcome::PendingApproval(_) => {
            json!({"content": [{"type": "text", "text": "held for approval: not in this prototype"}], "isError": true})
        }
    }
}

fn authorized(headers: &HeaderMap, key: &str) -> bool {
    use sha2::Digest as _;
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
    else {
        return false;
    };
    sha2::Sha256::digest(given.as_bytes()) == sha2::Sha256::digest(key.as_bytes())
}

/// Takes a `tools/call` on a live session out of the stream; everything else goes to rmcp.
async fn intercept(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    if !authorized(request.headers(), &gate.key) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let session: Option<Arc<str>> = request
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(Arc::from);
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let message: Option<Value> = serde_json::from_slice(&bytes).ok();
    let is_call = message
        .as_ref()
        .is_some_and(|message| message["method"] == "tools/call");
    let live = match &session {
        Some(session) if is_call => gate.sessions.has_session(session).await.unwrap_or(false),
        _ => false,
    };
    let Some(Value::Object(mut message)) = message.filter(|_| live) else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let id = message.remove("id").unwrap_or(Value::Null);
    let mut params = match message.remove("params") {
        Some(Value::Object(params)) => params,
        _ => serde_json::Map::new(),
    };
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        _ => String::new(),
    };
    let arguments = params.remove("arguments").unwrap_or_else(|| json!({}));
    let call = ToolCall::new(id.to_string(), name, arguments);
    let outcome = gate.controller.handle_async(call).await;
    let body = serde_json::to_vec(&answer(id, outcome)).expect("serializes");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The gate: the upstream at `url` reached through rmcp's client transport, `echo` allowed.
async fn controller(url: &str) -> ToolController {
    let upstream = Arc::new(Upstream::open(url).await);
    let policy =
        r#"{"rules": [{"id": "echo", "tool": "echo", "action": "allow", "reason": "benchmark"}]}"#;
    let registry = registry(&upstream).await;
    let policy = RulePolicy::from_json(policy, &registry).expect("policy");
    ToolController::try_new(registry, policy).expect("controller")
}

/// The second design measured: rmcp's server service whole (sessions, streams, progress,
/// cancellation as the SDK does them), its `call_tool` gated by toolgate and sent through
/// rmcp's client transport instead of its client service.
#[derive(Clone)]
struct GatedServer {
    controller: Arc<ToolController>,
    lists: rmcp::service::Peer<rmcp::service::RoleClient>,
    key: Arc<str>,
}

impl rmcp::ServerHandler for GatedServer {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<rmcp::model::PaginatedRequestParams>,
        _: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        self.lists
            .list_tools(request)
            .await
            .map_err(|error| rmcp::ErrorData::internal_error(error.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::service::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        // The gateway's key check, made here from the HTTP request rmcp hands the handler.
        let parts = context.extensions.get::<http::request::Parts>();
        if !parts.is_some_and(|parts| authorized(&parts.headers, &self.key)) {
            return Err(rmcp::ErrorData::invalid_request("no key", None));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(context.id.to_string(), request.name, arguments);
        let outcome = self.controller.handle_async(call).await;
        serde_json::from_value::<rmcp::model::CallToolResult>(result_of(outcome))
            .map(Into::into)
            .map_err(|error| rmcp::ErrorData::internal_error(error.to_string(), None))
    }
}

/// Serves Streamable HTTP at `127.0.0.1:PORT/mcp` with [`GatedServer`].
pub async fn http_server_kept(port: u16, url: &str, key: &str) {
    let controller = Arc::new(controller(url).await);
    let (state_service, lists) = crate::proxy::upstream_peer(url).await;
    let key: Arc<str> = Arc::from(key);
    let service = StreamableHttpService::new(
        move || {
            Ok(GatedServer {
                controller: Arc::clone(&controller),
                lists: lists.clone(),
                key: Arc::clone(&key),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_json_response(true),
    );
    crate::proxy::serve_router(port, axum::Router::new().nest_service("/mcp", service)).await;
    drop(state_service);
}

/// Serves Streamable HTTP at `127.0.0.1:PORT/mcp` for callers holding `key`, in front of the
/// upstream at `url`: rmcp's service (the rmcp-only proxy's handler) for everything but calls.
pub async fn http(port: u16, url: &str, key: &str) {
    let controller = controller(url).await;
    let sessions = Arc::new(LocalSessionManager::default());
    let (state_service, lists) = crate::proxy::upstream_peer(url).await;
    let service = StreamableHttpService::new(
        move || Ok(crate::proxy::Proxy::new(lists.clone())),
        Arc::clone(&sessions),
        StreamableHttpServerConfig::default().with_json_response(true),
    );
    let gate = Arc::new(Gate {
        controller,
        sessions,
        key: key.to_owned(),
    });
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate, intercept));
    crate::proxy::serve_router(port, router).await;
    drop(state_service);
}
