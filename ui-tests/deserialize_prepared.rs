//! Bypass: deserialize a `PreparedToolCall` from JSON, skipping resolution and validation.
//! Must fail because `PreparedToolCall` does not implement `Deserialize` (G1).
use toolgate::PreparedToolCall;

fn main() {
    let _forged: PreparedToolCall =
        serde_json::from_str(r#"{"call": {"call_id": "c1"}}"#).expect("forged");
}
