//! Bypass: change the arguments after validation, so the policy sees unvalidated arguments.
//! Must fail because `PreparedToolCall` gives only shared (read-only) access to its call (G1).
mod support;

fn main() {
    let runtime = support::runtime();
    let prepared = support::prepared(&runtime);
    prepared.call().arguments = serde_json::json!({"path": "/etc/shadow"});
}
