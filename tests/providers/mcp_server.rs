//! A `ToolController` served over MCP, driven by the SDK's own client (`rmcp`) in both protocol
//! revisions it negotiates: 2025-11-25 (`initialize`) and 2026-07-28 (`server/discover`).
#![cfg(feature = "mcp")]

mod connections;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, InputResponses,
    ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, NotificationContext, RequestContext, RoleClient, RunningService,
    ServiceExt as _, serve_client_with_lifecycle,
};
use rmcp::{ClientHandler, ErrorData};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolgate::mcp::{APPROVAL_ID_META, McpServer};
use toolgate::*;

/// `echo` allowed, `patch` asks, `shell` denied (so hidden); each counts its runs.
struct Tools {
    controller: Arc<ToolController>,
    runs: Arc<AtomicUsize>,
}

fn tools() -> Tools {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = |name: &str, out: &'static str| {
        let runs = Arc::clone(&runs);
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}},
                            "required": ["text"], "additionalProperties": false});
        ToolDefinition::new(
            ToolSpec::new(name, "test tool", schema),
            move |_: &Value| {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(out.to_owned())
            },
        )
        .unwrap()
    };
    let registry = ToolRegistry::new([
        counted("echo", "echoed"),
        counted("patch", "patched"),
        counted("shell", "shelled"),
    ])
    .unwrap();
    let controller = ToolController::new(registry, ToolPolicy::new(["echo"], ["patch"]).unwrap());
    Tools {
        controller: Arc::new(controller),
        runs,
    }
}

