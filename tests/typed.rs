//! Tools defined from Rust types (feature `schemars`).
#![cfg(feature = "schemars")]

mod common;

use common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolgate::*;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Transfer {
    /// Account to debit.
    from: String,
    /// Amount in cents.
    amount: u32,
    memo: Option<String>,
}

/// Only accepts even-length codes, which the generated schema (a plain string) cannot say.
#[derive(Deserialize, JsonSchema)]
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

#[derive(Deserialize, JsonSchema)]
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
