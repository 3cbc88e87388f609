//! OpenTelemetry traces, received by an OTLP/HTTP receiver in the test and decoded: one span per
//! `tools/call` continuing the client's `traceparent`, the library's call span under it with the
//! tool, principal, upstream, decision, rule, layer and outcome, a child for each audit write and
//! one for the upstream call, whose context reaches the upstream in `_meta.traceparent` — and no
//! argument value anywhere in what was exported.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

use crate::raw::{ALICE_KEY, Stopped, opened, request, serve_raw_policy};
use crate::support::Work;

/// Every span the receiver was sent, and every request body as it arrived.
#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<Span>>>,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

/// An OTLP/HTTP receiver on a free port: each `POST /v1/traces` body decoded as an
/// `ExportTraceServiceRequest` (protobuf), answered 200.
fn receiver() -> (u16, Received) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Received::default();
    let keep = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || serve_connection(stream, &keep));
        }
    });
    (port, received)
}

fn serve_connection(stream: std::net::TcpStream, received: &Received) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("OTLP protobuf");
        let spans = request
            .resource_spans
            .into_iter()
            .flat_map(|resource| resource.scope_spans)
            .flat_map(|scope| scope.spans);
        received.spans.lock().unwrap().extend(spans);
        received.bodies.lock().unwrap().push(body);
        let _ = writer.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        );
    }
}

