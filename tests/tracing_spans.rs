//! `tracing` spans for handle and resolve (feature `tracing`): call id and tool, never values.
//!
//! A test binary of its own: the spans are recorded by a subscriber set for the test's thread
//! (`with_default`), while `tracing` caches per call site, for the whole process, whether any
//! subscriber wants it. Another test calling `handle` on another thread of the same process could
//! register the call site first, with no subscriber there, and hide the spans from this one.
#![cfg(feature = "tracing")]

#[path = "support/common.rs"]
mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;
use toolgate::audit::TracingAuditSink;
use toolgate::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span's name and its fields as (name, value) text.
type RecordedSpan = (String, Vec<(String, String)>);

/// Records every span's name and fields as text.
#[derive(Clone, Default)]
struct Recorder {
    spans: Arc<Mutex<Vec<RecordedSpan>>>,
    events: Arc<Mutex<Vec<RecordedSpan>>>,
    /// Each span's metadata, by id, and the spans entered (one thread): what `Span::current`
    /// reads, as a real subscriber keeps it.
    metadata: Arc<Mutex<Vec<&'static Metadata<'static>>>>,
    entered: Arc<Mutex<Vec<Id>>>,
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut spans = self.spans.lock().unwrap();
        let mut fields = Vec::new();
        span.record(&mut Fields(&mut fields));
        spans.push((span.metadata().name().to_owned(), fields));
        self.metadata.lock().unwrap().push(span.metadata());
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        let index = span.into_u64() as usize - 1;
        values.record(&mut Fields(&mut spans[index].1));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        let target = event.metadata().target().to_owned();
        self.events.lock().unwrap().push((target, fields));
    }
    fn enter(&self, span: &Id) {
        self.entered.lock().unwrap().push(span.clone());
    }
    fn exit(&self, span: &Id) {
        let mut entered = self.entered.lock().unwrap();
        if let Some(at) = entered.iter().rposition(|id| id == span) {
            entered.remove(at);
        }
    }
    fn current_span(&self) -> tracing_core::span::Current {
        match self.entered.lock().unwrap().last() {
            Some(id) => {
                let metadata = self.metadata.lock().unwrap()[id.into_u64() as usize - 1];
                tracing_core::span::Current::new(id.clone(), metadata)
            }
            None => tracing_core::span::Current::none(),
        }
    }
}

#[test]
fn handle_and_resolve_spans_carry_ids_and_tool_names_only() {
    let recorder = Recorder::default();
    let controller = ToolController::new(
        registry([
            calculator(),
            counted("apply_patch", patch_schema(), &Arc::default()),
        ]),
        policy(&["calculator"], &["apply_patch"]),
    );
    tracing::subscriber::with_default(recorder.clone(), || {
        let _ = controller.handle(ToolCall::new(
            "call_1",
            "calculator",
            json!({"a": 40, "b": 2}),
        ));
        let Outcome::PendingApproval(request) = controller.handle(ToolCall::new(
            "call_2",
            "apply_patch",
            json!({"patch": "sk-SECRET-PATCH"}),
        )) else {
            panic!("asks");
        };
        controller
            .resolve(ApprovalResponse::approve(request.approval_id))
            .unwrap();
        let _ = block_on(controller.handle_async(ToolCall::new(
            "call_3",
            "calculator",
            json!({"a": 1, "b": 1}),
        )));
    });
    let spans = recorder.spans.lock().unwrap().clone();
    let names: Vec<&str> = spans.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "toolgate.handle",
            "toolgate.handle",
            "toolgate.resolve",
            "toolgate.handle"
        ]
    );
    let field = |span: usize, name: &str| {
        spans[span]
            .1
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.clone())
    };
    assert_eq!(field(0, "call_id").as_deref(), Some("call_1"));
    assert_eq!(field(0, "tool").as_deref(), Some("calculator"));
    assert_eq!(
        field(2, "call_id").as_deref(),
        Some("call_2"),
        "resolve records the answered call"
    );
    assert_eq!(field(2, "tool").as_deref(), Some("apply_patch"));
    assert!(field(2, "approval_id").is_some());
    assert_eq!(field(3, "call_id").as_deref(), Some("call_3"));
    // The decision and what came of each call.
    assert_eq!(field(0, "decision").as_deref(), Some("allow"));
    assert_eq!(field(0, "outcome").as_deref(), Some("ok"));
    assert_eq!(field(1, "decision").as_deref(), Some("ask"));
    assert_eq!(field(1, "outcome").as_deref(), Some("held"));
    assert_eq!(field(1, "approval_id"), field(2, "approval_id"));
    assert_eq!(
        field(2, "decision").as_deref(),
        Some("ask"),
        "re-decided after the answer"
    );
    assert_eq!(field(2, "outcome").as_deref(), Some("ok"));
    assert_eq!(field(3, "outcome").as_deref(), Some("ok"));
    let everything = format!("{spans:?}");
    // (Not a digit check: the random approval id is hex and may hold any digits.)
    assert!(!everything.contains("SECRET"), "{everything}");
}

