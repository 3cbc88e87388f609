//! Bypass: execute the model's raw `ToolCall`, skipping resolution, validation and policy.
//! Must fail with a type mismatch: `execute` takes only `Authorized<PreparedToolCall>` (G3).
mod support;

fn main() {
    let runtime = support::runtime();
    runtime.execute(support::call());
}