/// A client that answers every elicitation with `answer` (or declares no elicitation at all),
/// and reports tool-list changes.
#[derive(Clone)]
struct Person {
    answer: Option<ElicitationAction>,
    asked: Arc<AtomicUsize>,
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.answer.is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("person", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let ElicitRequestParams::FormElicitationParams { message, .. } = &request else {
            return Err(ErrorData::invalid_params("expected a form", None));
        };
        // The person sees the tool, the reason and the arguments.
        assert!(message.contains("patch"), "{message}");
        assert!(
            message.contains("tool requires user confirmation"),
            "{message}"
        );
        assert!(message.contains(r#"{"text":"v1"}"#), "{message}");
        Ok(ElicitResult::new(
            self.answer.clone().unwrap_or(ElicitationAction::Cancel),
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

#[derive(Clone, Copy, Debug)]
enum Revision {
    Initialize,
    Stateless,
}

const REVISIONS: [Revision; 2] = [Revision::Initialize, Revision::Stateless];

struct Session {
    client: RunningService<RoleClient, Person>,
    asked: Arc<AtomicUsize>,
    changed: mpsc::UnboundedReceiver<()>,
}

async fn connect(
    server: McpServer,
    revision: Revision,
    answer: Option<ElicitationAction>,
) -> Session {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let (server_in, server_out) = tokio::io::split(server_io);
    tokio::spawn(server.serve_io(server_in, server_out));
    let (changed_tx, changed) = mpsc::unbounded_channel();
    let asked = Arc::new(AtomicUsize::new(0));
    let person = Person {
        answer,
        asked: Arc::clone(&asked),
        changed: changed_tx,
    };
    let lifecycle = match revision {
        Revision::Initialize => ClientLifecycleMode::Initialize,
        Revision::Stateless => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    };
    let client = serve_client_with_lifecycle(person, client_io, lifecycle)
        .await
        .expect("client connects");
    let negotiated = client
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.clone());
    let expected = match revision {
        Revision::Initialize => ProtocolVersion::V_2025_11_25,
        Revision::Stateless => ProtocolVersion::V_2026_07_28,
    };
    assert_eq!(negotiated, Some(expected), "{revision:?}");
    Session {
        client,
        asked,
        changed,
    }
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("object arguments")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().expect("text").text.clone()
}

#[tokio::test]
async fn list_hides_the_denied_tool_in_both_revisions() {
    for revision in REVISIONS {
        let tools = tools();
        let session = connect(McpServer::new(tools.controller).unwrap(), revision, None).await;
        let listed: Vec<String> = session
            .client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        assert_eq!(listed, ["echo", "patch"], "{revision:?}");
    }
}

#[tokio::test]
async fn allowed_call_runs_and_denied_unknown_invalid_calls_run_nothing_in_both_revisions() {
    for revision in REVISIONS {
        let tools = tools();
        let session = connect(McpServer::new(tools.controller).unwrap(), revision, None).await;
        let client = &session.client;
        let ok = client
            .call_tool(call("echo", json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!((text(&ok), ok.is_error), ("echoed".into(), Some(false)));
        assert_eq!(tools.runs.load(Ordering::SeqCst), 1);
        for (name, arguments) in [
            ("shell", json!({"text": "rm -rf /"})),
            ("nope", json!({})),
            ("echo", json!({"text": 7})),
            ("echo", json!({"text": "x", "extra": true})),
        ] {
            let result = client.call_tool(call(name, arguments)).await.unwrap();
            assert_eq!(result.is_error, Some(true), "{revision:?} {name}");
        }
        assert_eq!(tools.runs.load(Ordering::SeqCst), 1, "{revision:?}");
    }
}

#[tokio::test]
async fn ask_accept_runs_once_and_decline_or_cancel_runs_nothing_in_both_revisions() {
    for revision in REVISIONS {
        for (answer, runs) in [
            (ElicitationAction::Accept, 1),
            (ElicitationAction::Decline, 0),
            (ElicitationAction::Cancel, 0),
        ] {
            let tools = tools();
            let server = McpServer::new(Arc::clone(&tools.controller)).unwrap();
            let session = connect(server, revision, Some(answer.clone())).await;
            let result = session
                .client
                .call_tool(call("patch", json!({"text": "v1"})))
                .await
                .unwrap();
            let label = format!("{revision:?} {answer:?}");
            assert_eq!(session.asked.load(Ordering::SeqCst), 1, "{label}");
            assert_eq!(tools.runs.load(Ordering::SeqCst), runs, "{label}");
            assert_eq!(result.is_error, Some(runs == 0), "{label}");
            if runs == 1 {
                assert_eq!(text(&result), "patched");
            }
            assert!(tools.controller.pending().is_empty(), "{label}");
        }
    }
}

/// One `input_required` round by hand, so the retry's state can be replayed and altered.
async fn held_state(session: &Session) -> String {
    let response = session
        .client
        .call_tool_once(call("patch", json!({"text": "v1"})))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(required) = response else {
        panic!("expected input_required")
    };
    assert_eq!(required.input_requests.as_ref().map(|r| r.len()), Some(1));
    required.request_state.expect("a request state")
}

async fn retry(session: &Session, arguments: Value, state: &str) -> CallToolResult {
    let mut responses = InputResponses::new();
    responses.insert(
        "toolgate_approval".into(),
        json!({"action": "accept", "content": {}}),
    );
    let mut params = call("patch", arguments).with_input_responses(responses);
    params.request_state = Some(state.to_owned());
    match session.client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Complete(result) => result,
        _ => panic!("expected a final result"),
    }
}

#[tokio::test]
async fn replayed_altered_retargeted_and_foreign_request_states_are_refused() {
    let tools = tools();
    let server = McpServer::new(Arc::clone(&tools.controller)).unwrap();
    let session = connect(server, Revision::Stateless, Some(ElicitationAction::Accept)).await;

    let state = held_state(&session).await;
    // Altered in one character, or sent back for other arguments: refused, still pending.
    let mut altered = state.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    for (arguments, state) in [
        (json!({"text": "v1"}), altered.as_str()),
        (json!({"text": "v2"}), state.as_str()),
    ] {
        let refused = retry(&session, arguments, state).await;
        assert_eq!(refused.is_error, Some(true));
        assert!(text(&refused).starts_with("refused"), "{}", text(&refused));
    }
    assert_eq!(tools.runs.load(Ordering::SeqCst), 0);
    assert_eq!(tools.controller.pending().len(), 1);

    // The genuine retry runs once; replaying it runs nothing.
    let ran = retry(&session, json!({"text": "v1"}), &state).await;
    assert_eq!((text(&ran), ran.is_error), ("patched".into(), Some(false)));
    let replayed = retry(&session, json!({"text": "v1"}), &state).await;
    assert_eq!(replayed.is_error, Some(true));
    assert_eq!(tools.runs.load(Ordering::SeqCst), 1);

    // A state sealed by another server over the same controller does not open here.
    let other = connect(
        McpServer::new(Arc::clone(&tools.controller)).unwrap(),
        Revision::Stateless,
        Some(ElicitationAction::Accept),
    )
    .await;
    let foreign = held_state(&other).await;
    let refused = retry(&session, json!({"text": "v1"}), &foreign).await;
    assert!(text(&refused).starts_with("refused"), "{}", text(&refused));
    assert_eq!(tools.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_rotated_state_key_keeps_opening_its_states_until_it_is_dropped() {
    let (old, new) = ([7u8; 32], [9u8; 32]);
    let tools = tools();
    // Instances behind one load balancer: each connection is its own, but the transport names the
    // same caller and session on all of them, so a state one instance sealed opens on another.
    let alice = Arc::new(Principal::new("alice", ["dev"]));
    let server = |keys: &[&[u8]]| {
        let alice = Arc::clone(&alice);
        McpServer::new(Arc::clone(&tools.controller))
            .unwrap()
            .with_state_keys(keys)
            .unwrap()
            .with_caller(Arc::new(move |_| {
                toolgate::mcp::Caller::new(Some(Arc::clone(&alice)), Some("session-1".into()))
            }))
    };
    let before = connect(
        server(&[&old]),
        Revision::Stateless,
        Some(ElicitationAction::Accept),
    )
    .await;
    let sealed_with_old = held_state(&before).await;
    // Dropped: the old key is no longer listed, so its state opens nothing.
    let dropped = connect(
        server(&[&new]),
        Revision::Stateless,
        Some(ElicitationAction::Accept),
    )
    .await;
    let refused = retry(&dropped, json!({"text": "v1"}), &sealed_with_old).await;
    assert!(text(&refused).starts_with("refused"), "{}", text(&refused));
    // Rotated: the new key first, the old one kept; a state the old key sealed opens and runs once.
    let rotated = connect(
        server(&[&new, &old]),
        Revision::Stateless,
        Some(ElicitationAction::Accept),
    )
    .await;
    let ran = retry(&rotated, json!({"text": "v1"}), &sealed_with_old).await;
    assert_eq!((text(&ran), ran.is_error), ("patched".into(), Some(false)));
    assert_eq!(tools.runs.load(Ordering::SeqCst), 1);
    // What the rotated server seals, the new key alone opens.
    let sealed_with_new = held_state(&rotated).await;
    let ran = retry(&dropped, json!({"text": "v1"}), &sealed_with_new).await;
    assert_eq!(ran.is_error, Some(false), "{}", text(&ran));
    assert_eq!(tools.runs.load(Ordering::SeqCst), 2);
    // No key, or a short one, is refused.
    let empty: [&[u8]; 0] = [];
    assert!(
        McpServer::new(Arc::clone(&tools.controller))
            .unwrap()
            .with_state_keys(&empty)
            .is_err()
    );
    assert!(
        McpServer::new(Arc::clone(&tools.controller))
            .unwrap()
            .with_state_keys(&[&new[..31]])
            .is_err()
    );
}

#[tokio::test]
async fn a_client_without_elicitation_leaves_the_call_pending_out_of_band_in_both_revisions() {
    for revision in REVISIONS {
        let tools = tools();
        let server = McpServer::new(Arc::clone(&tools.controller)).unwrap();
        let session = connect(server, revision, None).await;
        let result = session
            .client
            .call_tool(call("patch", json!({"text": "v1"})))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(true));
        let id = result
            .meta
            .as_ref()
            .and_then(|meta| meta.0.get(APPROVAL_ID_META))
            .cloned();
        let pending = tools.controller.pending();
        assert_eq!(pending.len(), 1, "{revision:?}");
        assert_eq!(id, Some(json!(pending[0].approval_id.to_string())));
        assert_eq!(tools.runs.load(Ordering::SeqCst), 0);
        // Answered out of band, it runs once.
        let ran = tools
            .controller
            .resolve(ApprovalResponse::approve(pending[0].approval_id))
            .unwrap();
        assert_eq!(ran.content, "patched");
        assert_eq!(tools.runs.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn replacing_the_policy_notifies_list_changed_and_changes_the_list() {
    let tools = tools();
    let server = McpServer::new(Arc::clone(&tools.controller)).unwrap();
    let mut session = connect(server, Revision::Initialize, None).await;
    tools
        .controller
        .replace_policy(ToolPolicy::new(["echo", "shell"], Vec::<String>::new()).unwrap())
        .unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), session.changed.recv())
        .await
        .expect("a list-changed notification within 5 s");
    let listed: Vec<String> = session
        .client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(listed, ["echo", "shell"]);
}

#[tokio::test]
async fn structured_output_is_listed_and_sent_as_structured_content_in_both_revisions() {
    for revision in REVISIONS {
        let output_schema = json!({"type": "object", "properties": {"sum": {"type": "integer"}},
                                   "required": ["sum"], "additionalProperties": false});
        let spec = ToolSpec::new(
            "add",
            "Add a and b.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
        )
        .with_output_schema(output_schema.clone());
        let add = ToolDefinition::structured(spec, |args: &Value| {
            Ok(json!({"sum": args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)}))
        })
        .unwrap();
        let controller = Arc::new(ToolController::new(
            ToolRegistry::new([add]).unwrap(),
            ToolPolicy::new(["add"], Vec::<String>::new()).unwrap(),
        ));
        let session = connect(McpServer::new(controller).unwrap(), revision, None).await;
        let listed = session.client.list_all_tools().await.unwrap();
        let declared = listed[0]
            .output_schema
            .as_ref()
            .map(|schema| Value::Object((**schema).clone()));
        assert_eq!(declared, Some(output_schema), "{revision:?}");
        let result = session
            .client
            .call_tool(call("add", json!({"a": 40, "b": 2})))
            .await
            .unwrap();
        assert_eq!(
            result.structured_content,
            Some(json!({"sum": 42})),
            "{revision:?}"
        );
        assert_eq!(text(&result), r#"{"sum":42}"#);
        assert_eq!(result.is_error, Some(false));
    }
}

// Issue 21, item 7: `tools/call` arguments with a duplicate key are refused before the SDK
// resolves them (it keeps the last value), over the stdio framing `serve_io` reads. Driven with
// raw lines, since no SDK client sends a duplicate key.

/// Sends `lines` to a server over `serve_io` and returns the response to the request with `id`.
async fn raw_exchange(server: McpServer, lines: &[String], id: u64) -> Value {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
    let (server_in, mut client_out) = tokio::io::duplex(64 * 1024);
    let (client_in, server_out) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let _ = server.serve_io(server_in, server_out).await;
    });
    for line in lines {
        client_out.write_all(line.as_bytes()).await.unwrap();
        client_out.write_all(b"\n").await.unwrap();
    }
    let mut responses = BufReader::new(client_in).lines();
    loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(10), responses.next_line())
            .await
            .expect("an answer within 10 s")
            .unwrap()
            .expect("the server answers before it hangs up");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == json!(id) {
            return message;
        }
    }
}

fn handshake() -> Vec<String> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    ]
}

#[tokio::test]
async fn mcp_duplicate_keys_in_call_arguments_are_refused_and_run_nothing() {
    let call = |arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo","arguments":{arguments}}}}}"#
        )
    };
    for duplicated in [
        call(r#"{"text":"a","text":"b"}"#),
        call(r#"{"text":"a","extra":{"k":1,"k":2}}"#),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","name":"echo","arguments":{"text":"a"}}}"#
            .to_owned(),
    ] {
        let tools = tools();
        let mut lines = handshake();
        lines.push(duplicated.clone());
        let response = raw_exchange(McpServer::new(tools.controller).unwrap(), &lines, 2).await;
        assert_eq!(
            response["result"]["isError"], true,
            "{duplicated}: {response}"
        );
        let text = response["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("duplicate key"), "{text}");
        assert_eq!(tools.runs.load(Ordering::SeqCst), 0, "{duplicated}");
    }
    // The control: the same call with each key once runs.
    let tools = tools();
    let mut lines = handshake();
    lines.push(call(r#"{"text":"a"}"#));
    let response = raw_exchange(McpServer::new(tools.controller).unwrap(), &lines, 2).await;
    assert_eq!(response["result"]["isError"], false, "{response}");
    assert_eq!(tools.runs.load(Ordering::SeqCst), 1);
}