fn attributes(span: &Span) -> HashMap<String, String> {
    span.attributes
        .iter()
        .filter_map(|pair| {
            let value = match pair.value.as_ref()?.value.as_ref()? {
                AnyValue::StringValue(text) => text.clone(),
                AnyValue::BoolValue(flag) => flag.to_string(),
                AnyValue::IntValue(number) => number.to_string(),
                other => format!("{other:?}"),
            };
            Some((pair.key.clone(), value))
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const MARKER: &str = "ARGUMENT-MARKER-7f3a";

#[test]
fn a_call_is_traced_under_the_clients_trace_with_its_decision_and_no_argument_value() {
    let work = Work::new("traces");
    let (port, received) = receiver();
    let policy = r#"{"rules": [
      {"id": "echo", "tool": "h__echo", "action": "allow", "reason": "harmless"},
      {"id": "crash", "tool": "h__crash", "action": "deny", "reason": "not through the gateway"}
    ]}"#;
    let traces = format!("\n[traces]\notlp_endpoint = \"http://127.0.0.1:{port}/v1/traces\"\n");
    let (child, mcp, _) = serve_raw_policy(
        &work,
        &traces,
        // At debug, the gateway logs inside the call's spans: none of it is exported.
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("TOOLGATE_LOG", "debug"),
        ],
        Some(policy),
    );
    let gateway = Stopped(child);
    let session = opened(mcp, ALICE_KEY);
    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN}-01");
    let echo = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"h__echo","arguments":{{"text":"{MARKER}"}}}}}}"#
    );
    let reply = request(
        mcp,
        "POST",
        ALICE_KEY,
        &[("Mcp-Session-Id", &session), ("traceparent", &traceparent)],
        &echo,
    );
    assert!(reply.body.contains(MARKER), "{}", reply.body);
    // Denied, with the client's trace in `_meta` instead of a header, marked not sampled: the
    // client does not choose which of its calls the operator sees.
    let crash = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"h__crash","arguments":{{"text":"{MARKER}"}},"_meta":{{"traceparent":"00-{TRACE_ID}-1111111111111111-00"}}}}}}"#
    );
    let reply = request(
        mcp,
        "POST",
        ALICE_KEY,
        &[("Mcp-Session-Id", &session)],
        &crash,
    );
    // A tool every call of which is denied is hidden from the caller: it answers as unknown,
    // and is decided and traced as any call.
    assert!(
        reply.body.contains("unknown tool: h__crash"),
        "{}",
        reply.body
    );

    // Two calls, each: the request span, the call span, its audit writes (none: no audit log
    // here) and, for the echo, the upstream span.
    let deadline = Instant::now() + Duration::from_secs(20);
    let spans = loop {
        let spans = received.spans.lock().unwrap().clone();
        let handles = spans.iter().filter(|s| s.name == "toolgate.handle").count();
        let upstream = spans.iter().any(|s| s.name == "toolgate.upstream");
        if handles >= 2 && upstream {
            break spans;
        }
        assert!(
            Instant::now() < deadline,
            "spans did not arrive: {:?}; log: {}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>(),
            work.read("gateway.log")
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(gateway);

    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let requests = named("toolgate.mcp.tools_call");
    assert_eq!(requests.len(), 2, "{spans:?}");
    for request in &requests {
        assert_eq!(
            hex(&request.trace_id),
            TRACE_ID,
            "the client's trace goes on"
        );
    }
    let echo_request = requests
        .iter()
        .find(|s| hex(&s.parent_span_id) == CLIENT_SPAN)
        .expect("the header's span is the parent");
    assert!(
        requests
            .iter()
            .any(|s| hex(&s.parent_span_id) == "1111111111111111"),
        "_meta.traceparent is read where no header came"
    );
    let handles = named("toolgate.handle");
    let echo = handles
        .iter()
        .find(|s| attributes(s).get("tool").map(String::as_str) == Some("h__echo"))
        .expect("the echo's call span");
    assert_eq!(echo.parent_span_id, echo_request.span_id);
    let echoed = attributes(echo);
    for (key, value) in [
        ("principal", "alice"),
        ("decision", "allow"),
        ("rule_id", "echo"),
        ("outcome", "ok"),
        ("upstream", "h"),
    ] {
        assert_eq!(
            echoed.get(key).map(String::as_str),
            Some(value),
            "{key}: {echoed:?}"
        );
    }
    let crashed = handles
        .iter()
        .map(|s| attributes(s))
        .find(|a| a.get("tool").map(String::as_str) == Some("h__crash"))
        .expect("the crash's call span");
    assert_eq!(crashed.get("decision").map(String::as_str), Some("deny"));
    assert_eq!(crashed.get("rule_id").map(String::as_str), Some("crash"));
    assert_eq!(crashed.get("outcome").map(String::as_str), Some("error"));
    let upstream = named("toolgate.upstream");
    assert_eq!(upstream.len(), 1, "the denied call was not sent");
    assert_eq!(upstream[0].parent_span_id, echo.span_id);
    assert_eq!(
        attributes(upstream[0]).get("upstream").map(String::as_str),
        Some("h")
    );

    // The upstream continues the trace, under the upstream span.
    let record = work.read("record.jsonl");
    let sent: serde_json::Value = serde_json::from_str(record.lines().next().unwrap()).unwrap();
    let sent = sent["traceparent"]
        .as_str()
        .expect("_meta.traceparent sent upstream");
    assert_eq!(
        sent,
        format!("00-{TRACE_ID}-{}-01", hex(&upstream[0].span_id)),
        "{record}"
    );

    assert!(
        spans.iter().all(|span| span.events.is_empty()),
        "a log line was exported as a span event"
    );
    // The debug log holds no argument value either.
    assert!(!work.read("gateway.log").contains(MARKER));
    // Nothing of the arguments was exported, in any span or attribute.
    for body in received.bodies.lock().unwrap().iter() {
        let text = String::from_utf8_lossy(body);
        assert!(!text.contains(MARKER), "an argument value was exported");
    }
}

/// With an audit log, each write is a child span of the call, named by what it records.
#[test]
fn each_audit_write_is_a_child_of_the_call() {
    let work = Work::new("traces-audit");
    let (port, received) = receiver();
    let traces = format!(
        "\n[traces]\notlp_endpoint = \"http://127.0.0.1:{port}/v1/traces\"\nservice_name = \"gw-under-test\"\n\
         [audit]\njsonl = \"audit.jsonl\"\n"
    );
    let (child, mcp, _) =
        serve_raw_policy(&work, &traces, &[("OTEL_BSP_SCHEDULE_DELAY", "100")], None);
    let gateway = Stopped(child);
    let session = opened(mcp, ALICE_KEY);
    let echo = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"h__echo","arguments":{"text":"hi"}}}"#;
    let reply = request(
        mcp,
        "POST",
        ALICE_KEY,
        &[("Mcp-Session-Id", &session)],
        echo,
    );
    assert!(reply.body.contains("echo: hi"), "{}", reply.body);
    let deadline = Instant::now() + Duration::from_secs(20);
    let spans = loop {
        let spans = received.spans.lock().unwrap().clone();
        if spans.iter().filter(|s| s.name == "toolgate.audit").count() >= 3 {
            break spans;
        }
        assert!(Instant::now() < deadline, "audit spans did not arrive");
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(gateway);
    let call = spans
        .iter()
        .find(|s| s.name == "toolgate.handle")
        .expect("the call span");
    let kinds: Vec<String> = spans
        .iter()
        .filter(|s| s.name == "toolgate.audit")
        .inspect(|s| assert_eq!(s.parent_span_id, call.span_id))
        .map(|s| attributes(s).remove("kind").unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["CallReceived", "Decision", "ExecutionOutcome"]);
    // A span started without a client trace is the root of a trace of its own.
    let request = spans
        .iter()
        .find(|s| s.name == "toolgate.mcp.tools_call")
        .unwrap();
    assert!(request.parent_span_id.is_empty());
}

