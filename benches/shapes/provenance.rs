//! What `benches/provenance.rs` and the instruction counts (`benches/instructions.rs`) measure of
//! provenance: a 10 KB page recorded, and a payee looked up where the person named it.

use std::hint::black_box;

use serde_json::{Value, json};
use toolgate::{
    Outcome, RulePolicy, ToolCall, ToolController, ToolDefinition, ToolError, ToolRegistry,
    ToolSpec,
};

/// About 10 KB of mail-like text: 40 paragraphs, each with a link, an address and a number.
pub fn page() -> String {
    (0..40)
        .map(|n| {
            format!(
                "Paragraph {n}: our quarterly report is at https://reports.example/{n}/q3?lang=en \
                 and questions go to team{n}@corp.example. The reference for this item is \
                 {:08} and the settlement account stays unchanged for the period. Please read \
                 the attached notes before the meeting, and reply by Friday.\n",
                n * 7919
            )
        })
        .collect()
}

fn registry(page: String) -> ToolRegistry {
    let page = move |_: &Value| -> Result<String, ToolError> { Ok(page.clone()) };
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let numbered = move |arguments: &Value| -> Result<String, ToolError> {
        let n = arguments["n"].as_u64().unwrap_or(0);
        Ok(format!(
            "https://a{n}.example/x mail{n}@b.example {:010}",
            n * 31
        ))
    };
    let object = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let payee = json!({"type": "object", "properties": {"iban": {"type": "string"}, "path": {"type": "string"}}});
    ToolRegistry::new([
        ToolDefinition::new(ToolSpec::new("read_page", "bench", object.clone()), page)
            .expect("compiles"),
        ToolDefinition::new(ToolSpec::new("read_numbered", "bench", object), numbered)
            .expect("compiles"),
        ToolDefinition::new(ToolSpec::new("read_file", "bench", payee.clone()), noop)
            .expect("compiles"),
        ToolDefinition::new(ToolSpec::new("send_money", "bench", payee), noop).expect("compiles"),
    ])
    .expect("distinct")
}

/// A controller allowing every tool, with `extra` (JSON members after `rules`).
pub fn controller(extra: &str) -> ToolController {
    let registry = registry(page());
    let text = format!(
        r#"{{"rules": [{{"id": "all", "tool": "*", "action": "allow", "reason": "b"}}] {extra}}}"#
    );
    let policy = RulePolicy::from_json(&text, &registry).expect("loads");
    ToolController::try_new(registry, policy).expect("fits")
}

/// Runs `tool` and checks it ran.
pub fn allowed(controller: &ToolController, tool: &str, arguments: Value) {
    let outcome = controller.handle(ToolCall::new("c", tool, arguments));
    assert!(
        matches!(outcome, Outcome::Completed(ref result) if !result.is_error),
        "{outcome:?}"
    );
    let _ = black_box(outcome);
}

/// One provenance condition: a payee the person did not name is asked.
pub const PROVENANCE: &str = r#", "flows": [{"id": "payee", "tool": "send_money", "action": "ask",
    "reason": "b", "provenance": {"pointer": "/iban", "not_seen_in": ["person"]}}]"#;

/// One flow rule: no payment in the hour after a secret was read.
pub const FLOW: &str = r#", "flows": [{"id": "no-pay-after-secrets", "tool": "send_money", "action": "deny",
    "reason": "b", "after": {"tool": "read_file", "within": "hour",
    "when": {"path_glob": {"pointer": "/path", "pattern": "/srv/secrets/**"}}}}]"#;

/// The payee the person names.
pub const PAYEE: &str = "GB82WEST12345698765432";

/// A session under [`PROVENANCE`] where the person named [`PAYEE`] and `results` results were
/// recorded.
pub fn session_with(results: u64) -> ToolController {
    let session = controller(PROVENANCE);
    session
        .record_person_request(None, &format!("pay {PAYEE}"))
        .expect("recorded");
    for n in 0..results {
        allowed(&session, "read_numbered", json!({"n": n}));
    }
    session
}
