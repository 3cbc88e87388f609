//! Audit behaviour found unpinned by the mutation run over `src/audit/` (`./mutation-report
//! audit`): what each recorded event carries, beyond its kind.

use crate::common;
use toolgate::policy::Layers;

use std::sync::Arc;

use common::*;
use serde_json::json;
use toolgate::audit::{AuditKind, MemoryAuditSink};
use toolgate::*;

#[test]
fn a_decision_event_names_the_layer_rule_and_policy_that_decided() {
    let registry = registry([calculator()]);
    let organisation = RulePolicy::from_json(
        r#"{"rules": [{"id": "no-big-sums", "tool": "calculator", "action": "deny",
            "reason": "sums stay small", "when": {"range": {"pointer": "/a", "min": 100}}}]}"#,
        &registry,
    )
    .unwrap();
    let organisation_digest = organisation.digest().to_owned();
    let project = policy(&["calculator"], &[]);
    let layers = Layers::new()
        .layer("organisation", organisation)
        .unwrap()
        .layer("project", project)
        .unwrap();
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = ToolController::try_new(registry, layers)
        .unwrap()
        .with_audit_sink(Arc::clone(&sink));
    let _ = controller.handle(ToolCall::new(
        "big",
        "calculator",
        json!({"a": 500, "b": 1}),
    ));
    let _ = controller.handle(ToolCall::new(
        "small",
        "calculator",
        json!({"a": 1, "b": 1}),
    ));
    let decisions: Vec<_> = sink
        .events()
        .into_iter()
        .filter(|event| event.kind == AuditKind::Decision)
        .collect();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    let denied = &decisions[0];
    assert_eq!(denied.call_id, "big");
    assert_eq!(denied.action, Some(PolicyAction::Deny));
    assert_eq!(denied.layer.as_deref(), Some("organisation"));
    assert_eq!(denied.rule_id.as_deref(), Some("no-big-sums"));
    assert_eq!(
        denied.policy_digest.as_deref(),
        Some(organisation_digest.as_str())
    );
    assert_eq!(denied.reason.as_deref(), Some("sums stay small"));
    let allowed = &decisions[1];
    assert_eq!(allowed.call_id, "small");
    assert_eq!(allowed.action, Some(PolicyAction::Allow));
    assert_eq!(allowed.layer.as_deref(), Some("project"));
}

#[test]
fn an_audit_error_keeps_the_error_that_caused_it() {
    use std::error::Error as _;
    use toolgate::audit::AuditError;
    let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left");
    let error = AuditError::caused_by("cannot append to the audit file", io);
    let source = error.source().expect("the cause is kept");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("the cause is the I/O error");
    assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
    assert!(AuditError::new("disk full").source().is_none());
}

/// A sink that only counts events (`keeps_arguments` false, as the gateway's metrics without an
/// audit log): its events carry no argument commitment and no salt, and a sink that keeps events
/// still gets both.
#[test]
fn a_counting_sink_gets_events_without_argument_commitments() {
    struct Counting(MemoryAuditSink);
    impl toolgate::audit::AuditSink for Counting {
        fn record(
            &self,
            event: &toolgate::audit::AuditEvent,
        ) -> Result<(), toolgate::audit::AuditError> {
            self.0.record(event)
        }
        fn keeps_arguments(&self) -> bool {
            false
        }
    }
    let call = || ToolCall::new("c", "calculator", json!({"a": 1, "b": 2}));
    let counting = Arc::new(Counting(MemoryAuditSink::new()));
    let controller =
        ToolController::try_new(registry([calculator()]), policy(&["calculator"], &[]))
            .unwrap()
            .with_audit_sink(Arc::clone(&counting));
    let _ = controller.handle(call());
    let events = counting.0.events();
    assert_eq!(events.len(), 3, "{events:?}");
    for event in &events {
        assert!(event.argument_commitment.is_empty(), "{event:?}");
        assert!(event.salt().is_none(), "{event:?}");
    }
    let keeping = Arc::new(MemoryAuditSink::new());
    let controller =
        ToolController::try_new(registry([calculator()]), policy(&["calculator"], &[]))
            .unwrap()
            .with_audit_sink(Arc::clone(&keeping));
    let _ = controller.handle(call());
    for event in keeping.events() {
        assert!(
            event.argument_commitment.starts_with("salted-sha256:"),
            "{event:?}"
        );
        assert!(event.salt().is_some(), "{event:?}");
    }
}