/// A client that can be asked, speaking 2026-07-28 (a held call comes back as `input_required`).
#[derive(Clone)]
struct Person;

impl rmcp::ClientHandler for Person {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_elicitation()
                .build(),
            rmcp::model::Implementation::new("person", "0"),
        )
    }
}

/// A call held for a person and answered in band — the retry carrying its request state — stays
/// in the client's trace: the answer's span is a child of the retry's request span, and the
/// upstream gets a context of the same trace.
#[tokio::test]
async fn a_call_answered_in_band_stays_in_the_clients_trace() {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, InputResponses, ProtocolVersion, RequestMetaObject,
    };
    use rmcp::service::{ClientLifecycleMode, serve_client_with_lifecycle};
    let work = Work::new("traces-in-band");
    let (port, received) = receiver();
    let config = work.asking_config(&format!(
        "[traces]\notlp_endpoint = \"http://127.0.0.1:{port}/v1/traces\"\n"
    ));
    let mut command = tokio::process::Command::new(crate::support::GATEWAY);
    command
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let transport = rmcp::transport::TokioChildProcess::new(command).expect("spawn");
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = serve_client_with_lifecycle(Person, transport, lifecycle)
        .await
        .expect("handshake");
    let traced = |span: &str| {
        let mut meta = RequestMetaObject::default();
        meta.0.0.insert(
            "traceparent".to_owned(),
            serde_json::Value::String(format!("00-{TRACE_ID}-{span}-01")),
        );
        let arguments = serde_json::json!({"text": MARKER})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut params = CallToolRequestParams::new("h__echo").with_arguments(arguments);
        params.meta = Some(meta);
        params
    };
    let held = client
        .call_tool_once(traced("1111111111111111"))
        .await
        .expect("a reply");
    let CallToolResponse::InputRequired(required) = held else {
        panic!("expected input_required")
    };
    let mut responses = InputResponses::new();
    responses.insert(
        "toolgate_approval".into(),
        serde_json::json!({"action": "accept", "content": {}}),
    );
    let mut retry = traced("2222222222222222").with_input_responses(responses);
    retry.request_state = required.request_state;
    let CallToolResponse::Complete(result) = client.call_tool_once(retry).await.expect("a reply")
    else {
        panic!("expected a result")
    };
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let spans = loop {
        let spans = received.spans.lock().unwrap().clone();
        if spans.iter().any(|s| s.name == "toolgate.resolve")
            && spans.iter().any(|s| s.name == "toolgate.upstream")
        {
            break spans;
        }
        assert!(Instant::now() < deadline, "spans did not arrive");
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = client.cancel().await;
    let resolve = spans.iter().find(|s| s.name == "toolgate.resolve").unwrap();
    assert_eq!(hex(&resolve.trace_id), TRACE_ID);
    let retry_request = spans
        .iter()
        .find(|s| {
            s.name == "toolgate.mcp.tools_call" && hex(&s.parent_span_id) == "2222222222222222"
        })
        .expect("the retry's request span");
    assert_eq!(resolve.parent_span_id, retry_request.span_id);
    let upstream = spans
        .iter()
        .find(|s| s.name == "toolgate.upstream")
        .unwrap();
    assert_eq!(upstream.parent_span_id, resolve.span_id);
    assert_eq!(
        attributes(resolve).get("upstream").map(String::as_str),
        Some("h")
    );
    let record = work.read("record.jsonl");
    let sent: serde_json::Value = serde_json::from_str(record.lines().next().unwrap()).unwrap();
    assert_eq!(
        sent["traceparent"].as_str(),
        Some(format!("00-{TRACE_ID}-{}-01", hex(&upstream.span_id)).as_str()),
        "{record}"
    );
    for body in received.bodies.lock().unwrap().iter() {
        assert!(!String::from_utf8_lossy(body).contains(MARKER));
    }
}
