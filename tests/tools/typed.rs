//! Tools defined from Rust types (feature `schemars`): the schema is generated, the arguments are
//! normalized to what the handler receives, and a rule on a field sees every value the handler
//! will get in it. The catalogue below has one case per serde attribute that could make the two
//! differ; each drives a real `ToolController` with a `RulePolicy`.
#![cfg(feature = "schemars")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use toolgate::definition::DefinitionError;

use crate::common::*;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use toolgate::*;

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Transfer {
    /// Account to debit.
    from: String,
    /// Amount in cents.
    amount: u32,
    memo: Option<String>,
}

/// Only accepts even-length codes, which the generated schema (a plain string) cannot say.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(try_from = "String")]
struct EvenCode(String);

impl TryFrom<String> for EvenCode {
    type Error = String;
    fn try_from(code: String) -> Result<Self, String> {
        if code.len().is_multiple_of(2) {
            Ok(Self(code))
        } else {
            Err(format!("odd code {code}"))
        }
    }
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Redeem {
    code: EvenCode,
}

fn transfer() -> ToolDefinition {
    ToolDefinition::typed("transfer", "Move money.", |args: Transfer| {
        Ok(format!(
            "{} cents from {} ({})",
            args.amount,
            args.from,
            args.memo.unwrap_or_default()
        ))
    })
    .unwrap()
}

#[test]
fn the_schema_is_generated_from_the_type() {
    let tool = transfer();
    let schema = &tool.spec().input_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["from", "amount"]));
    assert_eq!(schema["properties"]["amount"]["minimum"], 0);
    assert_eq!(schema["additionalProperties"], false);
}

#[test]
fn typed_arguments_are_validated_then_deserialized() {
    let controller = ToolController::new(registry([transfer()]), policy(&["transfer"], &[]));
    let run = |arguments| match controller.handle(ToolCall::new("c", "transfer", arguments)) {
        Outcome::Completed(result) => result,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        run(json!({"from": "acct-1", "amount": 250})),
        ToolResult::ok("c", "250 cents from acct-1 ()")
    );
    let negative = run(json!({"from": "acct-1", "amount": -5}));
    assert!(
        negative.is_error && negative.content.contains("at \"/amount\" (minimum)"),
        "{}",
        negative.content
    );
    let extra = run(json!({"from": "a", "amount": 1, "to": "evil"}));
    assert!(
        extra.content.contains("additionalProperties"),
        "{}",
        extra.content
    );
}

#[test]
fn a_deserialization_failure_is_an_error_result_without_the_value() {
    let redeem =
        ToolDefinition::typed("redeem", "Redeem a code.", |args: Redeem| Ok(args.code.0)).unwrap();
    let controller = ToolController::new(registry([redeem]), policy(&["redeem"], &[]));
    let result = match controller.handle(ToolCall::new("c", "redeem", json!({"code": "SECRET7"}))) {
        Outcome::Completed(result) => result,
        other => panic!("{other:?}"),
    };
    assert!(result.is_error);
    assert_eq!(result.call_id, "c");
    assert!(
        result.content.contains("not the tool's argument type"),
        "{}",
        result.content
    );
    assert!(!result.content.contains("SECRET7"));
    assert_eq!(
        controller.handle(ToolCall::new("d", "redeem", json!({"code": "AB"}))),
        Outcome::Completed(ToolResult::ok("d", "AB"))
    );
}

// ---- The catalogue: a rule on a field is never evaded ----

/// What became of one call.
#[derive(Debug, PartialEq)]
enum Seen {
    /// The handler ran; what it received, written back as JSON.
    Ran(Value),
    /// A rule denied it.
    Denied,
    /// A rule asked; the arguments the person is shown.
    Asked(Value),
    /// Rejected before any policy: the result's content.
    Invalid(String),
}

/// A controller over one typed tool `t` whose handler records what it receives, under `rules`
/// (JSON rule objects for tool `t`) plus an unconditional allow.
struct Gate {
    controller: ToolController,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Gate {
    fn new<T>(rules: &str) -> Self
    where
        T: DeserializeOwned + Serialize + JsonSchema + 'static,
    {
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let tool = ToolDefinition::typed("t", "A typed tool.", move |args: T| {
            log.lock()
                .unwrap()
                .push(serde_json::to_value(&args).unwrap());
            Ok("ran".to_owned())
        })
        .unwrap();
        let tools = registry([tool]);
        let text = format!(
            r#"{{"rules": [{{"id": "a-allow", "tool": "t", "action": "allow", "reason": "the rest"}}, {rules}]}}"#
        );
        let policy = RulePolicy::from_json(&text, &tools).unwrap_or_else(|error| panic!("{error}"));
        Self {
            controller: ToolController::new(tools, policy),
            received,
        }
    }

    fn call(&self, arguments: Value) -> Seen {
        let before = self.received.lock().unwrap().len();
        let seen = match self.controller.handle(ToolCall::new("c", "t", arguments)) {
            Outcome::Completed(result) if !result.is_error => {
                assert_eq!(result.content, "ran");
                let received = self.received.lock().unwrap();
                assert_eq!(received.len(), before + 1);
                return Seen::Ran(received[before].clone());
            }
            Outcome::Completed(result) if result.content.starts_with("denied: ") => Seen::Denied,
            Outcome::Completed(result) => {
                assert!(
                    result.content.starts_with("invalid arguments for t: "),
                    "{}",
                    result.content
                );
                Seen::Invalid(result.content)
            }
            Outcome::PendingApproval(request) => Seen::Asked(request.call.arguments),
        };
        assert_eq!(
            self.received.lock().unwrap().len(),
            before,
            "the handler ran"
        );
        seen
    }
}

/// A deny rule: `pointer`'s path matches `pattern`.
fn deny_glob(pointer: &str, pattern: &str) -> String {
    format!(
        r#"{{"id": "deny", "tool": "t", "action": "deny", "reason": "no", "when": {{"path_glob": {{"pointer": "{pointer}", "pattern": "{pattern}"}}}}}}"#
    )
}

/// A deny rule: `pointer`'s value is `"w"`.
fn deny_w(pointer: &str) -> String {
    format!(
        r#"{{"id": "deny", "tool": "t", "action": "deny", "reason": "no writes", "when": {{"equals": {{"pointer": "{pointer}", "value": "w"}}}}}}"#
    )
}

/// Rejected as not read by the type, at a masked pointer, quoting nothing sent.
fn assert_not_read(seen: Seen) {
    let Seen::Invalid(content) = seen else {
        panic!("not rejected: {seen:?}")
    };
    assert!(content.contains("(argumentType)"), "{content}");
    assert!(
        !content.contains("shadow") && !content.contains("SECRET"),
        "{content}"
    );
}

mod defaults;
mod names;
mod unions;
mod values;