#[test]
fn the_tracing_audit_sink_emits_one_event_per_audit_record() {
    let recorder = Recorder::default();
    let controller = ToolController::new(registry([calculator()]), policy(&["calculator"], &[]))
        .with_audit_sink(TracingAuditSink);
    tracing::subscriber::with_default(recorder.clone(), || {
        let _ = controller.handle(ToolCall::new(
            "c7",
            "calculator",
            json!({"a": 12345, "b": 1}),
        ));
    });
    let events = recorder.events.lock().unwrap().clone();
    let audit: Vec<&RecordedSpan> = events
        .iter()
        .filter(|(target, _)| target == "toolgate::audit")
        .collect();
    let kinds: Vec<String> = audit
        .iter()
        .map(|(_, fields)| {
            fields
                .iter()
                .find(|(name, _)| name == "kind")
                .unwrap()
                .1
                .clone()
        })
        .collect();
    assert_eq!(kinds, ["CallReceived", "Decision", "ExecutionOutcome"]);
    let everything = format!("{audit:?}");
    assert!(
        everything.contains("c7") && everything.contains("sha256:"),
        "{everything}"
    );
    // No field can carry argument values: only these are ever emitted. (A digit search would be
    // flaky: digests and ids are hex.)
    let allowed = [
        "kind",
        "call_id",
        "tool",
        "argument_commitment",
        "approval_id",
        "action",
        "rule_id",
        "policy_digest",
        "layer",
        "is_error",
    ];
    for (_, fields) in &audit {
        for (name, _) in fields {
            assert!(allowed.contains(&name.as_str()), "unexpected field {name}");
        }
    }
}

#[test]
fn a_rule_its_layer_the_principal_and_each_audit_write_are_on_the_call_span() {
    let recorder = Recorder::default();
    let registry = registry([calculator()]);
    let rules = rule_policy(
        r#"{"rules": [{"id": "no-big-sums", "tool": "calculator", "action": "deny",
             "reason": "too big", "when": {"range": {"pointer": "/a", "min": 1000}}},
             {"id": "sums", "tool": "calculator", "action": "allow", "reason": "small sums"}]}"#,
        &registry,
    );
    let controller = ToolController::new(registry, rules).with_audit_sink(TracingAuditSink);
    tracing::subscriber::with_default(recorder.clone(), || {
        let call = ToolCall::new("c9", "calculator", json!({"a": 987654, "b": 1}))
            .with_principal(Principal::new("ana", ["ops"]));
        let _ = controller.handle(call);
    });
    let spans = recorder.spans.lock().unwrap().clone();
    let handle = spans
        .iter()
        .find(|(name, _)| name == "toolgate.handle")
        .expect("a call span");
    let field = |name: &str| {
        handle
            .1
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.clone())
    };
    assert_eq!(field("principal").as_deref(), Some("ana"));
    assert_eq!(field("decision").as_deref(), Some("deny"));
    assert_eq!(field("rule_id").as_deref(), Some("no-big-sums"));
    assert_eq!(field("outcome").as_deref(), Some("error"));
    let audits: Vec<String> = spans
        .iter()
        .filter(|(name, _)| name == "toolgate.audit")
        .map(|(_, fields)| fields[0].1.clone())
        .collect();
    assert_eq!(audits, ["CallReceived", "Decision"]);
    let everything = format!("{spans:?}");
    assert!(!everything.contains("987654"), "{everything}");
}
