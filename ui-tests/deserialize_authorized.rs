//! Bypass: deserialize an `Authorized` from JSON, forging a proof from outside.
//! Must fail because `Authorized` does not implement `Deserialize` (G3).
mod support;

use toolgate::{Authorized, PreparedToolCall};

fn main() {
    let runtime = support::runtime();
    let forged: Authorized<PreparedToolCall> =
        serde_json::from_str(r#"{"inner": {"call_id": "c1"}}"#).expect("forged");
    runtime.execute(forged);
}
